package topology

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/engine"
)

// Partition is a fabric split as a parallel engine would split it: each
// rack (a switch with hosts and those hosts) is a part, and the switches
// above the racks are dealt out among the parts in turn. Every event a
// port or a host schedules belongs to the part whose state it works on:
// a packet's arrival to the node it reaches, a NIC's serialization and a
// host's timers to the host.
type Partition struct {
	Parts int
	// Of is the part of every handler the fabric owns; a handler not in
	// it (a workload's, a sampler's) belongs to none.
	Of map[engine.Handler]int32
	// From is, for the handlers whose events carry a packet from one part
	// into another, the part it comes from: what parts would exchange as
	// messages.
	From map[engine.Handler]int32
	// Lookahead is the least delay of a cable between parts: how far
	// ahead of the others a part may run under conservative
	// synchronisation. Zero when nothing crosses.
	Lookahead monotime.Duration
}

// PartitionByRack splits f by racks (see Partition).
func (f *Fabric) PartitionByRack() Partition {
	nodePart := make([]int32, f.nodes)
	parts := int32(0)
	for i, s := range f.FSwitch {
		if len(s.direct) > 0 {
			nodePart[len(f.Hosts)+i] = parts
			parts++
		}
	}
	if parts == 0 {
		parts = 1
	}
	next := int32(0)
	for i, s := range f.FSwitch {
		if len(s.direct) == 0 {
			nodePart[len(f.Hosts)+i] = next % parts
			next++
		}
	}
	for h := range f.Hosts {
		nodePart[h] = nodePart[len(f.Hosts)+int(f.groupOf[h])]
	}
	p := Partition{Parts: int(parts), Of: map[engine.Handler]int32{}, From: map[engine.Handler]int32{}}
	for h, host := range f.Hosts {
		p.Of[host] = nodePart[h]
	}
	for _, port := range f.Ports {
		from, to := nodePart[port.From], nodePart[port.To]
		var arrival engine.Handler
		var delay monotime.Duration
		if port.E != nil {
			arrival, delay = port.E, port.E.Delay
		} else {
			p.Of[port.Q] = from
			arrival, delay = port.L, port.L.Delay
		}
		p.Of[arrival] = to
		if from != to {
			p.From[arrival] = from
			if p.Lookahead == 0 || delay < p.Lookahead {
				p.Lookahead = delay
			}
		}
	}
	return p
}
