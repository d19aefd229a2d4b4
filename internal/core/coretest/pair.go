// Package coretest runs two core endpoints against each other in fake time,
// joined by an impaired link: the test harness of the protocol core and a
// tiny simulator in its own right. It steps to the earlier of the next
// timer and the next arrival, so a 25 ms round trip costs no wall time.
package coretest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// Side is one end of a Pair.
type Side struct {
	EP   *core.Endpoint
	Conn *core.Conn
	Addr netip.AddrPort
	out  *link // the link this side transmits on
	// OnEvent, when set, sees every event of this side's endpoint.
	OnEvent func(core.Event)
	// ReadLate is how long this side's host takes to read a datagram
	// after it arrived (a busy real host's wait for its process): it
	// hands each in that much later, saying when it arrived
	// (Received.Arrived), as a host with kernel receive stamps does.
	ReadLate monotime.Duration
	// Unstamped hands datagrams in without their arrival time
	// (no Received.Arrived), as a host without kernel receive stamps.
	Unstamped bool
	buf       []byte
	// active is false once PollTransmit had nothing; any input re-arms it.
	active bool
}

// Pair is two endpoints with one connection between them.
type Pair struct {
	Now  monotime.Time
	A, B *Side
	// DeliverErrors counts datagrams an endpoint rejected.
	DeliverErrors int
}

// Config sets up a Pair. Link applies to both directions unless Reverse
// is set.
type Config struct {
	Seed    uint64
	Link    LinkConfig
	Reverse *LinkConfig
	A, B    core.Config
	// Handshake makes A dial B, which listens, instead of setting both
	// connections up by hand; B.Conn appears when B accepts.
	Handshake bool
	// RandomIDs makes both endpoints draw the ids of the connections they
	// create (Handshake) at random, as a real endpoint does, from seeds
	// derived from Seed.
	RandomIDs bool
}

// NewPair returns two endpoints joined by a link, with connection 1 on A
// talking to connection 2 on B.
func NewPair(cfg Config) (*Pair, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5d12e7))
	rev := cfg.Link
	if cfg.Reverse != nil {
		rev = *cfg.Reverse
	}
	p := &Pair{
		A: &Side{EP: core.NewEndpoint(), Addr: netip.MustParseAddrPort("127.0.0.1:1"),
			out: &link{cfg: cfg.Link, rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))}},
		B: &Side{EP: core.NewEndpoint(), Addr: netip.MustParseAddrPort("127.0.0.1:2"),
			out: &link{cfg: rev, rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))}},
	}
	if cfg.RandomIDs {
		for _, s := range []*Side{p.A, p.B} {
			var seed [32]byte
			for i := 0; i < len(seed); i += 8 {
				binary.LittleEndian.PutUint64(seed[i:], rng.Uint64())
			}
			s.EP.RandomIDs(seed)
		}
	}
	var err error
	if cfg.Handshake {
		if err := p.B.EP.Listen(cfg.B); err != nil {
			return nil, fmt.Errorf("side B: %w", err)
		}
		if p.A.Conn, err = p.A.EP.Dial(0, p.B.Addr, cfg.A); err != nil {
			return nil, fmt.Errorf("side A: %w", err)
		}
	} else {
		if p.A.Conn, err = p.A.EP.NewConn(1, 2, p.B.Addr, cfg.A); err != nil {
			return nil, fmt.Errorf("side A: %w", err)
		}
		if p.B.Conn, err = p.B.EP.NewConn(2, 1, p.A.Addr, cfg.B); err != nil {
			return nil, fmt.Errorf("side B: %w", err)
		}
	}
	for _, s := range []*Side{p.A, p.B} {
		s.buf = make([]byte, core.MaxMTU+wire.MaxHeaderLen)
		s.active = true
	}
	return p, nil
}

// SetRate changes the A-to-B link's rate from now on: a path whose
// bottleneck moves.
func (p *Pair) SetRate(bitsPerSecond float64) { p.A.out.cfg.Rate = bitsPerSecond }

// LinkStats returns the counters of the A-to-B and B-to-A links.
func (p *Pair) LinkStats() (ab, ba LinkStats) { return p.A.out.stats, p.B.out.stats }

// Wake tells the pair that the application gave a side new work.
func (p *Pair) Wake() { p.A.active, p.B.active = true, true }

// step does everything due at p.Now and returns the time of the next
// thing to do, or Never when both sides are idle.
func (p *Pair) step() monotime.Time {
	for _, s := range []*Side{p.A, p.B} {
		peer := p.peer(s)
		for l := s.out; l.next() != monotime.Never && l.next().Add(peer.ReadLate) <= p.Now; {
			pk := l.pop()
			at := pk.at
			if peer.Unstamped {
				at = 0
			}
			if err := peer.EP.HandleDatagram(p.Now, core.Received{Buf: pk.buf, From: s.Addr, Arrived: at}); err != nil {
				p.DeliverErrors++
			}
			l.recycle(pk.buf)
			peer.active = true
		}
		if t, ok := s.EP.NextTimeout(); ok && t <= p.Now {
			s.EP.HandleTimeout(p.Now)
			s.active = true
		}
	}
	for _, s := range []*Side{p.A, p.B} {
		for s.active && (s.out.cfg.Queue > 0 || s.out.free <= p.Now) {
			var t core.Transmit
			ok := s.EP.PollTransmit(p.Now, s.buf, &t)
			if !ok {
				s.active = false
				break
			}
			s.out.send(p.Now, t.Path, s.buf[:t.Len], t.Payload)
		}
		for {
			ev, ok := s.EP.PollEvent()
			if !ok {
				break
			}
			if ev.Kind == core.EventAccepted && s.Conn == nil {
				s.Conn = ev.Conn
			}
			if s.OnEvent != nil {
				s.OnEvent(ev)
			}
			s.active = true
		}
	}
	next := monotime.Never
	for _, s := range []*Side{p.A, p.B} {
		if t := s.out.next(); t != monotime.Never {
			next = min(next, t.Add(p.peer(s).ReadLate))
		}
		if t, ok := s.EP.NextTimeout(); ok {
			next = min(next, max(t, p.Now))
		}
		if s.active {
			next = min(next, max(s.out.free, p.Now))
		}
	}
	return next
}

// peer is the other side of s.
func (p *Pair) peer(s *Side) *Side {
	if s == p.A {
		return p.B
	}
	return p.A
}

// ErrIdle says both sides went idle before the goal was reached: nothing
// in flight, no timer armed, nothing to send. A protocol that stops like
// this has deadlocked.
var ErrIdle = errors.New("coretest: both sides idle before the goal")

// ErrLivelock says the goal was not reached within the step or time bound.
var ErrLivelock = errors.New("coretest: goal not reached within the bound (livelock?)")

// Limits bound a Drive.
type Limits struct {
	Steps int               // zero: 50 million
	Time  monotime.Duration // zero: 1000 simulated seconds
}

// Drive runs the pair until done returns true. It fails with ErrIdle if
// the pair stops with done still false, and ErrLivelock if the bounds run
// out first.
func (p *Pair) Drive(done func() bool, lim Limits) error {
	return drive(&p.Now, func() (monotime.Time, error) { return p.step(), nil }, done, lim)
}

// drive steps a harness whose clock is *now until done returns true.
func drive(now *monotime.Time, step func() (monotime.Time, error), done func() bool, lim Limits) error {
	if lim.Steps == 0 {
		lim.Steps = 50_000_000
	}
	if lim.Time == 0 {
		lim.Time = 1000 * monotime.Second
	}
	end := now.Add(lim.Time)
	for range lim.Steps {
		next, err := step()
		if err != nil {
			return err
		}
		if done() {
			return nil
		}
		if next == monotime.Never {
			return fmt.Errorf("%w at t=%v", ErrIdle, monotime.Duration(*now))
		}
		if next > end {
			return fmt.Errorf("%w: t=%v", ErrLivelock, monotime.Duration(*now))
		}
		*now = max(*now, next)
	}
	return fmt.Errorf("%w: %d steps, t=%v", ErrLivelock, lim.Steps, monotime.Duration(*now))
}
