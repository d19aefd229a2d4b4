package topology

import (
	"fmt"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/network"
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
	nodePart, parts := f.rackParts()
	p := Partition{Parts: parts, Of: map[engine.Handler]int32{}, From: map[engine.Handler]int32{}}
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

// rackParts returns the part of every node, split by racks, and the
// number of parts.
func (f *Fabric) rackParts() ([]int32, int) { return f.rackGroups(1) }

// rackGroups is rackParts with the racks of every together consecutive
// hosts (a server's GPUs) in one part: the parts are numbered in the
// order of their first rack.
func (f *Fabric) rackGroups(together int) ([]int32, int) {
	nodePart := make([]int32, f.nodes)
	racks := int32(0)
	for i, s := range f.FSwitch {
		if len(s.direct) > 0 {
			nodePart[len(f.Hosts)+i] = racks
			racks++
		}
	}
	// Join the racks of each group of hosts (union-find), then number
	// the joined racks.
	joined := make([]int32, racks)
	for i := range joined {
		joined[i] = int32(i)
	}
	root := func(r int32) int32 {
		for joined[r] != r {
			joined[r] = joined[joined[r]]
			r = joined[r]
		}
		return r
	}
	rackOf := func(h int) int32 { return nodePart[len(f.Hosts)+int(f.groupOf[h])] }
	for h := range f.Hosts {
		if together > 1 && h%together != 0 {
			a, b := root(rackOf(h-h%together)), root(rackOf(h))
			joined[max(a, b)] = min(a, b)
		}
	}
	number := make([]int32, racks)
	parts := int32(0)
	for r := range racks {
		if root(r) == r {
			number[r] = parts
			parts++
		}
	}
	for i, s := range f.FSwitch {
		if len(s.direct) > 0 {
			nodePart[len(f.Hosts)+i] = number[root(nodePart[len(f.Hosts)+i])]
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
	return nodePart, int(parts)
}

// Split makes f run in parts, one per rack as PartitionByRack splits it,
// on a group of engines seeded from seed: every part gets a network like
// f.Net (whose engine then runs nothing of the fabric's), every host,
// switch and port moves onto its part's, and a wire whose far end lies
// in another part passes its packets over as they leave the port. The
// lookahead is the least delay of such a wire.
// PAUSE and RESUME frames cross as events a cable's delay ahead. Cables
// fail and routes converge as changes to the whole fabric between
// windows (engine.Group.AtAll).
//
// together > 1 keeps every together consecutive hosts (a server's GPUs,
// whose links the fabric does not carry) in one part, joining their
// racks.
func (f *Fabric) Split(seed uint64, together int) (*engine.Group, error) {
	if f.Group != nil {
		return nil, fmt.Errorf("topology: the fabric runs in parts already")
	}
	nodePart, parts := f.rackGroups(together)
	lookahead := monotime.Duration(0)
	for _, p := range f.Ports {
		if p.E != nil && nodePart[p.From] != nodePart[p.To] && (lookahead == 0 || p.E.Delay < lookahead) {
			lookahead = p.E.Delay
		}
	}
	if lookahead == 0 { // nothing crosses: any window will do
		lookahead = max(f.OneWay, monotime.Microsecond)
	}
	g := engine.NewGroup(parts, seed, lookahead)
	f.Parts = make([]*network.Network, parts)
	for i := range parts {
		n := network.NewNetwork(g.Part(i))
		n.Overhead = f.Net.Overhead
		f.Parts[i] = n
	}
	for h, host := range f.Hosts {
		host.Move(f.Parts[nodePart[h]])
	}
	for i, s := range f.FSwitch {
		s.net = f.Parts[nodePart[len(f.Hosts)+i]]
		s.Mem.Move(s.net)
	}
	f.portPart = make([]int32, len(f.Ports))
	for i, p := range f.Ports {
		from, to := nodePart[p.From], nodePart[p.To]
		f.portPart[i] = from
		if p.In != nil {
			p.In.UpstreamIn(int(from))
		}
		if p.E == nil {
			p.L.Move(f.Parts[from]) // a host's wire, within its rack
			continue
		}
		p.E.Move(f.Parts[from])
		if from != to {
			p.E.CrossTo(int(to), f.Parts[to])
		}
	}
	f.Group = g
	return g, nil
}

// Gather adds the parts' counters into f.Net after a run in parts.
func (f *Fabric) Gather() { f.Net.Gather(f.Parts) }
