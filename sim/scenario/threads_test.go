package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/scenarios"
)

// TestFabricInParts: a fabric grid split by racks gives the same cells,
// byte for byte, on one thread and on several, with queue samples,
// several balancers, every flow workload, lossy and under PFC, with and
// without a cable failing and recovering.
func TestFabricInParts(t *testing.T) {
	src := `name: parts
threads: %d
topology:
  kind: [leafspine, fattree]
  k: 4
  leaves: 4
  spines: 2
  hosts_per_leaf: 4
  host_rate: 100Gbps
  queue: 256KiB
  pfc: [off, on]
routing:
  balancer: [e-ecmp, flowlet]
failure:
  links: [0, 1]
  at: 5us
  detect: 10us
  recover: 20us
transport:
  qps: 4
  select: obs
  window: 512KiB
workload:
  kind: [permutation, incast, allreduce, alltoall]
  hosts: 8
  placement: fragmented
  size: 1MiB
metrics:
  queue_sample: 1us
`
	counts := []int{2, 4}
	if testing.Short() { // the race detector's run: a smaller grid, two counts
		src = strings.NewReplacer("[leafspine, fattree]", "fattree", "[e-ecmp, flowlet]", "flowlet",
			"[permutation, incast, allreduce, alltoall]", "[incast, alltoall]").Replace(src)
		counts = counts[:1]
	}
	run := func(threads int) []byte {
		cells := runScenario(t, "parts.yaml", []byte(fmt.Sprintf(src, threads)), 2)
		paused := false
		for _, c := range cells {
			paused = paused || c.Pauses > 0
			if c.Runs == 0 || c.Mean <= 0 || c.Hops == 0 || c.Tiers[1].QueueMaxBytes <= 0 {
				t.Fatalf("%d threads, %s: runs %d mean %v hops %d tier 1 %+v", threads, c.Label, c.Runs, c.Mean, c.Hops, c.Tiers[1])
			}
		}
		if !paused {
			t.Fatalf("%d threads: no cell paused a port; the grid does not reach PFC", threads)
		}
		b, _ := json.Marshal(cells)
		return b
	}
	one := run(1)
	for _, threads := range counts {
		if !bytes.Equal(run(threads), one) {
			t.Errorf("%d threads: cells differ from one thread's", threads)
		}
	}
}

// TestThreadsAuto: by default a fabric of AutoSplitHosts hosts or more
// runs split on one thread, and a smaller one on one engine.
func TestThreadsAuto(t *testing.T) {
	src := `name: x
%s
topology:
  kind: leafspine
  leaves: %d
  spines: 2
  hosts_per_leaf: 16
workload:
  kind: permutation
  hosts: 8
  size: 256KiB
`
	run := func(threads string, leaves int) []byte {
		cells := runScenario(t, "x.yaml", []byte(fmt.Sprintf(src, threads, leaves)), 1)
		b, _ := json.Marshal(cells)
		return b
	}
	for _, tc := range []struct {
		leaves int
		like   string // the threads setting auto runs as
	}{{AutoSplitHosts/16 - 1, "threads: 0"}, {AutoSplitHosts / 16, "threads: 1"}} {
		auto := run("", tc.leaves)
		if !bytes.Equal(auto, run("threads: auto", tc.leaves)) {
			t.Errorf("%d hosts: the default and threads: auto differ", tc.leaves*16)
		}
		if !bytes.Equal(auto, run(tc.like, tc.leaves)) {
			t.Errorf("%d hosts: threads auto runs unlike %s", tc.leaves*16, tc.like)
		}
	}
	if big := AutoSplitHosts / 16; bytes.Equal(run("threads: 0", big), run("threads: 1", big)) {
		t.Error("one engine and the split give the same cells: the test cannot tell them apart")
	}
}

// TestTrainingInParts: a training job's cells, timeline included, are
// the same on one thread and on two.
func TestTrainingInParts(t *testing.T) {
	src := `name: x
threads: %d
topology:
  kind: leafspine
  leaves: 2
  spines: 2
  hosts_per_leaf: 4
  gpus_per_server: 2
workload:
  kind: training
  model: megatron
  tp: 2
  pp: 2
  layers: 2
  hidden: 1024
  seq_len: 512
  micro_batches: 2
  hosts: 8
metrics:
  timeline: on
`
	run := func(threads int) []byte {
		cells := runScenario(t, "x.yaml", []byte(fmt.Sprintf(src, threads)), 1)
		if c := cells[0]; c.Training == nil || c.Training.Timeline == nil || c.Mean <= 0 {
			t.Fatalf("%d threads: %+v", threads, c)
		}
		b, _ := json.Marshal(cells)
		return b
	}
	if !bytes.Equal(run(1), run(2)) {
		t.Error("a training job's cells differ between one thread and two")
	}
}

// TestBuiltinsInParts: every built-in scenario whose points run on a
// fabric gives the same first cell of its quick grid (one iteration of
// its workload), byte for byte, on one thread and on two. (bench/claims.sh and TestClaimsHold judge the
// scenarios on one engine, the default.)
func TestBuiltinsInParts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cell of every built-in scenario twice")
	}
	files, err := fs.Glob(scenarios.FS, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	split := 0
	for _, name := range files {
		data, _ := fs.ReadFile(scenarios.FS, name)
		s, err := Parse(name, data)
		if err != nil {
			t.Fatal(err)
		}
		s.Files = scenarios.FS
		if err := s.Set("workload.count=1"); err != nil { // one iteration of a collective or a job
			t.Fatal(err)
		}
		pt := s.Grid(false)[0]
		if !isFabric(pt.Values["topology.kind"]) {
			continue
		}
		split++
		run := func(threads int) []byte {
			s.Threads = threads
			c, err := RunPoint(s, pt)
			if err != nil {
				t.Fatalf("%s, cell %s, %d threads: %v", s.Name, pt.Label(), threads, err)
			}
			c.WallSec = 0
			b, _ := json.Marshal(c)
			return b
		}
		start := time.Now()
		if !bytes.Equal(run(1), run(2)) {
			t.Errorf("%s, cell %s: one thread and two differ", s.Name, pt.Label())
		}
		t.Logf("%s, cell %s: %v", s.Name, pt.Label(), time.Since(start).Round(time.Millisecond))
	}
	if split < 8 {
		t.Errorf("%d built-ins run on fabrics; want the 8 there were when this test was written", split)
	}
}
