package sim

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/sim/chakra"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/network"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// partsRun runs flows over a k-ary fat-tree, split into racks when
// threads > 0, and returns a digest of everything the run measured: each
// flow's start and arrival, the transfer counters, every port's counters
// and the hops.
func partsRun(t testing.TB, k, threads int, pfc bool, flows func(eng *engine.Engine, hosts int) []Flow) (string, FlowsResult) {
	t.Helper()
	eng := engine.New(3)
	fc := dcConfig(100e9, topology.EECMP)
	if pfc {
		fc.PFC = &network.PFC{XOff: 128 << 10, XOn: 64 << 10}
		fc.TierQueue = nil
		fc.SwitchBuffer = []int{2 << 20}
	}
	f, err := topology.FatTree(eng, k, fc)
	if err != nil {
		t.Fatal(err)
	}
	fl := flows(eng, len(f.Hosts))
	cfg := flowsCfg(4, path.Oblivious)
	if threads > 0 {
		if _, err := f.Split(eng.Rand().Uint64(), 1); err != nil {
			t.Fatal(err)
		}
		cfg.Threads = threads
	}
	res, err := RunFlows(&f.Topology, fl, cfg)
	if err != nil {
		t.Fatalf("%d threads: %v", threads, err)
	}
	if threads > 0 {
		f.Gather()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "start %v\ndone %v\nend %v\nstats %+v\nreorder %+v\nhops %d unroutable %d\n",
		res.Start, res.Done, res.End, res.Stats, res.Reordering, f.Net.Hops, f.Unroutable())
	for _, p := range f.Ports {
		if p.E != nil {
			fmt.Fprintf(&b, "port %d %+v %+v %+v\n", p.ID, p.E.Stats, p.E.Wire, p.Pause(res.End))
		}
	}
	return b.String(), res
}

// chainFlows is a permutation, then every host sending again once the
// flow into it arrived: dependencies whose two flows meet at one host, as
// a ring's rounds do, and dependencies between hosts in different racks.
func chainFlows(eng *engine.Engine, hosts int) []Flow {
	first := Permutation(eng, hostList(hosts), 256<<10)
	flows := append([]Flow(nil), first...)
	into := make([]int, hosts)
	for i, f := range first {
		into[f.Dst] = i
	}
	for i, f := range first {
		next := Flow{Src: f.Src, Dst: (f.Src + hosts/2) % hosts, Bytes: 64 << 10, After: []int{into[f.Src]}}
		if i%3 == 0 { // wait for a flow into another rack
			next.After = append(next.After, (i+1)%len(first))
		}
		flows = append(flows, next)
	}
	return flows
}

// incastChain is chainFlows with every host also sending to host 0 at
// once: enough to make PFC pause ports.
func incastChain(eng *engine.Engine, hosts int) []Flow {
	return append(chainFlows(eng, hosts), Incast(hostList(hosts)[1:], 0, 256<<10)...)
}

// TestFlowsInParts: a fabric split into racks runs the same on one thread
// and on several, lossy and under PFC, every flow arrives, and it lands
// where one engine does.
func TestFlowsInParts(t *testing.T) {
	for _, tc := range []struct {
		k   int
		pfc bool
	}{{4, false}, {8, false}, {4, true}, {8, true}} {
		if testing.Short() && tc.k > 4 {
			continue // the race detector's run
		}
		flows := chainFlows
		if tc.pfc {
			flows = incastChain
		}
		want, res := partsRun(t, tc.k, 1, tc.pfc, flows)
		for _, threads := range []int{2, 3} {
			if got, _ := partsRun(t, tc.k, threads, tc.pfc, flows); got != want {
				t.Errorf("k=%d pfc %v: %d threads differ from one:\n%s", tc.k, tc.pfc, threads, firstDiff(want, got))
			}
		}
		if tc.pfc && !strings.Contains(want, "Pauses:") || tc.pfc && strings.Count(want, "Pauses:0 ") == strings.Count(want, "Pauses:") {
			t.Errorf("k=%d under PFC: no port was paused; the test does not reach PFC", tc.k)
		}
		// One engine and the parts draw differently and order
		// simultaneous events differently, so the runs differ in
		// detail; the whole takes about as long.
		_, serial := partsRun(t, tc.k, 0, tc.pfc, flows)
		if r := float64(res.End) / float64(serial.End); r < 0.8 || r > 1.25 {
			t.Errorf("k=%d pfc %v: in parts the flows end at %v, on one engine at %v (%.2fx)", tc.k, tc.pfc, res.End, serial.End, r)
		}
	}
}

// firstDiff shows where two digests part.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n one: %.300s\nmany: %.300s", i, al[i], bl[i])
		}
	}
	return "lengths differ"
}

// TestCollectivesInParts: ring AllReduce and all-to-all, whose receivers
// hear of their step's progress between windows, run the same on one
// thread and on several.
func TestCollectivesInParts(t *testing.T) {
	for name, flows := range map[string]func(*engine.Engine, int) []Flow{
		"allreduce": func(_ *engine.Engine, hosts int) []Flow { return RingAllReduce(hostList(hosts), 4<<20) },
		"alltoall":  func(_ *engine.Engine, hosts int) []Flow { return AllToAll(hostList(hosts), 4<<20) },
	} {
		want, res := partsRun(t, 4, 1, false, flows)
		if got, _ := partsRun(t, 4, 2, false, flows); got != want {
			t.Errorf("%s: 2 threads differ from one:\n%s", name, firstDiff(want, got))
		}
		_, serial := partsRun(t, 4, 0, false, flows)
		if r := float64(res.End) / float64(serial.End); r < 0.8 || r > 1.25 {
			t.Errorf("%s: in parts the flows end at %v, on one engine at %v (%.2fx)", name, res.End, serial.End, r)
		}
	}
}

// BenchmarkFatTreeInParts is BenchmarkFatTreePermutation's fabric with
// 2 MB flows (the htsim comparison's), on one engine and split into racks
// on 1 and 2 threads. k=32 is 8,192 hosts; -parts.k picks it. A split run
// has more events than one engine's (a packet into another rack is handed
// over as it leaves the port, then arrives): ns/hop compares the two.
//
//	go test ./sim/ -run '^$' -bench FatTreeInParts -benchtime 1x -parts.k 32
//	bash bench/parallel.sh   # both k, alternated rounds, into the docs
func BenchmarkFatTreeInParts(b *testing.B) {
	k := *partsK
	for _, threads := range []int{0, 1, 2} {
		name := fmt.Sprintf("k%d/threads=%d", k, threads)
		if threads == 0 {
			name = fmt.Sprintf("k%d/one-engine", k)
		}
		b.Run(name, func(b *testing.B) {
			var events, windows, hops uint64
			for b.Loop() {
				eng := engine.New(1)
				f, err := benchFatTree(eng, k)
				if err != nil {
					b.Fatal(err)
				}
				flows := Permutation(eng, hostList(len(f.Hosts)), 2_000_000)
				cfg := flowsCfg(16, path.Oblivious)
				cfg.Core.MaxBytesInFlight = 1 << 20
				if threads > 0 {
					if _, err := f.Split(eng.Rand().Uint64(), 1); err != nil {
						b.Fatal(err)
					}
					cfg.Threads = threads
				}
				if _, err := RunFlows(&f.Topology, flows, cfg); err != nil {
					b.Fatal(err)
				}
				if g := f.Group; g != nil {
					f.Gather()
					events += g.Processed()
					windows += g.Windows()
				} else {
					events += eng.Processed()
				}
				hops += f.Net.Hops
			}
			b.ReportMetric(float64(events)/float64(b.N), "events/op")
			b.ReportMetric(float64(hops)/float64(b.N), "hops/op")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(hops), "ns/hop")
			if windows > 0 {
				b.ReportMetric(float64(events)/float64(windows), "events/window")
			}
		})
	}
}

var partsK = flag.Int("parts.k", 16, "BenchmarkFatTreeInParts: the fat-tree's k")

// TestTrainingInParts: a Megatron-LM job (tensor parallelism inside
// servers of four GPUs, each spanning two racks, pipeline sends and
// expert all-to-alls across them, data-parallel rings), replayed on a
// fabric split by racks, is the same on one thread and on several,
// timeline included, and takes about as long as on one engine.
func TestTrainingInParts(t *testing.T) {
	m := chakra.Megatron{Layers: 2, Hidden: 1024, SeqLen: 512, MicroBatch: 1, MicroBatches: 2, TP: 2, PP: 2, DP: 2, EP: 2, GPUFlops: 100e12}
	job, _ := megatronJob(t, m)
	run := func(threads int) (string, TrainingResult) {
		eng := engine.New(5)
		f, err := topology.FatTree(eng, 4, dcConfig(100e9, topology.EECMP))
		if err != nil {
			t.Fatal(err)
		}
		if threads > 0 {
			// Servers of 4 GPUs span two racks of 2 hosts: 4 parts.
			if g, err := f.Split(eng.Rand().Uint64(), 4); err != nil || g.Parts() != 4 {
				t.Fatalf("split with servers of 4 GPUs: %v", err)
			}
		}
		hosts := make([]int, len(job.Ranks)) // two GPUs of every other server
		for r := range hosts {
			hosts[r] = r/2*4 + r%2
		}
		res, err := RunTraining(&f.Topology, TrainingConfig{Job: job, Hosts: hosts, Iterations: 2, Threads: threads,
			Servers: ServerLinks{GPUs: 4, Rate: 3600e9, Latency: 2 * monotime.Microsecond},
			Scheme:  reliability.SelectiveRepeat{NACK: true}, Core: core.Config{InitialRTT: 20 * monotime.Microsecond, Rate: 100e9, Paths: 4}})
		if err != nil {
			t.Fatalf("%d threads: %v", threads, err)
		}
		if threads > 0 {
			f.Gather()
		}
		var b strings.Builder
		fmt.Fprintf(&b, "%+v\nhops %d\n", res, f.Net.Hops)
		return b.String(), res
	}
	want, res := run(1)
	if got, _ := run(2); got != want {
		t.Errorf("2 threads differ from one:\n%s", firstDiff(want, got))
	}
	_, serial := run(0)
	if r := float64(res.Time) / float64(serial.Time); r < 0.9 || r > 1.1 || res.Stats.DataBytes == 0 || len(res.Spans) != len(serial.Spans) {
		t.Errorf("in parts the job takes %v over %d bytes and %d spans, on one engine %v, %d bytes, %d spans (%.2fx)",
			res.Time, res.Stats.DataBytes, len(res.Spans), serial.Time, serial.Stats.DataBytes, len(serial.Spans), r)
	}
}
