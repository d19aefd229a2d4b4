package scenario

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/sim/chakra"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// trainingYAML is a four-rank data-parallel job across two sites 100 km
// apart; %s adds to its workload section.
const trainingYAML = `name: t
topology:
  kind: longhaul
  distance: 100km
  host_rate: 100Gbps
  trunk_rate: 400Gbps
transport:
  scheme: sr-nack
workload:
  kind: training
  count: 3
  layers: 4
  forward: 100us
  backward: 200us
  size: 4MiB
%s`

func runYAML(t *testing.T, file, yaml string) ([]Cell, error) {
	t.Helper()
	s, err := Parse(file, []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return Run(s, Options{})
}

// TestTrainingScenario: a training cell reports one completion per
// iteration, each at least the compute on a GPU; overlapping the
// all-reduces with the backward pass shortens the iteration and exposes
// less of the communication.
func TestTrainingScenario(t *testing.T) {
	cells, err := runYAML(t, "t.yaml", strings.Replace(trainingYAML, "%s", "  hosts: 4\n  overlap: [on, off]\n", 1))
	if err != nil {
		t.Fatal(err)
	}
	on, off := cells[0], cells[1]
	for _, c := range cells {
		tr := c.Training
		if tr == nil || c.Runs != 3 || tr.Ranks != 4 {
			t.Fatalf("%s: %d runs, training %+v; want 3 iterations of 4 ranks", c.Label, c.Runs, tr)
		}
		t.Logf("%s: iteration %.3f ms (p99 %.3f), compute %.3f ms, exposed %.3f ms (%.0f%%)", c.Label,
			1e3*c.Mean, 1e3*c.P99, 1e3*tr.ComputeSec, 1e3*tr.ExposedSec, 100*tr.ExposedShare)
		if tr.ComputeSec < 1.2e-3*0.999 || tr.ComputeSec > 1.2e-3*1.001 || c.Min < tr.ComputeSec {
			t.Errorf("%s: compute %g s per rank and iteration (want 4 x 300us), fastest iteration %g s", c.Label, tr.ComputeSec, c.Min)
		}
		if tr.ExposedShare <= 0 || tr.ExposedShare >= 1 || c.Model == nil || c.Model.Mean != 0 {
			t.Errorf("%s: exposed share %g, model %+v", c.Label, tr.ExposedShare, c.Model)
		}
	}
	if on.Mean >= off.Mean || on.Training.ExposedSec >= off.Training.ExposedSec {
		t.Errorf("overlap: iteration %g s, exposed %g s; without: %g s, %g s", on.Mean, on.Training.ExposedSec, off.Mean, off.Training.ExposedSec)
	}
}

// TestTrainingTrace: the generator's job written as Chakra files beside
// the scenario and replayed from them gives the generator's results, to
// the bit; a trace prefix that names no file, and workload.hosts at odds
// with the trace's ranks, are errors that say so.
func TestTrainingTrace(t *testing.T) {
	dir := t.TempDir()
	traces, err := chakra.DataParallel{Ranks: 4, Layers: 4, ForwardMicros: 100, BackwardMicros: 200, GradientBytes: 4 << 20, Overlap: true}.Traces()
	if err != nil {
		t.Fatal(err)
	}
	writeJob(t, dir, traces)
	generated, err := runYAML(t, "t.yaml", strings.Replace(trainingYAML, "%s", "  hosts: 4\n", 1))
	if err != nil {
		t.Fatal(err)
	}
	replayed, err := runYAML(t, filepath.Join(dir, "t.yaml"), strings.Replace(trainingYAML, "%s", "  trace: job\n", 1))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(generated[0].Timing, replayed[0].Timing) || generated[0].Training.ExposedSec != replayed[0].Training.ExposedSec {
		t.Errorf("from the trace files %+v, %+v; generated %+v, %+v", replayed[0].Timing, replayed[0].Training, generated[0].Timing, generated[0].Training)
	}
	for _, c := range []struct{ extra, want string }{
		{"  trace: nothing\n", "nothing.0.et"},
		{"  trace: job\n  groups: none.json\n", "workload.groups: open"},
		{"  trace: job\n  hosts: 3\n", "the trace has 4 ranks"},
		{"  hosts: 4\n  background: 0.5\n", "workload.background"},
	} {
		_, err := runYAML(t, filepath.Join(dir, "t.yaml"), strings.Replace(trainingYAML, "%s", c.extra, 1))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %q", c.extra, err, c.want)
		}
	}
}

// writeJob writes traces as dir/job.RANK.et.
func writeJob(t *testing.T, dir string, traces []*chakra.Trace) {
	t.Helper()
	for r, tr := range traces {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("job.%d.et", r)))
		if err != nil {
			t.Fatal(err)
		}
		if err := chakra.Write(f, tr); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestTrainingFabric: a training job placed on a leaf-spine fabric,
// packed or across racks, runs and reports the fabric's figures; across
// racks its ring crosses the spines and is no faster, and slower still
// beside other hosts' traffic on the same uplinks.
func TestTrainingFabric(t *testing.T) {
	cells, err := runYAML(t, "f.yaml", `name: f
topology:
  kind: leafspine
  leaves: 4
  spines: 2
  hosts_per_leaf: 4
  host_rate: 100Gbps
workload:
  kind: training
  hosts: 8
  count: 2
  layers: 2
  size: 8MiB
  placement: [packed, fragmented]
  background: [0, 1]
  bg_until: 2ms
`)
	if err != nil {
		t.Fatal(err)
	}
	packed, frag, busy := cells[0], cells[2], cells[3]
	for _, c := range cells {
		t.Logf("%s: iteration %.3f ms, exposed %.0f%%, fabric utilization max %.2f", c.Label, 1e3*c.Mean, 100*c.Training.ExposedShare, c.UtilMax)
		if c.Runs != 2 || len(c.Tiers) == 0 || c.DataBytes == 0 {
			t.Errorf("%s: %d iterations, %d tiers, %d data bytes", c.Label, c.Runs, len(c.Tiers), c.DataBytes)
		}
	}
	if frag.Mean < packed.Mean || frag.UtilMax == 0 || busy.Mean <= frag.Mean {
		t.Errorf("across racks %g s (fabric utilization %g), with background %g s; packed %g s", frag.Mean, frag.UtilMax, busy.Mean, packed.Mean)
	}
}

// TestTrainingMegatronScenario: the Megatron job in a scenario, on a
// leaf-spine with tensor groups inside a rack, and written out as Chakra
// files with its groups and replayed from them, gives the same results;
// hosts that tensor and pipeline degrees do not divide are refused.
func TestTrainingMegatronScenario(t *testing.T) {
	const yaml = `name: m
topology:
  kind: leafspine
  leaves: 2
  spines: 2
  hosts_per_leaf: 4
  host_rate: 100Gbps
workload:
  kind: training
  count: 2
  layers: 4
  hidden: 1024
  seq_len: 512
  micro_batches: 4
  tp: 2
  pp: 2
%s`
	gen, err := runYAML(t, "m.yaml", strings.Replace(yaml, "%s", "  model: megatron\n  hosts: 8\n", 1))
	if err != nil {
		t.Fatal(err)
	}
	c := gen[0]
	t.Logf("iteration %.3f ms, compute %.3f ms, exposed %.0f%%", 1e3*c.Mean, 1e3*c.Training.ComputeSec, 100*c.Training.ExposedShare)
	if c.Runs != 2 || c.Training.Ranks != 8 || c.Mean < c.Training.ComputeSec {
		t.Errorf("%d iterations of %d ranks, %g s against %g s of compute", c.Runs, c.Training.Ranks, c.Mean, c.Training.ComputeSec)
	}
	dir := t.TempDir()
	traces, groups, err := chakra.Megatron{Layers: 4, Hidden: 1024, SeqLen: 512, MicroBatch: 1, MicroBatches: 4, TP: 2, PP: 2, DP: 2, EP: 1,
		GPUFlops: 400e12, Overlap: true}.Traces()
	if err != nil {
		t.Fatal(err)
	}
	writeJob(t, dir, traces)
	f, err := os.Create(filepath.Join(dir, "groups.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := groups.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	replayed, err := runYAML(t, filepath.Join(dir, "m.yaml"), strings.Replace(yaml, "%s", "  trace: job\n  groups: groups.json\n", 1))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Timing, replayed[0].Timing) {
		t.Errorf("from the trace files %+v; generated %+v", replayed[0].Timing, c.Timing)
	}
	if _, err := runYAML(t, "m.yaml", strings.Replace(yaml, "%s", "  model: megatron\n  hosts: 6\n", 1)); err == nil || !strings.Contains(err.Error(), "workload.hosts 6") {
		t.Errorf("6 hosts for tp 2 x pp 2: %v", err)
	}
}

// TestTrainingSprayed: a training job's connections spray over several
// paths as flows' do (transport.qps, transport.select), which reorders
// packets at the receivers, as a single path does not.
func TestTrainingSprayed(t *testing.T) {
	cells, err := runYAML(t, "s.yaml", `name: s
topology:
  kind: leafspine
  leaves: 4
  spines: 4
  hosts_per_leaf: 2
  host_rate: 100Gbps
transport:
  qps: 8
  select: [obs, single]
workload:
  kind: training
  hosts: 8
  placement: fragmented
  count: 1
  layers: 2
  size: 4MiB
`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cells {
		t.Logf("%s: iteration %.3f ms, %d packets out of order", c.Label, 1e3*c.Mean, c.OutOfOrder)
	}
	if cells[0].OutOfOrder == 0 || cells[1].OutOfOrder != 0 {
		t.Errorf("out of order: %d sprayed, %d on one path", cells[0].OutOfOrder, cells[1].OutOfOrder)
	}
}

// TestJobLargerThanFabric: a job with more hosts than the fabric is an
// error that says so, for flows and training alike, not a smaller job;
// so is a fragmented training job that whole servers cannot hold.
func TestJobLargerThanFabric(t *testing.T) {
	for _, kind := range []string{"allreduce", "training"} {
		_, err := runYAML(t, "big.yaml", "name: big\ntopology:\n  kind: leafspine\n  leaves: 2\n  spines: 1\n  hosts_per_leaf: 2\nworkload:\n  kind: "+kind+"\n  hosts: 8\n  count: 1\n")
		if err == nil || !strings.Contains(err.Error(), "on a fabric of 4 hosts") {
			t.Errorf("%s of 8 hosts on 4: %v", kind, err)
		}
	}
	_, err := runYAML(t, "servers.yaml", "name: servers\ntopology:\n  kind: leafspine\n  leaves: 3\n  spines: 1\n  hosts_per_leaf: 4\n  gpus_per_server: 8\nworkload:\n  kind: training\n  hosts: 10\n  count: 1\n  placement: fragmented\n")
	if err == nil || !strings.Contains(err.Error(), "holds 1 of them, 8 GPUs") {
		t.Errorf("10 GPUs in servers of 8 on 12 hosts: %v", err)
	}
}

// TestPlaceGroup: a fragmented job's hosts are distinct and interleaved
// rack by rack; with GPUs in servers, whole servers are drawn and each
// server's GPUs hold consecutive ranks.
func TestPlaceGroup(t *testing.T) {
	f, err := topology.LeafSpine(engine.New(1), 4, 2, 8, topology.FabricConfig{HostRate: 100e9})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name          string
		n, perServer  int
		fragmented    bool
		wantFirstRack bool // rank 1 in rank 0's rack
	}{
		{"packed", 16, 1, false, true},
		{"fragmented hosts", 16, 1, true, false},
		{"fragmented servers of 4", 16, 4, true, true},
		{"fragmented servers of 4, a part server", 10, 4, true, true},
		{"fragmented servers of 5, more than whole ones hold", 32, 5, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			group := placeGroup(rng, f, tt.n, tt.fragmented, 8, tt.perServer)
			if whole := len(f.Hosts) / tt.perServer * tt.perServer; tt.n > whole {
				if len(group) != whole {
					t.Fatalf("%d hosts placed, want the %d of whole servers (the caller says the job does not fit)", len(group), whole)
				}
				return
			}
			if len(group) != tt.n {
				t.Fatalf("%d hosts, want %d", len(group), tt.n)
			}
			seen := map[int]bool{}
			for r, h := range group {
				if seen[h] || h < 0 || h >= len(f.Hosts) {
					t.Fatalf("rank %d on host %d: taken or out of range (%v)", r, h, group)
				}
				seen[h] = true
				if s := tt.perServer; s > 1 && (h/s != group[r/s*s]/s || h%s != r%s) {
					t.Fatalf("rank %d on host %d: not GPU %d of rank %d's server (%v)", r, h, r%s, r/s*s, group)
				}
			}
			if same := group[0]/8 == group[1]/8; same != tt.wantFirstRack {
				t.Fatalf("ranks 0 and 1 in one rack: %v, want %v (%v)", same, tt.wantFirstRack, group)
			}
		})
	}
}
