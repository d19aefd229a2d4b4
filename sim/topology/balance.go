package topology

import (
	"cmp"
	"slices"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/network"
)

// BalancerKind says how a switch picks among equally short next hops.
type BalancerKind uint8

// Switch-side load balancing.
const (
	// ECMP hashes the flow's addresses only: every packet between two
	// hosts takes one path, whatever its entropy (RoCE with one QP).
	ECMP BalancerKind = iota
	// EECMP also hashes the entropy (Meta's E-ECMP hashing the
	// destination QP): connections with several QPs, or hosts spraying
	// over many source ports, spread over many paths.
	EECMP
	// Pinned routes by destination alone (path pinning).
	Pinned
	// Flowlet re-hashes a flow after it has been idle for FlowletGap.
	Flowlet
	// TE follows paths a central controller assigned to each flow
	// (least-loaded first), falling back to EECMP for unknown flows.
	TE
)

var balancerNames = [...]string{"ecmp", "e-ecmp", "pinned", "flowlet", "te"}

func (k BalancerKind) String() string {
	if int(k) < len(balancerNames) {
		return balancerNames[k]
	}
	return "unknown"
}

// ParseBalancer reads a balancer name.
func ParseBalancer(s string) (BalancerKind, bool) {
	for i, n := range balancerNames {
		if n == s {
			return BalancerKind(i), true
		}
	}
	return 0, false
}

// Balancer is a fabric's switch-side load balancing.
type Balancer struct {
	Kind       BalancerKind
	FlowletGap monotime.Duration // Flowlet: idle gap that starts a new flowlet
}

// flowKey names a flow the way a switch hashes it.
func flowKey(p *network.Packet, withEntropy bool) uint64 {
	k := uint64(uint32(p.Src))<<32 | uint64(uint32(p.Dst))
	if withEntropy {
		k ^= uint64(p.Entropy) << 48
	}
	return k
}

func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// pick chooses one of cands (two or more) for p at switch s.
func (b *Balancer) pick(s *FabricSwitch, p *network.Packet, cands []*Port) int {
	n := uint64(len(cands))
	switch b.Kind {
	case ECMP:
		return int(mix64(flowKey(p, false)^uint64(s.id)<<20) % n)
	case Pinned:
		return int(uint64(p.Dst) % n)
	case Flowlet:
		return s.flows.pick(s, p, n, b.FlowletGap)
	case TE:
		if port, ok := s.te[flowKey(p, true)]; ok {
			for i, c := range cands {
				if c == port {
					return i
				}
			}
		}
	}
	return int(mix64(flowKey(p, true)^uint64(s.id)<<20) % n)
}

// flowletTable remembers each flow's current choice and when it last sent.
type flowletTable map[uint64]flowlet

type flowlet struct {
	last monotime.Time
	port uint32
}

func (t *flowletTable) pick(s *FabricSwitch, p *network.Packet, n uint64, gap monotime.Duration) int {
	if *t == nil {
		*t = make(flowletTable)
	}
	now := s.net.Eng.Now()
	k := flowKey(p, true)
	fl, ok := (*t)[k]
	if !ok || now.Sub(fl.last) > gap || uint64(fl.port) >= n {
		fl.port = uint32(s.net.Eng.Rand().Uint64N(n))
	}
	fl.last = now
	(*t)[k] = fl
	return int(fl.port)
}

// Demand is a flow a traffic-engineering controller places.
type Demand struct {
	Src, Dst int32
	Entropy  uint16
	Bytes    int64
}

// Engineer plays the central TE controller: it walks each demand (largest
// first) from its source's switch toward its destination, at every hop
// taking the next hop whose port carries the least demand so far, and
// installs the choices in the switches. Call it again after a failure,
// once routes have converged, to re-place the flows.
func (f *Fabric) Engineer(demands []Demand) {
	for _, s := range f.FSwitch {
		s.te = make(map[uint64]*Port)
	}
	load := make([]int64, len(f.Ports))
	order := make([]int, len(demands))
	for i := range order {
		order[i] = i
	}
	sortByBytes(order, demands)
	for _, i := range order {
		d := demands[i]
		key := flowKey(&network.Packet{Src: d.Src, Dst: d.Dst, Entropy: d.Entropy}, true)
		s := f.FSwitch[f.groupOf[d.Src]]
		for hops := 0; hops < 16; hops++ {
			if s.directPort(d.Dst) != nil {
				break
			}
			cands := s.next(f.groupOf[d.Dst])
			if len(cands) == 0 {
				break
			}
			best := cands[0]
			for _, c := range cands[1:] {
				if load[c.ID] < load[best.ID] {
					best = c
				}
			}
			load[best.ID] += d.Bytes
			s.te[key] = best
			s = f.FSwitch[int(best.To)-len(f.Hosts)]
		}
	}
}

func sortByBytes(order []int, d []Demand) {
	// Stable, so equal demands keep their order: deterministic.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(d[b].Bytes, d[a].Bytes) })
}
