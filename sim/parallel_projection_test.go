package sim

import (
	"flag"
	"math"
	"slices"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/sim/engine"
)

var (
	projectK     = flag.Int("project.k", 8, "TestParallelProjection's fat-tree arity (bench/parallel-projection.sh sets it)")
	projectBytes = flag.Int("project.bytes", 16<<20, "TestParallelProjection's bytes per flow")
)

// TestParallelProjection runs BenchmarkFatTreePermutation's workload with
// every event tagged by the rack it works on (Fabric.PartitionByRack)
// and projects how a conservative parallel engine, synchronising once
// per lookahead (the least delay of a cable between racks), would spread
// them over threads. It checks the projection's own invariants; the
// figures it logs are what bench/parallel-projection.sh records.
func TestParallelProjection(t *testing.T) {
	k := *projectK
	eng := engine.New(1)
	f, err := benchFatTree(eng, k)
	if err != nil {
		t.Fatal(err)
	}
	part := f.PartitionByRack()
	if part.Parts != k*k/2 || part.Lookahead != monotime.Microsecond {
		t.Fatalf("a k=%d fat-tree split by rack: %d parts with lookahead %v, want %d and 1us", k, part.Parts, part.Lookahead, k*k/2)
	}
	threads := []int{1, 2, 16, 64}
	proj := engine.NewProjection(part.Parts, part.Lookahead, threads)
	var crossing, unowned uint64
	eng.Observe(func(at monotime.Time, h engine.Handler) {
		p, ok := part.Of[h]
		if !ok {
			unowned++
			proj.Add(at, -1, -1)
			return
		}
		from, crosses := part.From[h]
		if !crosses {
			from = -1
		} else {
			crossing++
		}
		proj.Add(at, int(p), int(from))
	})
	cfg := flowsCfg(16, path.Oblivious)
	cfg.Core.MaxBytesInFlight = 1 << 20
	if _, err := RunFlows(&f.Topology, Permutation(eng, hostList(k*k*k/4), *projectBytes), cfg); err != nil {
		t.Fatal(err)
	}
	res, windows, perPart := proj.Result()
	events := eng.Processed()
	var sum uint64
	for _, n := range perPart {
		sum += n
	}
	if sum+unowned != events {
		t.Fatalf("the projection counted %d events, the engine ran %d", sum+unowned, events)
	}
	least, most := slices.Min(perPart), slices.Max(perPart)
	t.Logf("k=%d, %d bytes per flow: %d hosts in %d racks; %d events (%.2f%% of no rack, %.1f%% carrying a packet between racks); %d windows of %v (%.0f events each)",
		k, *projectBytes, len(f.Hosts), part.Parts, events, 100*float64(unowned)/float64(events), 100*float64(crossing)/float64(events),
		windows, part.Lookahead, float64(events)/float64(windows))
	t.Logf("events per rack: least %d, most %d (%.2fx the mean)", least, most, float64(most)*float64(part.Parts)/float64(sum))
	for _, r := range res {
		how := map[bool]string{false: "blocks", true: "interleaved"}[r.Interleaved]
		t.Logf("threads %d, %s: projected speedup %.2fx, idle %.0f%% mean, %.0f%% worst thread, %.1f%% of events pass a packet between threads",
			r.Threads, how, r.Speedup, 100*r.IdleMean, 100*r.IdleMax, 100*float64(r.Handoffs)/float64(events))
		if r.Speedup < 1-1e-9 || r.Speedup > float64(r.Threads)+1e-9 {
			t.Errorf("threads %d: speedup %.3f outside 1..%d", r.Threads, r.Speedup, r.Threads)
		}
		if r.Threads == 1 && (math.Abs(r.Speedup-1) > 1e-9 || r.Handoffs != 0) {
			t.Errorf("one thread: speedup %.6f with %d handoffs, want 1 and none", r.Speedup, r.Handoffs)
		}
		if r.Handoffs > crossing {
			t.Errorf("threads %d: %d handoffs, more than the %d packets between racks", r.Threads, r.Handoffs, crossing)
		}
	}
}
