package udp

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// StdBind is the portable Bind: one net.UDPConn per path, one datagram per
// system call. Each path has a reader goroutine that reads into buffers of
// its own (two of 64 KiB) and queues them for Receive, which copies them
// into the caller's buffers. A Send with a Payload copies header and payload
// into one buffer, since net.UDPConn has no gather write. It has no ECN:
// datagrams leave Not-ECT and CE is always false.
type StdBind struct {
	cfg   Config
	mu    sync.Mutex // Open, Close
	state atomic.Int32
	conns []*net.UDPConn
	v4    bool
	rx    chan *stdPacket
	done  chan struct{}
	wg    sync.WaitGroup

	rxMu     sync.Mutex
	deadline receiveDeadline

	txMu    sync.Mutex
	scratch []byte

	stats counters
}

var _ Bind = (*StdBind)(nil)

type stdPacket struct {
	buf  []byte
	n    int
	addr netip.AddrPort
	path int
	err  error
	free chan *stdPacket // the reader's free list
}

// stdBuffers is the number of receive buffers of each path's reader.
const stdBuffers = 2

// NewStdBind returns an unopened StdBind.
func NewStdBind(cfg Config) *StdBind {
	return &StdBind{cfg: cfg, deadline: newReceiveDeadline()}
}

// Open implements Bind.
func (b *StdBind) Open(local netip.AddrPort, paths int) ([]uint16, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state.Load() != stateNew {
		return nil, ErrOpen
	}
	if err := checkPaths(paths); err != nil {
		return nil, err
	}
	ports := make([]uint16, paths)
	for i := range ports {
		port := uint16(0)
		if i == 0 {
			port = local.Port()
		}
		network, la := listenAddr(local, port)
		c, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(la))
		if err != nil {
			for _, c := range b.conns {
				c.Close()
			}
			b.conns = nil
			return nil, err
		}
		_ = c.SetReadBuffer(b.cfg.socketBuffer())
		_ = c.SetWriteBuffer(b.cfg.socketBuffer())
		b.conns = append(b.conns, c)
		lap := c.LocalAddr().(*net.UDPAddr).AddrPort()
		ports[i] = lap.Port()
		b.v4 = network == "udp4"
	}
	b.rx = make(chan *stdPacket, paths*stdBuffers)
	b.done = make(chan struct{})
	b.scratch = make([]byte, MaxDatagram)
	for i, c := range b.conns {
		free := make(chan *stdPacket, stdBuffers)
		for range stdBuffers {
			free <- &stdPacket{buf: make([]byte, 1<<16), path: i, free: free}
		}
		b.wg.Add(1)
		go b.read(c, free)
	}
	b.state.Store(stateOpen)
	return ports, nil
}

// read is the reader goroutine of one path.
func (b *StdBind) read(c *net.UDPConn, free chan *stdPacket) {
	defer b.wg.Done()
	for {
		var p *stdPacket
		select {
		case p = <-free:
		case <-b.done:
			return
		}
		p.n, p.addr, p.err = c.ReadFromUDPAddrPort(p.buf)
		if p.err != nil && b.state.Load() == stateClosed {
			return
		}
		p.addr = netip.AddrPortFrom(p.addr.Addr().Unmap(), p.addr.Port())
		select {
		case b.rx <- p:
		case <-b.done:
			return
		}
	}
}

// Close implements Bind.
func (b *StdBind) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state.Swap(stateClosed) != stateOpen {
		return nil
	}
	close(b.done)
	var err error
	for _, c := range b.conns {
		if e := c.Close(); e != nil && err == nil {
			err = e
		}
	}
	b.wg.Wait()
	return err
}

func (b *StdBind) check() error {
	switch b.state.Load() {
	case stateNew:
		return ErrNotOpen
	case stateClosed:
		return net.ErrClosed
	}
	return nil
}

// SetReceiveDeadline implements Bind.
func (b *StdBind) SetReceiveDeadline(t time.Time) error {
	b.deadline.set(t)
	return nil
}

// Receive implements Bind.
func (b *StdBind) Receive(msgs []Message) (int, error) {
	if err := b.check(); err != nil {
		return 0, err
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	b.rxMu.Lock()
	defer b.rxMu.Unlock()
	for {
		timeout, err := b.deadline.arm()
		if err != nil {
			return 0, err
		}
		var p *stdPacket
		select {
		case p = <-b.rx:
		case <-b.done:
		case <-timeout: // the deadline check above fails
		case <-b.deadline.kick: // a new deadline
		}
		b.deadline.disarm()
		if p == nil {
			if b.state.Load() == stateClosed {
				return 0, net.ErrClosed
			}
			continue
		}
		n, err := b.deliver(msgs, 0, p)
	more:
		for n < len(msgs) && err == nil {
			select {
			case p = <-b.rx:
				n, err = b.deliver(msgs, n, p)
			default:
				break more
			}
		}
		if n > 0 {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// deliver copies p into msgs[n], gives p back to its reader and returns the
// next free index of msgs.
func (b *StdBind) deliver(msgs []Message, n int, p *stdPacket) (int, error) {
	b.stats.recvCalls.Add(1)
	err := p.err
	size := p.n
	switch m := &msgs[n]; {
	case err != nil:
		if b.state.Load() == stateClosed || errors.Is(err, net.ErrClosed) {
			err = net.ErrClosed
		}
	case size > len(m.Buf):
		b.stats.truncated.Add(1)
	default:
		m.N = copy(m.Buf, p.buf[:size])
		m.Addr = p.addr
		m.Path = p.path
		m.CE, m.Stamp = false, 0
		b.stats.received.Add(1)
		b.stats.receivedBytes.Add(uint64(size))
		n++
	}
	p.free <- p
	return n, err
}

// Send implements Bind.
func (b *StdBind) Send(msgs []Message) error {
	if err := b.check(); err != nil {
		return err
	}
	b.txMu.Lock()
	defer b.txMu.Unlock()
	var first error
	for i := range msgs {
		m := &msgs[i]
		size, err := checkMessage(m, len(b.conns), b.v4)
		if err == nil {
			d := m.Buf[:m.N]
			if len(m.Payload) > 0 {
				d = b.scratch[:size]
				copy(d[copy(d, m.Buf[:m.N]):], m.Payload)
			}
			addr := m.Addr
			if b.v4 {
				addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
			}
			b.stats.sendCalls.Add(1)
			if _, err = b.conns[m.Path].WriteToUDPAddrPort(d, addr); err == nil {
				b.stats.sent.Add(1)
				b.stats.sentBytes.Add(uint64(size))
				continue
			}
			if b.state.Load() == stateClosed {
				return net.ErrClosed
			}
		}
		b.stats.refused(err)
		if first == nil {
			first = err
		}
	}
	return first
}

// BatchSize implements Bind.
func (b *StdBind) BatchSize() int { return DefaultBatchSize }

// Stats implements Bind.
func (b *StdBind) Stats() Stats { return b.stats.snapshot() }
