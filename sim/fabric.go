package sim

import (
	"fmt"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// A Fabric is a datacenter network: hosts with one NIC each, switches, and
// a Port for every direction of every cable (a queue that serializes, then
// a link that delays). Switches forward by destination along shortest
// paths; where several next hops are equally short a Balancer picks one.
// Routes are recomputed when links fail or recover.
type Fabric struct {
	Topology
	Ports    []*Port
	FSwitch  []*FabricSwitch
	nodes    int       // hosts first (0..H-1), then switches
	adj      [][]int32 // node -> indices of its outgoing ports
	groupOf  []int32   // host -> index of its edge switch among switches
	Tiers    []string  // name of each tier, by Port.Tier
	Balancer Balancer
	// Unroutable counts packets dropped for want of a route (a partition
	// while routing converges).
	Unroutable uint64
}

// Port is one direction of a cable: a switch's Egress, or a host's NIC
// queue and the wire from it.
type Port struct {
	ID       int32
	From, To int32 // node ids
	Tier     int
	E        *Egress // a switch's port
	Q        *Queue  // a host's NIC
	L        *Link   // the wire from a host's NIC
}

// Up reports whether the port carries traffic.
func (p *Port) Up() bool {
	if p.E != nil {
		return p.E.Up
	}
	return p.L.Up
}

// setUp takes the port's wire down or up.
func (p *Port) setUp(up bool) {
	if p.E != nil {
		p.E.Up = up
	} else {
		p.L.Up = up
	}
}

// Lost returns how many packets the port's wire lost.
func (p *Port) Lost() uint64 {
	if p.E != nil {
		return p.E.Wire.Lost
	}
	return p.L.Stats.Lost
}

// FabricSwitch forwards packets toward their destination host.
type FabricSwitch struct {
	f  *Fabric
	id int32 // node id
	// next[g] lists the ports one hop closer to edge switch group g;
	// direct[h] is the port to host h when it hangs off this switch.
	next   [][]*Port
	direct map[int32]*Port
	flows  flowletTable
	te     map[uint64]*Port // TE: the controller's choice per flow
}

// Receive forwards p.
func (s *FabricSwitch) Receive(p *Packet) {
	if port, ok := s.direct[p.Dst]; ok {
		port.E.Receive(p)
		return
	}
	cands := s.next[s.f.groupOf[p.Dst]]
	switch len(cands) {
	case 0: // no route: the fabric is partitioned for now
		s.f.Net.Free(p)
		s.f.Unroutable++
	case 1:
		cands[0].E.Receive(p)
	default:
		cands[s.f.Balancer.pick(s, p, cands)].E.Receive(p)
	}
}

// FabricConfig sets the rates, delays and buffers of a fabric's tiers.
type FabricConfig struct {
	HostRate  float64           // NIC and host link, bits/s
	HostDelay monotime.Duration // host link delay
	// Per switch tier above the hosts (0: leaf/ToR, 1: spine or
	// aggregation, 2: core): link rate, delay and per-port buffer.
	TierRate  []float64
	TierDelay []monotime.Duration
	TierQueue []int // bytes; zero: unbounded
	ECN       []int // marking threshold per tier, bytes; zero: none
	Balancer  Balancer
}

func (c FabricConfig) tier(i int) (float64, monotime.Duration, int, int) {
	at := func(n int) int { return min(i, n-1) }
	rate, delay, queue, ecn := c.HostRate, c.HostDelay, 0, 0
	if len(c.TierRate) > 0 {
		rate = c.TierRate[at(len(c.TierRate))]
	}
	if len(c.TierDelay) > 0 {
		delay = c.TierDelay[at(len(c.TierDelay))]
	}
	if len(c.TierQueue) > 0 {
		queue = c.TierQueue[at(len(c.TierQueue))]
	}
	if len(c.ECN) > 0 {
		ecn = c.ECN[at(len(c.ECN))]
	}
	return rate, delay, queue, ecn
}

// fabricBuilder assembles hosts, switches and ports.
type fabricBuilder struct {
	f   *Fabric
	cfg FabricConfig
}

func newFabricBuilder(eng *Engine, hosts, switches int, cfg FabricConfig) *fabricBuilder {
	f := &Fabric{nodes: hosts + switches, Balancer: cfg.Balancer}
	f.Net = NewNetwork(eng)
	f.HostDelay = cfg.HostDelay
	f.adj = make([][]int32, hosts+switches)
	f.groupOf = make([]int32, hosts)
	for i := range switches {
		f.FSwitch = append(f.FSwitch, &FabricSwitch{f: f, id: int32(hosts + i), direct: map[int32]*Port{}})
	}
	b := &fabricBuilder{f: f, cfg: cfg}
	for h := range hosts {
		host := f.Net.NewHost(int32(h), cfg.HostRate, nil)
		f.Hosts = append(f.Hosts, host)
	}
	return b
}

func (b *fabricBuilder) node(n int32) Node {
	if int(n) < len(b.f.Hosts) {
		return b.f.Hosts[n]
	}
	return b.f.FSwitch[int(n)-len(b.f.Hosts)]
}

// cable joins nodes a and c with a port each way.
func (b *fabricBuilder) cable(a, c int32, rate float64, delay monotime.Duration, queue, ecn, tier int) {
	for _, dir := range [2][2]int32{{a, c}, {c, a}} {
		from, to := dir[0], dir[1]
		p := &Port{ID: int32(len(b.f.Ports)), From: from, To: to, Tier: tier}
		if int(from) < len(b.f.Hosts) { // a host's port is its NIC
			h := b.f.Hosts[from]
			p.L = NewLink(b.f.Net, delay, nil, b.node(to))
			h.NIC.Next = p.L
			p.Q = h.NIC
		} else {
			p.E = NewEgress(b.f.Net, rate, queue, delay, b.node(to))
			p.E.ECNThreshold = ecn
		}
		b.f.Ports = append(b.f.Ports, p)
		b.f.adj[from] = append(b.f.adj[from], p.ID)
	}
}

// attach hangs host h off switch s (a node id).
func (b *fabricBuilder) attach(h int, s int32) {
	rate, delay, queue, ecn := b.cfg.HostRate, b.cfg.HostDelay, 0, 0
	if len(b.cfg.TierQueue) > 0 {
		queue = b.cfg.TierQueue[0]
	}
	if len(b.cfg.ECN) > 0 {
		ecn = b.cfg.ECN[0]
	}
	b.cable(int32(h), s, rate, delay, queue, ecn, 0)
	sw := b.f.FSwitch[int(s)-len(b.f.Hosts)]
	sw.direct[int32(h)] = b.f.Ports[len(b.f.Ports)-1] // the port toward the host
	b.f.groupOf[h] = s - int32(len(b.f.Hosts))
}

func (b *fabricBuilder) finish(tiers ...string) *Fabric {
	b.f.Tiers = tiers
	b.f.Reroute()
	return b.f
}

// Reroute recomputes every switch's next hops over the ports that are up,
// as routing converges after a failure or a repair.
func (f *Fabric) Reroute() {
	hosts := len(f.Hosts)
	groups := len(f.FSwitch)
	dist := make([]int32, f.nodes)
	queue := make([]int32, 0, f.nodes)
	for _, s := range f.FSwitch {
		if s.next == nil {
			s.next = make([][]*Port, groups)
		}
	}
	// Reverse adjacency over live ports: who can reach node n in one hop.
	into := make([][]*Port, f.nodes)
	for _, p := range f.Ports {
		if p.Up() {
			into[p.To] = append(into[p.To], p)
		}
	}
	for g := range groups {
		target := int32(hosts + g)
		for i := range dist {
			dist[i] = -1
		}
		dist[target] = 0
		queue = append(queue[:0], target)
		for len(queue) > 0 {
			n := queue[0]
			queue = queue[1:]
			for _, p := range into[n] {
				if dist[p.From] < 0 && int(p.From) >= hosts { // never route through a host
					dist[p.From] = dist[n] + 1
					queue = append(queue, p.From)
				}
			}
		}
		for _, s := range f.FSwitch {
			s.next[g] = s.next[g][:0]
			if d := dist[s.id]; d > 0 {
				for _, pid := range f.adj[s.id] {
					if p := f.Ports[pid]; p.Up() && int(p.To) >= hosts && dist[p.To] == d-1 {
						s.next[g] = append(s.next[g], p)
					}
				}
			}
		}
	}
}

// SetCable takes both directions of the cable between nodes a and b down
// or up. Packets on a port that goes down are lost; routes change only
// when Reroute runs (after the detection delay the caller models).
func (f *Fabric) SetCable(a, b int32, up bool) error {
	found := false
	for _, p := range f.Ports {
		if (p.From == a && p.To == b) || (p.From == b && p.To == a) {
			p.setUp(up)
			found = true
		}
	}
	if !found {
		return fmt.Errorf("no cable between nodes %d and %d", a, b)
	}
	return nil
}

// SwitchNode returns the node id of switch i.
func (f *Fabric) SwitchNode(i int) int32 { return int32(len(f.Hosts) + i) }
