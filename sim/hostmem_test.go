package sim

import (
	"math"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/hostmodel"
	"github.com/sdrnet/sdrnet/sim/network"
	"github.com/sdrnet/sdrnet/sim/topology"
)

func testMemory(tr hostmodel.Translation, pin hostmodel.Pinning) hostmodel.HostMemoryConfig {
	return hostmodel.HostMemoryConfig{Translation: tr, PageSize: 4096, ATCEntries: 32, IOTLBEntries: 64,
		ATSLatency: 550 * monotime.Nanosecond, WalkLatency: 330 * monotime.Nanosecond, Outstanding: 4,
		Pinning: pin, GuestMemory: 64 << 30, PinPerGiB: 250 * monotime.Millisecond, PinUnit: 2 << 20,
		Fault: 5 * monotime.Microsecond, Boot: 5 * monotime.Second, BootTouch: 1 << 30}
}

// TestHostMemoryThroughput streams messages between two simulated hosts
// whose NICs translate through thrashing caches and checks the goodput
// against the bound the translations set, Outstanding pages per miss
// latency: the slower of that and the line rate.
func TestHostMemoryThroughput(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   hostmodel.Translation
		out  int
	}{{"emtt", hostmodel.TranslateEMTT, 4}, {"ats-4", hostmodel.TranslateATS, 4}, {"ats-2", hostmodel.TranslateATS, 2}} {
		t.Run(tc.name, func(t *testing.T) {
			eng := engine.New(1)
			top := topology.TwoSites(eng, topology.TwoSitesConfig{HostsPerSite: 1, HostRate: 200e9, HostDelay: monotime.Microsecond,
				TrunkRate: 200e9, TrunkDelay: monotime.Microsecond, TrunkLoss: func() network.LossModel { return network.Bernoulli{} }})
			cfg := testMemory(tc.tr, hostmodel.PinNone)
			cfg.Outstanding = tc.out
			for _, h := range top.Hosts {
				h.Memory = hostmodel.NewHostMemory(cfg)
			}
			const size, count = 4 << 20, 16
			res, err := RunMessages(top, 0, 1, MessagesConfig{Size: size, Count: count, Depth: 4, Scheme: reliability.SelectiveRepeat{},
				Core: coreConfig(10 * monotime.Microsecond), Virtual: true})
			if err != nil {
				t.Fatal(err)
			}
			got := size * count * 8 / res.Elapsed.Seconds()
			line := 200e9 * 4096 / float64(4096+top.Net.Overhead+wire.MessageLen)
			bound := line
			if tc.tr == hostmodel.TranslateATS {
				bound = min(line, float64(tc.out)*4096*8/(cfg.ATSLatency+cfg.WalkLatency).Seconds())
			}
			t.Logf("goodput %.2f Gbit/s, bound %.2f", got/1e9, bound/1e9)
			if math.Abs(got-bound)/bound > 0.05 {
				t.Errorf("goodput %.1f Gbit/s, want within 5%% of %.1f", got/1e9, bound/1e9)
			}
		})
	}
}
