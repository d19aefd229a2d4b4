package sim

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
)

// Switch forwards each packet to an output port chosen by its
// destination: the only port, or one of several by a hash of the flow and
// its entropy (ECMP).
type Switch struct {
	// Routes[dst] lists the ports that lead to host dst.
	Routes [][]Node
}

// Receive forwards p.
func (s *Switch) Receive(p *Packet) {
	ports := s.Routes[p.Dst]
	if len(ports) == 1 {
		ports[0].Receive(p)
		return
	}
	ports[ecmpHash(p)%uint32(len(ports))].Receive(p)
}

// ecmpHash mixes the flow's addresses and entropy the way a switch hashes
// a 5-tuple (a 32-bit finalizer from MurmurHash3).
func ecmpHash(p *Packet) uint32 {
	h := uint32(p.Src)*0x9e3779b1 ^ uint32(p.Dst)*0x85ebca6b ^ uint32(p.Entropy)*0xc2b2ae35
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// TwoSitesConfig describes two sites, each with hosts on one switch, joined
// by one link per direction: a dumbbell, or two datacenters joined by a
// long-haul link.
type TwoSitesConfig struct {
	HostsPerSite int
	HostRate     float64           // NIC and access link rate, bits/s
	HostDelay    monotime.Duration // access link one-way delay
	TrunkRate    float64           // the link between the sites, bits/s
	TrunkDelay   monotime.Duration // its one-way delay
	// TrunkLoss returns the loss model of one direction of the trunk
	// (called twice: each direction has its own state).
	TrunkLoss func() LossModel
	// QueueBytes bounds every switch port; zero: unbounded.
	QueueBytes   int
	ECNThreshold int
}

// Topology is what a builder made.
type Topology struct {
	Net      *Network
	Hosts    []*Host
	Switches []*Switch
	// Trunk[0] carries site 0 to site 1, Trunk[1] the way back; TrunkQueue
	// are the switch ports feeding them.
	Trunk      [2]*Link
	TrunkQueue [2]*Queue
	HostDelay  monotime.Duration
}

// TwoSites builds the topology: hosts 0..n-1 at site 0, n..2n-1 at site 1.
func TwoSites(eng *Engine, cfg TwoSitesConfig) *Topology {
	net := NewNetwork(eng)
	t := &Topology{Net: net, HostDelay: cfg.HostDelay}
	n := cfg.HostsPerSite
	sw := [2]*Switch{{Routes: make([][]Node, 2*n)}, {Routes: make([][]Node, 2*n)}}
	t.Switches = sw[:]
	for side := range 2 {
		var loss LossModel
		if cfg.TrunkLoss != nil {
			loss = cfg.TrunkLoss()
		}
		t.Trunk[side] = NewLink(net, cfg.TrunkDelay, loss, sw[1-side])
		q := NewQueue(net, cfg.TrunkRate, cfg.QueueBytes, t.Trunk[side])
		q.ECN = StepECN(cfg.ECNThreshold)
		t.TrunkQueue[side] = q
	}
	for i := range 2 * n {
		side := i / n
		h := net.NewHost(int32(i), cfg.HostRate, NewLink(net, cfg.HostDelay, nil, sw[side]))
		t.Hosts = append(t.Hosts, h)
		down := NewQueue(net, cfg.HostRate, cfg.QueueBytes, NewLink(net, cfg.HostDelay, nil, h))
		down.ECN = StepECN(cfg.ECNThreshold)
		sw[side].Routes[i] = []Node{down}
		sw[1-side].Routes[i] = []Node{t.TrunkQueue[1-side]}
	}
	return t
}
