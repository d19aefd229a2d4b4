package sim

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

func ringTopology(eng *Engine, hosts int, loss float64) *Topology {
	return TwoSites(eng, TwoSitesConfig{HostsPerSite: hosts / 2, HostRate: 100e9, HostDelay: monotime.Microsecond,
		TrunkRate: 400e9, TrunkDelay: DelayForDistance(200),
		TrunkLoss: func() LossModel { return Bernoulli{P: loss} }})
}

// TestAllReduceLossless checks a clean ring against the (2N-2) x step
// lower bound: every step moves one segment across the slowest hop.
func TestAllReduceLossless(t *testing.T) {
	eng := New(1)
	const n, size = 4, 8 << 20
	top := ringTopology(eng, n, 0)
	res, err := RunAllReduce(top, AllReduceConfig{Hosts: n, Size: size, Count: 2, Scheme: reliability.SelectiveRepeat{},
		Core: coreConfig(2 * monotime.Millisecond), Virtual: false})
	if err != nil {
		t.Fatal(err)
	}
	seg := size / n
	pkts := seg / 4096
	perPacket := monotime.TransmitTime(4096+wire.MessageLen+DefaultOverhead, 100e9)
	// The critical path runs through 2(N-1) ring edges, each moving one
	// segment; of any 6 consecutive edges of this 4-ring, 3 cross the
	// trunk (local, trunk, local, trunk, ...).
	bound := monotime.Duration(2*(n-1)*pkts)*perPacket + 3*DelayForDistance(200)
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
		eng := New(2)
		top := ringTopology(eng, 6, 0.01)
		if _, err := RunAllReduce(top, AllReduceConfig{Hosts: 6, Size: 6 << 20, Count: 2, Scheme: s,
			Core: coreConfig(2 * monotime.Millisecond)}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}
