package network

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/engine"
)

// A model run in parts (engine.Group) has a Network per part: a component
// schedules on its part's engine, frees packets to its part's pool and
// counts in its part's counters. Builders make components on one network
// and Move them once the partition is known.

// Move makes q a component of n.
func (q *Queue) Move(n *Network) { q.net = n }

// Move makes l a component of n.
func (l *Link) Move(n *Network) { l.net = n }

// Move makes m a component of n.
func (m *SwitchMemory) Move(n *Network) { m.net = n }

// Move makes e a component of n.
func (e *Egress) Move(n *Network) { e.net = n }

// UpstreamIn says that the port feeding in runs in part part, where its
// PAUSE and RESUME frames land.
func (in *Ingress) UpstreamIn(part int) { in.upPart = part }

// Gather adds the counters of parts into n, after a run in parts.
func (n *Network) Gather(parts []*Network) {
	for _, p := range parts {
		n.Hops += p.Hops
		n.ControlWait.Merge(&p.ControlWait)
	}
}

// Arrival is the far end of an Egress's wire when another part owns it:
// the egress passes each packet over as it leaves the port (the earliest
// moment its arrival is certain: a control packet may still go ahead of
// one waiting), and the packet reaches Next in the far part a wire's
// delay later. A wire's packets arrive in the order they left.
//
// A packet on the wire when it goes down is lost at arrival, as on a wire
// within a part: Up changes only while no part runs (engine.Group.AtAll).
type Arrival struct {
	net    *Network
	part   int
	from   *Egress
	Next   Node
	flight fifo
	// Lost counts packets the wire lost by going down under them.
	Lost uint64
}

// CrossTo makes the far end of e's wire part part of a model in parts,
// on network n there, and returns it.
func (e *Egress) CrossTo(part int, n *Network) *Arrival {
	e.cross = &Arrival{net: n, part: part, from: e, Next: e.Next}
	return e.cross
}

// Crossing returns the far end of e's wire where another part owns it,
// nil otherwise.
func (e *Egress) Crossing() *Arrival { return e.cross }

// Accept implements engine.Receiver: packet v arrives at t.
func (a *Arrival) Accept(e *engine.Engine, t monotime.Time, v any) {
	p := v.(*Packet)
	p.at = t
	a.flight.push(p)
	if a.flight.n == 1 {
		e.At(t, a, 0)
	}
}

// OnEvent delivers the packet at the head of the wire.
func (a *Arrival) OnEvent(e *engine.Engine, _ uint64) {
	p := a.flight.pop()
	if h := a.flight.head; h != nil {
		e.At(h.at, a, 0)
	}
	if !a.from.Up {
		a.Lost++
		a.net.Free(p)
		return
	}
	a.net.Hops++
	a.Next.Receive(p)
}
