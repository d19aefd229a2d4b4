package topology

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/hostmodel"
	"github.com/sdrnet/sdrnet/sim/network"
)

// Switch forwards each packet to an output port chosen by its
// destination: the only port, or one of several by a hash of the flow and
// its entropy (ECMP).
type Switch struct {
	// Routes[dst] lists the ports that lead to host dst.
	Routes [][]network.Node
}

// Receive forwards p.
func (s *Switch) Receive(p *network.Packet) {
	ports := s.Routes[p.Dst]
	if len(ports) == 1 {
		ports[0].Receive(p)
		return
	}
	ports[ecmpHash(p)%uint32(len(ports))].Receive(p)
}

// ecmpHash mixes the flow's addresses and entropy the way a switch hashes
// a 5-tuple (a 32-bit finalizer from MurmurHash3).
func ecmpHash(p *network.Packet) uint32 {
	h := uint32(p.Src)*0x9e3779b1 ^ uint32(p.Dst)*0x85ebca6b ^ uint32(p.Entropy)*0xc2b2ae35
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// SitesConfig describes sites, each with hosts on one switch, joined by
// one link per direction between neighbours: two sites make a dumbbell, or
// two datacenters joined by a long-haul link; more make a ring of
// datacenters, as SDR-RDMA's AllReduce spans (section 5.3).
type SitesConfig struct {
	HostsPerSite int
	HostRate     float64           // NIC and access link rate, bits/s
	HostDelay    monotime.Duration // access link one-way delay
	TrunkRate    float64           // each link between sites, bits/s
	TrunkDelay   monotime.Duration // its one-way delay
	// TrunkLoss returns the loss model of one direction of a trunk
	// (called twice per trunk: each direction has its own state).
	TrunkLoss func() network.LossModel
	// QueueBytes bounds every switch port; zero: unbounded.
	QueueBytes   int
	ECNThreshold int
}

// TwoSitesConfig is the configuration of TwoSites.
type TwoSitesConfig = SitesConfig

// Topology is what a builder made.
type Topology struct {
	Net      *network.Network
	Hosts    []*hostmodel.Host
	Switches []*Switch
	// Trunk[2i] carries site i to site i+1 (mod the number of sites),
	// Trunk[2i+1] the way back; TrunkQueue are the switch ports feeding
	// them. Two sites have one trunk: Trunk[0] from site 0 to site 1.
	Trunk      []*network.Link
	TrunkQueue []*network.Queue
	HostDelay  monotime.Duration
	// OneWay is the longest unloaded trip from host to host: how long a
	// clear-to-send may take to arrive.
	OneWay monotime.Duration
	// Group, when the topology runs in parts on several threads, holds
	// the parts' engines; a host's events run on its part's
	// (Host.Engine), not on Net's.
	Group *engine.Group
}

// TwoSites builds two sites: hosts 0..n-1 at site 0, n..2n-1 at site 1.
func TwoSites(eng *engine.Engine, cfg TwoSitesConfig) *Topology { return Sites(eng, 2, cfg) }

// Sites builds sites (at least 2) in a ring, neighbours joined by a trunk
// each way: hosts i*n..(i+1)*n-1 at site i, n = cfg.HostsPerSite. A packet
// takes the shorter way round (clockwise on a tie), so neighbours talk
// over one trunk.
func Sites(eng *engine.Engine, sites int, cfg SitesConfig) *Topology {
	net := network.NewNetwork(eng)
	t := &Topology{Net: net, HostDelay: cfg.HostDelay}
	n := cfg.HostsPerSite
	sw := make([]*Switch, sites)
	for i := range sw {
		sw[i] = &Switch{Routes: make([][]network.Node, sites*n)}
	}
	t.Switches = sw
	trunks := sites // a ring of sites trunks...
	if sites == 2 {
		trunks = 1 // ... but two sites need one
	}
	// cw[i] leads from site i to i+1, ccw[i] from site i to i-1.
	cw, ccw := make([]*network.Queue, sites), make([]*network.Queue, sites)
	for i := range trunks {
		j := (i + 1) % sites
		for dir, to := range [2]int{j, i} {
			var loss network.LossModel
			if cfg.TrunkLoss != nil {
				loss = cfg.TrunkLoss()
			}
			link := network.NewLink(net, cfg.TrunkDelay, loss, sw[to])
			q := network.NewQueue(net, cfg.TrunkRate, cfg.QueueBytes, link)
			q.ECN = network.StepECN(cfg.ECNThreshold)
			t.Trunk, t.TrunkQueue = append(t.Trunk, link), append(t.TrunkQueue, q)
			if dir == 0 {
				cw[i] = q
			} else {
				ccw[j] = q
			}
		}
	}
	t.OneWay = monotime.Duration(sites/2)*cfg.TrunkDelay + 2*cfg.HostDelay // half way round the ring
	for h := range sites * n {
		site := h / n
		host := hostmodel.NewHost(net, int32(h), cfg.HostRate, network.NewLink(net, cfg.HostDelay, nil, sw[site]))
		t.Hosts = append(t.Hosts, host)
		down := network.NewQueue(net, cfg.HostRate, cfg.QueueBytes, network.NewLink(net, cfg.HostDelay, nil, host))
		down.ECN = network.StepECN(cfg.ECNThreshold)
		for i := range sites {
			switch d := (site - i + sites) % sites; {
			case d == 0:
				sw[i].Routes[h] = []network.Node{down}
			case 2*d <= sites && cw[i] != nil:
				sw[i].Routes[h] = []network.Node{cw[i]}
			default:
				sw[i].Routes[h] = []network.Node{ccw[i]}
			}
		}
	}
	return t
}
