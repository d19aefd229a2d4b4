package topology

import (
	"fmt"
	"math"
	"slices"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/hostmodel"
	"github.com/sdrnet/sdrnet/sim/network"
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
	// Parts is, when the fabric runs in parts (Split), the network of
	// each part; portPart the part of each port's sender.
	Parts    []*network.Network
	portPart []int32
}

// Unroutable counts packets dropped for want of a route (a partition
// while routing converges).
func (f *Fabric) Unroutable() uint64 {
	n := uint64(0)
	for _, s := range f.FSwitch {
		n += s.unroutable
	}
	return n
}

// Port is one direction of a cable: a switch's Egress, or a host's NIC
// queue and the wire from it; under PFC, In is the far end's ingress.
type Port struct {
	ID       int32
	From, To int32 // node ids
	Tier     int
	E        *network.Egress  // a switch's port
	Q        *network.Queue   // a host's NIC
	L        *network.Link    // the wire from a host's NIC
	In       *network.Ingress // where the cable enters a switch under PFC
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

// sender returns what serializes onto the port's wire.
func (p *Port) sender() network.Pausable {
	if p.E != nil {
		return p.E
	}
	return p.Q
}

// Pause returns how PFC held the port back, with its paused time up to now.
func (p *Port) Pause(now monotime.Time) network.PauseStats { return p.sender().PauseStats(now) }

// Lost returns how many packets the port's wire lost.
func (p *Port) Lost() uint64 {
	if p.E != nil {
		if a := p.E.Crossing(); a != nil {
			return p.E.Wire.Lost + a.Lost
		}
		return p.E.Wire.Lost
	}
	return p.L.Stats.Lost
}

// FabricSwitch forwards packets toward their destination host.
type FabricSwitch struct {
	f     *Fabric
	net   *network.Network // its part's
	id    int32            // node id
	Level int              // 0: top of rack, 1: spine, aggregation or CTSW, 2: core or ATSW
	Mem   *network.SwitchMemory
	// route[g] names, in routes, the ports one hop closer to edge switch
	// group g. A switch has few distinct such lists (its uplinks serve
	// every group but its own), so each is kept once and the table per
	// group is two bytes: a packet's lookup stays in cache at thousands
	// of switches, where a list per group did not.
	// direct[h-firstHost] is the port to host h when it hangs off this
	// switch (builders number a rack's hosts consecutively: a slice, not
	// a map, on the path of every packet).
	route     []uint16
	routes    [][]*Port
	egress    [][]*network.Egress // routes' ports' egresses: forwarding reads no Port
	firstHost int32
	direct    []*Port
	flows     flowletTable
	te        map[uint64]*Port // TE: the controller's choice per flow
	// unroutable counts packets dropped here for want of a route.
	unroutable uint64
}

// Receive forwards p.
func (s *FabricSwitch) Receive(p *network.Packet) {
	if port := s.directPort(p.Dst); port != nil {
		port.E.Receive(p)
		return
	}
	r := s.route[s.f.groupOf[p.Dst]]
	switch out := s.egress[r]; len(out) {
	case 0: // no route: the fabric is partitioned for now
		s.net.Free(p)
		s.unroutable++
	case 1:
		out[0].Receive(p)
	default:
		out[s.f.Balancer.pick(s, p, s.routes[r])].Receive(p)
	}
}

// next returns the ports one hop closer to edge switch group g.
func (s *FabricSwitch) next(g int32) []*Port { return s.routes[s.route[g]] }

// directPort returns the port to host h if h hangs off this switch.
func (s *FabricSwitch) directPort(h int32) *Port {
	if i := h - s.firstHost; i >= 0 && int(i) < len(s.direct) {
		return s.direct[i]
	}
	return nil
}

// FabricConfig sets the rates, delays and buffers of a fabric's tiers.
type FabricConfig struct {
	HostRate  float64           // NIC and host link, bits/s
	HostDelay monotime.Duration // host link delay
	// Per switch tier above the hosts (0: leaf/ToR, 1: spine or
	// aggregation, 2: core): link rate, delay and per-port buffer.
	TierRate  []float64
	TierDelay []monotime.Duration
	TierQueue []int         // per-port limit, bytes; zero: none
	ECN       []network.ECN // marking per tier
	// SwitchBuffer is the memory the ports of a switch share, per switch
	// level (see FabricSwitch.Level), bytes; zero or absent: none, and
	// BufferAlpha its dynamic threshold (zero: 1).
	SwitchBuffer []int
	BufferAlpha  float64
	PFC          *network.PFC // nil: lossy fabric
	// ControlInLine puts control packets in line with data at switches:
	// no priority queue (see buffer.ControlInLine).
	ControlInLine bool
	Balancer      Balancer
}

// cableSpec is what a cable's ports are made of.
type cableSpec struct {
	rate  float64
	delay monotime.Duration
	queue int
	ecn   network.ECN
}

// tier returns the spec of tier i's cables, the last entry of each list
// standing for the tiers above it; i = -1 is a host's cable (which has
// the first tier's buffers at the switch).
func (c FabricConfig) tier(i int) cableSpec {
	pick := func(n int) int { return max(min(i, n-1), 0) }
	s := cableSpec{rate: c.HostRate, delay: c.HostDelay}
	if len(c.TierRate) > 0 && i >= 0 {
		s.rate = c.TierRate[pick(len(c.TierRate))]
	}
	if len(c.TierDelay) > 0 && i >= 0 {
		s.delay = c.TierDelay[pick(len(c.TierDelay))]
	}
	if len(c.TierQueue) > 0 {
		s.queue = c.TierQueue[pick(len(c.TierQueue))]
	}
	if len(c.ECN) > 0 {
		s.ecn = c.ECN[pick(len(c.ECN))]
	}
	return s
}

// fabricBuilder assembles hosts, switches and ports.
type fabricBuilder struct {
	f   *Fabric
	cfg FabricConfig
}

// newFabricBuilder makes hosts and switches, levels[l] switches at level
// l, numbered level by level.
func newFabricBuilder(eng *engine.Engine, hosts int, levels []int, cfg FabricConfig) *fabricBuilder {
	switches := 0
	for _, n := range levels {
		switches += n
	}
	f := &Fabric{nodes: hosts + switches, Balancer: cfg.Balancer}
	f.Net = network.NewNetwork(eng)
	f.HostDelay = cfg.HostDelay
	f.OneWay = 2 * cfg.HostDelay // up to the top level and down again
	for i := range len(levels) - 1 {
		f.OneWay += 2 * cfg.tier(i).delay
	}
	f.adj = make([][]int32, hosts+switches)
	f.groupOf = make([]int32, hosts)
	alpha := cfg.BufferAlpha
	if alpha <= 0 {
		alpha = 1
	}
	for level, n := range levels {
		size := 0
		if len(cfg.SwitchBuffer) > 0 {
			size = cfg.SwitchBuffer[min(level, len(cfg.SwitchBuffer)-1)]
		}
		for range n {
			s := &FabricSwitch{f: f, net: f.Net, id: int32(hosts + len(f.FSwitch)), Level: level,
				Mem: network.NewSwitchMemory(f.Net, size, alpha)}
			if cfg.PFC != nil {
				s.Mem.EnablePFC(*cfg.PFC)
			}
			f.FSwitch = append(f.FSwitch, s)
		}
	}
	b := &fabricBuilder{f: f, cfg: cfg}
	for h := range hosts {
		host := hostmodel.NewHost(f.Net, int32(h), cfg.HostRate, nil)
		f.Hosts = append(f.Hosts, host)
	}
	return b
}

func (b *fabricBuilder) node(n int32) network.Node {
	if int(n) < len(b.f.Hosts) {
		return b.f.Hosts[n]
	}
	return b.f.FSwitch[int(n)-len(b.f.Hosts)]
}

// cable joins nodes a and c with a port each way.
func (b *fabricBuilder) cable(a, c int32, spec cableSpec, tier int) {
	for _, dir := range [2][2]int32{{a, c}, {c, a}} {
		from, to := dir[0], dir[1]
		p := &Port{ID: int32(len(b.f.Ports)), From: from, To: to, Tier: tier}
		next := b.node(to)
		if pfc, sw := b.cfg.PFC, b.sw(to); pfc != nil && sw != nil { // a cable into a switch ends at an ingress
			headroom := pfc.Headroom
			if headroom == 0 {
				headroom = network.HeadroomFor(spec.rate, spec.delay)
			}
			p.In = network.NewIngress(sw.Mem, next, spec.delay, headroom, b.cfg.ControlInLine)
			next = p.In
		}
		if int(from) < len(b.f.Hosts) { // a host's port is its NIC
			h := b.f.Hosts[from]
			p.L = network.NewLink(b.f.Net, spec.delay, nil, next)
			h.NIC.Next = p.L
			p.Q = h.NIC
		} else {
			p.E = network.NewEgress(b.f.Net, spec.rate, spec.queue, spec.delay, next)
			p.E.ECN, p.E.ControlInLine = spec.ecn, b.cfg.ControlInLine
			p.E.Lossless = b.cfg.PFC != nil
			b.sw(from).Mem.Attach(p.E)
		}
		if b.cfg.PFC != nil {
			p.sender().SetWatchdog(b.cfg.PFC.Watchdog)
		}
		if p.In != nil {
			p.In.SetUpstream(p.sender())
		}
		b.f.Ports = append(b.f.Ports, p)
		b.f.adj[from] = append(b.f.adj[from], p.ID)
	}
}

// sw returns switch node n, or nil for a host.
func (b *fabricBuilder) sw(n int32) *FabricSwitch {
	if int(n) < len(b.f.Hosts) {
		return nil
	}
	return b.f.FSwitch[int(n)-len(b.f.Hosts)]
}

// attach hangs host h off switch s (a node id).
func (b *fabricBuilder) attach(h int, s int32) {
	b.cable(int32(h), s, b.cfg.tier(-1), 0)
	sw := b.sw(s)
	if len(sw.direct) == 0 {
		sw.firstHost = int32(h)
	}
	if int32(h) != sw.firstHost+int32(len(sw.direct)) {
		panic("sim: a builder attached a rack's hosts out of order")
	}
	sw.direct = append(sw.direct, b.f.Ports[len(b.f.Ports)-1]) // the port toward the host
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
		if len(s.route) != groups {
			s.route = make([]uint16, groups)
		}
		s.routes, s.egress = s.routes[:0], s.egress[:0]
	}
	var cands []*Port
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
			cands = cands[:0]
			if d := dist[s.id]; d > 0 {
				for _, pid := range f.adj[s.id] {
					if p := f.Ports[pid]; p.Up() && int(p.To) >= hosts && dist[p.To] == d-1 {
						cands = append(cands, p)
					}
				}
			}
			s.route[g] = s.intern(cands)
		}
	}
}

// intern returns the index in s.routes of a list equal to cands, adding
// a copy where there is none.
func (s *FabricSwitch) intern(cands []*Port) uint16 {
	for i, r := range s.routes {
		if slices.Equal(r, cands) {
			return uint16(i)
		}
	}
	if len(s.routes) > math.MaxUint16 {
		panic("sim: a switch with more than 65536 distinct next-hop lists")
	}
	s.routes = append(s.routes, slices.Clone(cands))
	out := make([]*network.Egress, len(cands))
	for i, p := range cands {
		out[i] = p.E
	}
	s.egress = append(s.egress, out)
	return uint16(len(s.routes) - 1)
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
