package sim

import (
	"runtime"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/network"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// BenchmarkLongHaul1GiB simulates one 1 GiB message (262,144 packets of
// 4 KiB) over the 400 Gbit/s, 25 ms RTT long-haul link of the SDR-RDMA
// scenario, at a 1e-4 drop rate, with the real protocol core on both
// hosts. One op is the whole message; hops/s counts packet hops (queue
// and link traversals) per wall second.
func BenchmarkLongHaul1GiB(b *testing.B) {
	for _, name := range []string{"sr", "ec:32,8"} {
		b.Run(name, func(b *testing.B) {
			s, _ := reliability.Parse(name)
			var hops, events, pooled uint64
			b.ReportAllocs()
			for b.Loop() {
				eng := engine.New(1)
				top := topology.TwoSites(eng, topology.TwoSitesConfig{HostsPerSite: 1, HostRate: 400e9, HostDelay: monotime.Microsecond,
					TrunkRate: 400e9, TrunkDelay: 12500 * monotime.Microsecond,
					TrunkLoss: func() network.LossModel { return network.Bernoulli{P: 1e-4} }})
				if _, err := RunMessages(top, 0, 1, MessagesConfig{Size: 1 << 30, Count: 1, Scheme: s,
					Core: coreConfig(25 * monotime.Millisecond), Virtual: true}); err != nil {
					b.Fatal(err)
				}
				hops += top.Net.Hops
				events += eng.Processed()
				pooled += uint64(top.Net.Pooled()) // every packet ever made, back in the pool
			}
			b.ReportMetric(float64(hops)/b.Elapsed().Seconds(), "hops/s")
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
			b.ReportMetric(float64(pooled)/float64(b.N), "packets/op")
		})
	}
}

// TestSteadyStateAllocations checks that, once the packet pool covers the
// packets in flight, simulating costs no allocation per event: the extra
// messages of a longer run add events but (almost) no allocations.
func TestSteadyStateAllocations(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 160 MiB through the simulator")
	}
	run := func(count int) (mallocs, events uint64) {
		eng := engine.New(1)
		top := topology.TwoSites(eng, topology.TwoSitesConfig{HostsPerSite: 1, HostRate: 100e9, HostDelay: monotime.Microsecond,
			TrunkRate: 100e9, TrunkDelay: monotime.Millisecond,
			TrunkLoss: func() network.LossModel { return network.Bernoulli{P: 1e-4} }})
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		if _, err := RunMessages(top, 0, 1, MessagesConfig{Size: 16 << 20, Count: count,
			Scheme: reliability.SelectiveRepeat{NACK: true}, Core: coreConfig(2 * monotime.Millisecond), Virtual: true}); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs, eng.Processed()
	}
	m2, e2 := run(2)
	m10, e10 := run(10)
	perEvent := float64(m10-m2) / float64(e10-e2)
	t.Logf("%d extra events, %d extra allocations: %.5f per event", e10-e2, int64(m10-m2), perEvent)
	if perEvent > 0.001 {
		t.Fatalf("%.4f allocations per event in steady state, want none", perEvent)
	}
}
