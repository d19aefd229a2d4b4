package sim

import (
	"runtime"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// BenchmarkFatTreePermutation is the datacenter scale benchmark: a k-ary
// fat-tree at 400 Gbit/s, every host sending 16 MiB to another (a random
// permutation), spraying over 16 paths, SR-NACK with a 1 MiB window. k=16
// is 1024 hosts and 320 switches. Run it on one core:
//
//	GOMAXPROCS=1 go test ./sim/ -run '^$' -bench FatTreePermutation -benchtime 1x
func BenchmarkFatTreePermutation(b *testing.B) {
	for _, k := range []int{8, 16} {
		b.Run(map[int]string{8: "k8-128hosts", 16: "k16-1024hosts"}[k], func(b *testing.B) {
			var events, hops uint64
			var peak uint64
			for b.Loop() {
				eng := engine.New(1)
				f, err := benchFatTree(eng, k)
				if err != nil {
					b.Fatal(err)
				}
				cfg := flowsCfg(16, path.Oblivious)
				cfg.Core.MaxBytesInFlight = 1 << 20
				if _, err := RunFlows(&f.Topology, Permutation(eng, hostList(k*k*k/4), 16<<20), cfg); err != nil {
					b.Fatal(err)
				}
				events += eng.Processed()
				hops += f.Net.Hops
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapInuse)
			}
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
			b.ReportMetric(float64(hops)/b.Elapsed().Seconds(), "hops/s")
			b.ReportMetric(float64(peak)/(1<<20), "heap-MB")
		})
	}
}

// benchFatTree is the benchmark's fabric: a k-ary fat-tree at 400 Gbit/s
// with 1 us cables, 4 MiB port queues and E-ECMP switches.
func benchFatTree(eng *engine.Engine, k int) (*topology.Fabric, error) {
	return topology.FatTree(eng, k, topology.FabricConfig{HostRate: 400e9, HostDelay: monotime.Microsecond,
		TierRate: []float64{400e9}, TierDelay: []monotime.Duration{monotime.Microsecond},
		TierQueue: []int{4 << 20}, Balancer: topology.Balancer{Kind: topology.EECMP}})
}
