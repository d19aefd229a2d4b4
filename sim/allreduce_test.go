package sim

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/network"
	"github.com/sdrnet/sdrnet/sim/topology"
)

func ringTopology(eng *engine.Engine, hosts int, loss float64) *topology.Topology {
	return topology.TwoSites(eng, topology.TwoSitesConfig{HostsPerSite: hosts / 2, HostRate: 100e9, HostDelay: monotime.Microsecond,
		TrunkRate: 400e9, TrunkDelay: network.DelayForDistance(200),
		TrunkLoss: func() network.LossModel { return network.Bernoulli{P: loss} }})
}

// TestAllReduceLossless checks a clean ring against the (2N-2) x step
// lower bound: every step moves one segment across the slowest hop.
func TestAllReduceLossless(t *testing.T) {
	eng := engine.New(1)
	const n, size = 4, 8 << 20
	top := ringTopology(eng, n, 0)
	res, err := RunAllReduce(top, AllReduceConfig{Hosts: n, Size: size, Count: 2, Scheme: reliability.SelectiveRepeat{},
		Core: coreConfig(2 * monotime.Millisecond), Virtual: false})
	if err != nil {
		t.Fatal(err)
	}
	seg := size / n
	pkts := seg / 4096
	perPacket := monotime.TransmitTime(4096+wire.MessageLen+network.DefaultOverhead, 100e9)
	// The critical path runs through 2(N-1) ring edges, each moving one
	// segment; of any 6 consecutive edges of this 4-ring, 3 cross the
	// trunk (local, trunk, local, trunk, ...).
	bound := monotime.Duration(2*(n-1)*pkts)*perPacket + 3*network.DelayForDistance(200)
	for _, c := range res.Completions {
		if c < bound || c > bound*11/10 {
			t.Fatalf("collective took %v; the lower bound is %v and a clean ring should be within 10%% of it", c, bound)
		}
	}
	if res.BusBandwidth <= 0 {
		t.Fatal("no bus bandwidth")
	}
}

func TestAllReduceUnderLoss(t *testing.T) {
	for _, name := range []string{"sr-nack", "ec:32,8"} {
		s, _ := reliability.Parse(name)
		eng := engine.New(2)
		top := ringTopology(eng, 6, 0.01)
		if _, err := RunAllReduce(top, AllReduceConfig{Hosts: 6, Size: 6 << 20, Count: 2, Scheme: s,
			Core: coreConfig(2 * monotime.Millisecond)}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// TestAllReduceAcrossSites runs the ring over N datacenters, one host in
// each, as SDR-RDMA's section 5.3 does: every one of the 2(N-1) steps
// crosses a long-haul trunk, so the collective takes at least 2(N-1)
// times a segment's transmission plus the trunk's delay; a clean ring is
// within 5% of that, and every trunk carries its share one way only.
func TestAllReduceAcrossSites(t *testing.T) {
	for _, n := range []int{3, 4, 5} {
		eng := engine.New(1)
		trunk := network.DelayForDistance(500)
		top := topology.Sites(eng, n, topology.SitesConfig{HostsPerSite: 1, HostRate: 100e9, HostDelay: monotime.Microsecond,
			TrunkRate: 400e9, TrunkDelay: trunk})
		const size = 6 << 20
		res, err := RunAllReduce(top, AllReduceConfig{Hosts: n, Size: size, Count: 2, Scheme: reliability.SelectiveRepeat{},
			Core: coreConfig(2*trunk + 4*monotime.Microsecond)})
		if err != nil {
			t.Fatal(err)
		}
		seg := (size + n - 1) / n
		pkts := (seg + 4095) / 4096
		perPacket := monotime.TransmitTime(4096+wire.MessageLen+network.DefaultOverhead, 100e9)
		bound := monotime.Duration(2*(n-1)) * (monotime.Duration(pkts)*perPacket + trunk)
		for _, c := range res.Completions {
			if c < bound || c > bound*105/100 {
				t.Errorf("%d sites: collective took %v; the lower bound is %v", n, c, bound)
			}
		}
		if len(top.Trunk) != 2*n {
			t.Fatalf("%d sites: %d trunk directions, want %d", n, len(top.Trunk), 2*n)
		}
		for i := 0; i < len(top.Trunk); i += 2 {
			// Data flows site i -> i+1; the way back carries only
			// control packets.
			there, back := top.Trunk[i].Stats.Delivered, top.Trunk[i+1].Stats.Delivered
			if there < uint64(4*(n-1)*pkts) || back > there/4 {
				t.Errorf("%d sites: trunk %d delivered %d packets, the way back %d; want the data one way, %d packets",
					n, i/2, there, back, 4*(n-1)*pkts)
			}
		}
	}
}
