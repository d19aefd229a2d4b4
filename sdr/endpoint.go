package sdr

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"
	"sync"
	"time"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/datapath/udp"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// endpoint drives one core.Endpoint over one udp.Bind. A single goroutine,
// the loop, owns the core: it handles received batches, runs timers,
// transmits what the core has ready, and executes the API's requests,
// which other goroutines hand it as closures. A second goroutine only
// reads batches from the Bind, and a third (fineWaker, Linux) only times
// the pacers' waits.
type endpoint struct {
	bind  udp.Bind
	core  *core.Endpoint
	codec *reliability.Workers // codes parity ahead; nil: the loop codes it
	start time.Time
	cfg   Config
	local netip.AddrPort

	reqs    chan func()
	rx      chan *rxBatch
	free    chan *rxBatch
	quit    chan struct{} // closed to stop the loop
	stopped chan struct{} // closed when the loop has returned
	once    sync.Once
	err     error // why the loop stopped, read after stopped

	owned         bool // a dialed connection's own endpoint, stopped with it
	conns         map[*core.Conn]*Conn
	accepted      chan *Conn // for a listener; nil when dialing
	onEstablished map[*core.Conn]chan error

	tx     []udp.Message
	txBufs [][]byte
	pace   pacer
	waker  *fineWaker      // times the pacers' waits
	routes *udp.RouteProbe // a listener's: the core asks it each peer's route MTU; the loop's, closed with it
}

// rxBatch is a batch of received datagrams; batches circulate between the
// reader and the loop, so receiving allocates nothing in steady state.
type rxBatch struct {
	msgs []udp.Message
	n    int
	err  error
	read time.Time // when Receive returned: the arrival of datagrams the kernel did not stamp
}

const rxBatches = 4

func newEndpoint(bind udp.Bind, local netip.AddrPort, cfg Config) (*endpoint, error) {
	ports, err := bind.Open(local, max(cfg.Paths, 1))
	if err != nil {
		return nil, err
	}
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		return nil, err
	}
	ce := core.NewEndpoint()
	ce.RandomIDs(seed) // ids an attacker off the path cannot guess
	var codec *reliability.Workers
	if cfg.CodecWorkers > 0 {
		codec = reliability.NewWorkers(cfg.CodecWorkers)
		ce.SetCodecWorkers(codec)
	}
	e := &endpoint{bind: bind, core: ce, codec: codec, start: time.Now(), cfg: cfg,
		local:         netip.AddrPortFrom(local.Addr(), ports[0]),
		reqs:          make(chan func()),
		rx:            make(chan *rxBatch, rxBatches),
		free:          make(chan *rxBatch, rxBatches),
		quit:          make(chan struct{}),
		stopped:       make(chan struct{}),
		conns:         make(map[*core.Conn]*Conn),
		onEstablished: make(map[*core.Conn]chan error),
	}
	batch := bind.BatchSize()
	for range rxBatches {
		b := &rxBatch{msgs: make([]udp.Message, batch)}
		for i := range b.msgs {
			b.msgs[i].Buf = make([]byte, core.MaxMTU+wire.MaxHeaderLen+core.TrailerLen)
		}
		e.free <- b
	}
	e.tx = make([]udp.Message, batch)
	e.txBufs = make([][]byte, batch)
	// The negotiated MTU is never above our own.
	mtu := cfg.MTU
	if mtu == 0 {
		mtu = MaxAutoMTU
	}
	for i := range e.txBufs {
		e.txBufs[i] = make([]byte, mtu+wire.MaxHeaderLen+core.TrailerLen)
	}
	e.pace.rate = cfg.Rate
	e.waker = newFineWaker(e.quit)
	go e.read()
	go e.loop()
	return e, nil
}

// now is the endpoint's clock: picoseconds since it started.
func (e *endpoint) now() monotime.Time { return e.at(time.Now()) }

// at is t on the endpoint's clock (t from time.Now: monotonic).
func (e *endpoint) at(t time.Time) monotime.Time {
	return monotime.Time(monotime.FromStd(t.Sub(e.start)))
}

// maxStampAge bounds how long ago a kernel receive stamp may say a
// datagram arrived: an older one (the wall clock stepped) is not trusted.
const maxStampAge = time.Second

// arrival is when a datagram handled at now (wall: the same instant on
// the wall clock) reached the host: by the kernel's stamp (Unix
// nanoseconds, CLOCK_REALTIME) where there is one and it is sane, else
// when the reader's Receive returned (read). The stamp is turned into the
// endpoint's monotonic clock by its age, so a wall clock that is merely
// wrong cancels out.
func (e *endpoint) arrival(wall time.Time, now monotime.Time, read time.Time, stamp int64) monotime.Time {
	if stamp > 0 {
		age := time.Duration(wall.UnixNano() - stamp)
		if at := now - monotime.Time(monotime.FromStd(age)); age >= 0 && age < maxStampAge && at > 0 {
			return at
		}
	}
	return e.at(read)
}

func (e *endpoint) read() {
	for {
		var b *rxBatch
		select {
		case b = <-e.free:
		case <-e.quit:
			return
		}
		b.n, b.err = e.bind.Receive(b.msgs)
		b.read = time.Now()
		select {
		case e.rx <- b:
		case <-e.quit:
			return
		}
		if b.err != nil {
			return
		}
	}
}

// errStopped says the endpoint is gone.
var errStopped = errors.New("sdr: endpoint closed")

// call runs f on the loop and waits for it.
func (e *endpoint) call(f func()) error {
	done := make(chan struct{})
	select {
	case e.reqs <- func() { f(); close(done) }:
	case <-e.stopped:
		return e.stopErr()
	}
	select {
	case <-done:
		return nil
	case <-e.stopped:
		return e.stopErr()
	}
}

func (e *endpoint) stopErr() error {
	if e.err != nil {
		return e.err
	}
	return errStopped
}

// stop ends the loop and closes the Bind.
func (e *endpoint) stop(err error) {
	e.once.Do(func() {
		e.err = err
		close(e.quit)
	})
	<-e.stopped
}

func (e *endpoint) loop() {
	defer close(e.stopped)
	defer e.codec.Close()
	defer e.bind.Close()
	defer func() {
		if e.routes != nil {
			e.routes.Close()
		}
	}()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		// Read what has arrived before acting on timers: after a stall (a
		// GC pause, the process descheduled) the acks that piled up must
		// be heard before silence fails paths or timeouts resend.
	drain:
		for range cap(e.free) {
			select {
			case b := <-e.rx:
				if !e.receive(b) {
					return
				}
			default:
				break drain
			}
		}
		now := e.now()
		if t, ok := e.core.NextTimeout(); ok && t <= now {
			e.core.HandleTimeout(now)
		}
		wake := e.flush(now)
		paced := wake // the endpoint's pacer (--rate), or Never
		e.dispatch()
		if t, ok := e.core.PacedWake(); ok {
			paced = min(paced, t)
		}
		if t, ok := e.core.NextTimeout(); ok {
			wake = min(wake, t)
		}
		var tc <-chan time.Time
		if wake != monotime.Never {
			d := max(wake.Sub(e.now()), 0).Std()
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			timer.Reset(d)
			tc = timer.C
			if paced <= wake { // a pacer's wait: time it finely
				e.waker.wake(d)
			}
		}
		select {
		case b := <-e.rx:
			if !e.receive(b) {
				return
			}
		case f := <-e.reqs:
			f()
		case <-tc:
		case <-e.waker.ticks():
		case <-e.quit:
			e.goAway()
			e.closeAll()
			return
		}
	}
}

// receive hands a batch of datagrams to the core; false means the Bind
// failed and the loop must end.
func (e *endpoint) receive(b *rxBatch) bool {
	if b.err != nil {
		e.fail(fmt.Errorf("sdr: receive: %w", b.err))
		return false
	}
	wall := time.Now()
	now := e.at(wall)
	refused := false
	for i := range b.n {
		m := &b.msgs[i]
		if m.Refused {
			refused = true
			continue
		}
		_ = e.core.HandleDatagram(now, core.Received{Buf: m.Buf[:m.N], From: m.Addr, Path: core.Path(m.Path),
			Arrived: e.arrival(wall, now, b.read, m.Stamp), CE: m.CE})
	}
	// ICMP unreachables for datagrams we sent, after the datagrams: the
	// kernel reports them ahead of what the peer sent before it left, and
	// that (a CLOSE with its reason, a NACK) is what the application
	// should hear.
	for i := 0; refused && i < b.n; i++ {
		if m := &b.msgs[i]; m.Refused {
			e.core.Refused(now, m.Addr)
		}
	}
	e.free <- b
	return true
}

// fail stops the endpoint from inside the loop.
func (e *endpoint) fail(err error) {
	e.once.Do(func() {
		e.err = err
		close(e.quit)
	})
	e.closeAll()
}

// goAway closes the connections still open and sends the CLOSEs queued,
// past the pacer: a peer told now need not wait for its idle timeout.
func (e *endpoint) goAway() {
	for cc := range e.conns {
		_ = cc.Close(0, "endpoint closed")
	}
	e.pace.rate = 0
	e.flush(e.now())
}

// closeAll tells every connection and waiter the endpoint is gone.
func (e *endpoint) closeAll() {
	for _, c := range e.conns {
		c.closed(e.stopErr())
	}
	for cc, ch := range e.onEstablished {
		ch <- e.stopErr()
		delete(e.onEstablished, cc)
	}
	if e.accepted != nil {
		close(e.accepted)
		e.accepted = nil
	}
}

// flush sends everything the core has ready, in batches, as far as the
// pacer allows, and returns when the pacer next allows more.
func (e *endpoint) flush(now monotime.Time) monotime.Time {
	for {
		n := 0
		for n < len(e.tx) {
			if !e.pace.ready(now) {
				break
			}
			var t core.Transmit
			ok := e.core.PollTransmit(now, e.txBufs[n], &t)
			if !ok {
				break
			}
			e.tx[n] = udp.Message{Buf: e.txBufs[n], N: t.Len, Payload: t.Payload,
				Addr: t.Addr, Path: int(t.Path)}
			if t.Data {
				e.pace.sent(now, t.Len+len(t.Payload))
			}
			n++
		}
		if n > 0 {
			// A send error (a refused datagram) is the network losing it:
			// the protocol repairs that.
			_ = e.bind.Send(e.tx[:n])
			clear(e.tx[:n])
		}
		if n < len(e.tx) {
			if !e.pace.ready(now) {
				return e.pace.wake()
			}
			return monotime.Never
		}
		now = e.now()
	}
}

// dispatch hands core events to the connections and waiters.
func (e *endpoint) dispatch() {
	for {
		ev, ok := e.core.PollEvent()
		if !ok {
			return
		}
		switch ev.Kind {
		case core.EventAccepted:
			c := e.wrap(ev.Conn)
			if e.accepted != nil {
				select {
				case e.accepted <- c:
				default: // nobody accepts fast enough: refuse
					_ = ev.Conn.Close(1, "accept queue full")
				}
			}
		case core.EventEstablished:
			if ch, ok := e.onEstablished[ev.Conn]; ok {
				e.wrap(ev.Conn)
				ch <- nil
				delete(e.onEstablished, ev.Conn)
			}
		case core.EventClosed:
			if ch, ok := e.onEstablished[ev.Conn]; ok {
				ch <- ev.Err
				delete(e.onEstablished, ev.Conn)
			}
			if c := e.conns[ev.Conn]; c != nil {
				c.closed(ev.Err)
			}
		default:
			if c := e.conns[ev.Conn]; c != nil {
				c.event(ev)
			}
		}
	}
}

func (e *endpoint) wrap(cc *core.Conn) *Conn {
	c := newConn(e, cc)
	e.conns[cc] = c
	return c
}

// pacer spaces data packets to a configured rate (zero: no pacing),
// allowing a burst of a few packets.
type pacer struct {
	rate float64 // bits per second
	next monotime.Time
}

const paceBurst = 64 << 10

func (p *pacer) ready(now monotime.Time) bool {
	return p.rate <= 0 || p.next <= now.Add(monotime.TransmitTime(paceBurst, p.rate))
}

// wake is when ready becomes true.
func (p *pacer) wake() monotime.Time {
	return p.next.Add(-monotime.TransmitTime(paceBurst, p.rate))
}

func (p *pacer) sent(now monotime.Time, bytes int) {
	if p.rate <= 0 {
		return
	}
	// Credit left unused while the loop slept (Go's timers wake late by
	// up to a millisecond) is kept up to one burst, so the average rate
	// holds.
	floor := now.Add(-monotime.TransmitTime(paceBurst, p.rate))
	p.next = max(p.next, floor).Add(monotime.TransmitTime(bytes+udpOverhead, p.rate))
}

// udpOverhead is what IP and UDP add to every datagram on the wire.
const udpOverhead = 28
