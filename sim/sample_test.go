package sim

import (
	"math"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// TestQueueSamplerMatchesOccupancyIntegral checks the sampled queue depths
// against an independent account of the same queues: each queue integrates
// its occupancy over time exactly (QueueStats.ByteTime), so the mean of
// fine-grained samples of a tier must approach the tier's time-averaged
// occupancy. An incast builds a real queue on the receiver's downlink.
func TestQueueSamplerMatchesOccupancyIntegral(t *testing.T) {
	eng := engine.New(4)
	f, err := topology.LeafSpine(eng, 2, 2, 4, dcConfig(100e9, topology.EECMP))
	if err != nil {
		t.Fatal(err)
	}
	s := topology.SampleQueues(eng, f, 50*monotime.Nanosecond)
	res, err := RunFlows(&f.Topology, Incast([]int{1, 2, 3, 4, 5, 6}, 0, 1<<20), flowsCfg(4, path.Oblivious))
	if err != nil {
		t.Fatal(err)
	}
	now := eng.Now()
	for tier := range f.Tiers {
		var integral float64
		ports, peak := 0, 0
		for _, p := range f.Ports {
			if p.Tier != tier || int(p.From) < len(f.Hosts) {
				continue
			}
			p.E.Settle(now)
			integral += p.E.Stats.ByteTime / float64(now)
			peak = max(peak, p.E.Stats.MaxBytes)
			ports++
		}
		want := integral / float64(ports)
		samples := s.Tier(tier)
		if samples.Count() == 0 {
			t.Fatalf("tier %s: no samples", f.Tiers[tier])
		}
		got := samples.Mean()
		if top := samples.Quantile(1); top > int64(peak) {
			t.Errorf("tier %s: sampled %v bytes, above the peak %d", f.Tiers[tier], top, peak)
		}
		if math.Abs(got-want) > 0.03*want+100 {
			t.Errorf("tier %s: sampled mean %.0f bytes, time-averaged occupancy %.0f", f.Tiers[tier], got, want)
		}
		t.Logf("tier %s: %d ports, sampled mean %.0f B, integral %.0f B, p99 %d B, peak %d B (run %v)",
			f.Tiers[tier], ports, got, want, samples.Quantile(0.99), peak, monotime.Duration(res.End))
	}
	if s.Tier(-1) != nil || s.Tier(len(f.Tiers)) != nil {
		t.Error("a tier out of range has samples")
	}
}
