package scenario

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/scenarios"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown top key", "name: x\nseeed: 3\n", `x.yaml:2:1: unknown key "seeed"`},
		{"unknown section key", "name: x\ntopology:\n  los: 1e-3\n", `x.yaml:3:3: unknown key "los" in topology; known keys:`},
		{"compare unknown parameter", "name: x\ncompare: [transport.select, transport.nope]\n", `x.yaml:2:29: compare: want parameter paths such as transport.select`},
		{"compare a mapping", "name: x\ncompare: {a: b}\n", `x.yaml:2:10: compare: want parameter paths`},
		{"bad probability", "name: x\ntopology:\n  loss: 1.5\n", `x.yaml:3:9: topology.loss: "1.5": want a probability in [0, 1)`},
		{"bad list item", "name: x\nworkload:\n  size: [1MiB, lots]\n", `x.yaml:3:9: workload.size: "lots": want a size`},
		{"unquoted scheme in a list", "name: x\ntransport:\n  scheme: [sr, ec:32,8]\n", `quote it`},
		{"bad rate", "name: x\ntopology:\n  host_rate: fast\n", `want a positive rate, like 400Gbps`},
		{"nested list", "name: x\nworkload:\n  size: [[1]]\n", `list items must be plain values`},
		{"missing name", "seed: 1\n", `missing name`},
		{"duplicate key", "name: x\nname: y\n", `key "name" given twice`},
		{"bad yaml", "name: [x\n", `not valid YAML`},
		{"bad seed", "name: x\nseed: -1\n", `seed: want a non-negative integer`},
		{"bad threads", "name: x\nthreads: -1\n", `x.yaml:2:10: threads: want auto (the default: split fabrics of 1024 hosts or more), 0 (one engine) or the threads a fabric point runs on, 1..1024`},
		{"too many threads", "name: x\nthreads: 5000\n", `threads: want auto`},
		{"quick unknown", "name: x\nquick:\n  workload.sise: 1\n", `quick: unknown parameter "workload.sise"`},
		{"empty list", "name: x\ntopology:\n  loss: []\n", `empty list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestGridAndOverrides(t *testing.T) {
	s, err := Parse("g.yaml", []byte(`name: g
topology:
  loss: [1e-3, 1e-2]
transport:
  scheme: [sr, "ec:32,8", xor]
workload:
  size: 1MiB
quick:
  topology.loss: 1e-3
`))
	if err != nil {
		t.Fatal(err)
	}
	if got := len(s.Grid(true)); got != 6 {
		t.Fatalf("full grid has %d points, want 2 x 3", got)
	}
	quick := s.Grid(false)
	if len(quick) != 3 || quick[0].Values["topology.loss"] != "1e-3" {
		t.Fatalf("quick grid = %d points, first %v", len(quick), quick[0].Values)
	}
	if quick[1].Label() != "scheme=ec:32,8" || quick[1].Values["workload.size"] != "1MiB" {
		t.Fatalf("point 1: label %q values %v", quick[1].Label(), quick[1].Values)
	}
	if quick[0].Values["transport.mtu"] != "4096" {
		t.Fatalf("defaults not filled in: %v", quick[0].Values)
	}
	if err := s.Set("transport.scheme=[sr-nack,ec:4,2]"); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("topology.loss=0"); err != nil {
		t.Fatal(err)
	}
	g := s.Grid(false)
	if len(g) != 2 || g[1].Values["transport.scheme"] != "ec:4,2" || g[0].Values["topology.loss"] != "0" {
		t.Fatalf("after --set: %d points, %v", len(g), g)
	}
	for _, bad := range []string{"nokey", "topology.speed=1", "topology.loss=2", "workload.size=[1MiB"} {
		if err := s.Set(bad); err == nil {
			t.Errorf("--set %s accepted", bad)
		}
	}
}

// TestAutoArity checks that topology.k auto picks, per cell, the smallest
// fat-tree that holds the job, with a host to spare for background traffic.
func TestAutoArity(t *testing.T) {
	for _, c := range []struct {
		hosts, background, want string
	}{
		{"2", "0", "2"},       // k=2 holds two hosts
		{"16", "0", "4"},      // exactly k^3/4
		{"16", "0.5", "6"},    // one more for the background
		{"64", "0.5", "8"},    // 128 hosts
		{"1024", "0", "16"},   // exactly
		{"1024", "0.5", "18"}, // 1458 hosts
		{"65536", "0", "64"},  // the largest
		{"65536", "0.1", "auto"},
	} {
		s, err := Parse("a.yaml", []byte("name: a\ntopology:\n  kind: fattree\n  k: auto\nworkload:\n  hosts: "+c.hosts+"\n  background: "+c.background+"\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Grid(true)[0].Values["topology.k"]; got != c.want {
			t.Errorf("hosts %s background %s: k = %s, want %s", c.hosts, c.background, got, c.want)
		}
	}
	for _, bad := range []string{"7", "66", "big"} {
		if _, err := Parse("a.yaml", []byte("name: a\ntopology:\n  k: "+bad+"\n")); err == nil || !strings.Contains(err.Error(), "auto") {
			t.Errorf("k: %s: error %v, want one that offers auto", bad, err)
		}
	}
}

// TestShippedScenarios checks every scenario in scenarios/ parses, and
// that its description and differences state no figure of their own:
// parameters' values come in through ${path}, which Expand fills in from
// the run.
func TestShippedScenarios(t *testing.T) {
	entries, err := scenarios.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, _ := scenarios.FS.ReadFile(e.Name())
		sc, err := Parse(e.Name(), data)
		if err != nil {
			t.Errorf("%s: %v", e.Name(), err)
			continue
		}
		n++
		for what, text := range map[string]string{"description": sc.Description, "differences": sc.Differences} {
			if fig := Figure(text); fig != "" {
				t.Errorf("%s: %s states the figure %q: write ${path} for a parameter, or leave it to the report", e.Name(), what, fig)
			}
		}
	}
	if n < 7 {
		t.Fatalf("found %d scenarios, want the seven built-in ones", n)
	}
}

// TestRunDeterministic runs a small lossy grid twice, with different
// worker counts: the results must be identical.
func TestRunDeterministic(t *testing.T) {
	src := []byte(`name: det
topology:
  trunk_delay: 1ms
  loss: [1e-3, 2e-2]
  host_rate: 100Gbps
  trunk_rate: 100Gbps
transport:
  scheme: [sr-nack, "ec:32,8"]
workload:
  size: [200KiB, 3MiB]
  count: 5
`)
	run := func(workers int) []byte {
		b, _ := json.Marshal(runScenario(t, "det.yaml", src, workers))
		return b
	}
	a, b := run(1), run(3)
	if !bytes.Equal(a, b) {
		t.Fatal("same scenario and seed, different results")
	}
	var cells []Cell
	if err := json.Unmarshal(a, &cells); err != nil || len(cells) != 8 {
		t.Fatalf("%d cells, %v", len(cells), err)
	}
	for _, c := range cells {
		if c.Runs != 5 || c.Mean <= 0 || c.Model == nil {
			t.Fatalf("cell %s: runs %d mean %v model %v", c.Label, c.Runs, c.Mean, c.Model)
		}
	}
}

// TestSimulationMatchesModel checks the simulator against the analytic
// model, an independent calculation, in cells where the model applies:
// the means must agree within Tolerance (5%), or be within sampling error.
func TestSimulationMatchesModel(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 6000 messages")
	}
	cells := runScenario(t, "agree.yaml", []byte(`name: agree
topology:
  trunk_delay: 12.5ms
  loss: [1e-3, 1e-2]
transport:
  scheme: [sr, "ec:32,8", "xor:32,8"]
workload:
  size: 1MiB
  count: 1000
`), 0)
	for _, c := range cells {
		m := c.Model
		if m == nil || m.Mean == 0 {
			t.Errorf("%s: no model prediction (%+v)", c.Label, m)
			continue
		}
		t.Logf("%-28s sim %.3f ms model %.3f ms (%+.1f%%) %s", c.Label, 1e3*c.Mean, 1e3*m.Mean, 100*m.Error, m.Note)
		if math.Abs(m.Error) > Tolerance && !strings.Contains(m.Note, "standard errors") {
			t.Errorf("%s: simulated mean %.3f ms, model %.3f ms: %+.1f%%", c.Label, 1e3*c.Mean, 1e3*m.Mean, 100*m.Error)
		}
	}
}

// TestFabricScenario runs a small datacenter grid twice: it must complete,
// report fabric metrics, and give identical results.
func TestFabricScenario(t *testing.T) {
	src := []byte(`name: dc
topology:
  kind: leafspine
  leaves: 4
  spines: 2
  hosts_per_leaf: 2
  host_rate: 100Gbps
  queue: 1MiB
routing:
  balancer: [ecmp, e-ecmp, te]
failure:
  links: 1
  at: 20us
  detect: 20us
transport:
  qps: 4
  select: rr
  window: 512KiB
workload:
  kind: allreduce
  hosts: 8
  placement: fragmented
  size: 4MiB
  count: 2
metrics:
  queue_sample: 500ns
`)
	a, b := runScenario(t, "dc.yaml", src, 2), runScenario(t, "dc.yaml", src, 2)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatal("same scenario and seed, different results")
	}
	for _, c := range a {
		if c.Runs != 2 || c.BusBWBps <= 0 || c.UtilMax <= 0 || c.Hops == 0 {
			t.Fatalf("%s: runs %d busbw %v util %v hops %d", c.Label, c.Runs, c.BusBWBps, c.UtilMax, c.Hops)
		}
		if len(c.Tiers) != 2 || c.Tiers[0].Name != "host" || c.Tiers[0].Ports != 8 || c.Tiers[1].Ports != 16 {
			t.Fatalf("%s: tiers %+v", c.Label, c.Tiers)
		}
		for _, tm := range c.Tiers {
			if tm.QueueP50Bytes > tm.QueueP99Bytes || tm.QueueP99Bytes > tm.QueueMaxBytes ||
				tm.QueueMaxBytes > float64(tm.PeakBytes) || tm.PeakBytes == 0 || tm.UtilMax <= 0 {
				t.Errorf("%s: tier %+v: inconsistent", c.Label, tm)
			}
		}
	}
}

// TestEveryKeyDocumented keeps docs/scenarios.md, the reference users
// read, in step with what the parser accepts.
func TestEveryKeyDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range append(knownIn(""), topLevel...) {
		if !strings.Contains(string(doc), "`"+k+"`") {
			t.Errorf("docs/scenarios.md does not describe %s", k)
		}
	}
}

// TestSwitchModelScenario runs an incast through shared switch memory with
// RED marking, lossy and lossless, with a spine failing and coming back:
// PFC must turn drops into pauses, and every flow must arrive.
func TestSwitchModelScenario(t *testing.T) {
	src := []byte(`name: sw
topology:
  kind: leafspine
  leaves: 2
  spines: 2
  hosts_per_leaf: 4
  host_rate: 100Gbps
  buffer: 512KiB
  ecn: 32KiB
  ecn_max: 128KiB
  ecn_pmax: 0.5
  pfc: [off, on]
  pfc_xoff: 64KiB
failure:
  switches: 1
  at: 30us
  detect: 10us
  recover: 100us
transport:
  scheme: sr-nack
  window: 512KiB
workload:
  kind: incast
  hosts: 8
  size: 1MiB
  count: 1
`)
	cells := runScenario(t, "sw.yaml", src, 2)
	lossy, lossless := cells[0], cells[1]
	if lossy.Runs != 7 || lossless.Runs != 7 {
		t.Fatalf("flows completed: %d lossy, %d lossless; want 7", lossy.Runs, lossless.Runs)
	}
	if lossy.Drops == 0 || lossy.Marked == 0 || lossy.Pauses != 0 {
		t.Errorf("lossy: %d drops, %d marks, %d pauses; want drops and marks, no pauses", lossy.Drops, lossy.Marked, lossy.Pauses)
	}
	if lossless.Pauses == 0 || lossless.Marked == 0 {
		t.Errorf("lossless: %d pauses, %d marks; want both", lossless.Pauses, lossless.Marked)
	}
	// The spine failure loses what was on its cables, PFC or not; apart
	// from that the lossless fabric drops nothing.
	for _, tm := range lossless.Tiers {
		if tm.HeadroomDrops != 0 || tm.Drops != 0 {
			t.Errorf("lossless tier %s: %d buffer and %d headroom drops", tm.Name, tm.Drops, tm.HeadroomDrops)
		}
	}
}

// TestFabricParameterConflicts checks that parameters that contradict
// each other are refused with the keys named.
func TestFabricParameterConflicts(t *testing.T) {
	base := "name: c\ntopology:\n  kind: leafspine\n  leaves: 2\n  spines: 2\n  hosts_per_leaf: 2\n%s\nworkload:\n  kind: permutation\n  hosts: 4\n  size: 64KiB\n  count: 1\n"
	for _, tc := range []struct{ extra, want string }{
		{"  pfc: on\n  pfc_xoff: 64KiB\n  pfc_xon: 128KiB", "topology.pfc_xon"},
		{"  fabric_rate: 100Gbps\n  oversubscription: 2", "topology.oversubscription"},
		{"  ecn: 10KiB\n  ecn_max: 20KiB\n  ecn_pmax: 0", "topology.ecn_pmax"},
		{"failure:\n  switches: 3", "failure.switches 3"},
	} {
		s, err := Parse("c.yaml", []byte(strings.Replace(base, "%s", tc.extra, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(s, Options{Workers: 1}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want one naming %s", tc.extra, err, tc.want)
		}
	}
}

// runScenario parses and runs a scenario, failing the test on any error,
// with wall times zeroed: what is left must be deterministic.
func runScenario(t *testing.T, name string, src []byte, workers int) []Cell {
	t.Helper()
	s, err := Parse(name, src)
	if err != nil {
		t.Fatal(err)
	}
	cells, err := Run(s, Options{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cells {
		cells[i].WallSec = 0
	}
	return cells
}

func TestClaimErrors(t *testing.T) {
	base := "name: c\ntransport:\n  cc: [none, nscc]\nclaims:\n"
	for _, tc := range []struct{ claims, want string }{
		{"  - claim: x\n    better: transport.cc=none\n", "needs claim"},
		{"  - claim: x\n    better: transport.cc=none\n    worse: transport.select=rr\n", "same parameters"},
		{"  - claim: x\n    better: transport.cc=none\n    worse: transport.cc=none\n", "different values"},
		{"  - claim: x\n    better: transport.cc=none\n    worse: transport.cc=cubic\n", "c.yaml:7:12: claims: transport.cc"},
		{"  - claim: x\n    better: transport.cc=none\n    worse: transport.cc=dcqcn\n", "not in the scenario's grid"},
		{"  - claim: x\n    better: transport.cc=none\n    worse: transport.cc=nscc\n    metric: speed\n", "want mean, median, sender_mean, p99"},
		{"  - claim: x\n    better: transport.cc=none\n    worse: transport.cc=nscc\n    factor: 10\n", "magnitude: at least 10x"},
		{"  - claim: x\n    better: transport.cc=none\n    worse: transport.cc=nscc\n    magnitude: 40%\n", `want "about X"`},
		{"  - claim: x\n    source: me\n    better: transport.cc=none\n    worse: transport.cc=nscc\n", "want paper"},
		{"  - claim: x\n    better: transport.cc=none\n    worse: transport.cc=nscc\n    tolerance: 100%\n", "from 0 to below 1"},
		{"  - claim: x\n    better: transport.cc=none\n    worse: transport.cc=nscc\n    tolerance: lots\n", "like 5%"},
		{"  - claim: x\n    better: cc=none\n    worse: transport.cc=nscc\n", "parameter=value"},
		{"  - claim: x\n    better: transport.cc=none\n    worse: transport.cc=nscc\n    why: no\n", `unknown key "why"`},
	} {
		_, err := Parse("c.yaml", []byte(base+tc.claims))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.claims, err, tc.want)
		}
	}
	s, err := Parse("c.yaml", []byte(base+"  - claim: x\n    source: sdrnet\n    better: transport.cc=none\n    worse: transport.cc=nscc\n    metric: retx_bytes\n    magnitude: at least 10x\n"))
	if err != nil || len(s.Claims) != 1 || s.Claims[0].Magnitude.String() != "at least 10x" || s.Claims[0].Metric != "retx_bytes" || s.Claims[0].Source != "sdrnet" {
		t.Fatalf("%+v, %v", s, err)
	}
}

// TestClaimValueWithComma: a scheme's parameters hold a comma, which must
// not split the setting.
func TestClaimValueWithComma(t *testing.T) {
	src := "name: c\ntransport:\n  scheme: [sr, \"ec:32,8\"]\n  cc: [none, nscc]\nclaims:\n" +
		"  - claim: x\n    better: transport.scheme=ec:32,8, transport.cc=nscc\n    worse: transport.scheme=sr, transport.cc=nscc\n"
	s, err := Parse("c.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"transport.scheme": "ec:32,8", "transport.cc": "nscc"}
	if got := s.Claims[0].Better; !maps.Equal(got, want) {
		t.Fatalf("better = %v, want %v", got, want)
	}
}

func TestProse(t *testing.T) {
	for _, tt := range []struct{ text, figure string }{
		{"a 31-to-1 incast", "31-to-1"},
		{"(256 KiB each)", "256"},
		{"p99 of ns-3 HPCC over E-ECMP with ec:32,8", ""},
		{"messages of ${workload.size}", ""},
		{"up to 6.5x", "6.5x"},
	} {
		if got := Figure(tt.text); got != tt.figure {
			t.Errorf("Figure(%q) = %q, want %q", tt.text, got, tt.figure)
		}
	}
	cells := []Cell{{Params: map[string]string{"workload.size": "1MiB"}}, {Params: map[string]string{"workload.size": "1GiB"}},
		{Params: map[string]string{"workload.size": "1MiB"}}}
	if got := Expand("messages of ${workload.size} at ${topology.loss}", cells); got != "messages of 1MiB, 1GiB at ${topology.loss}" {
		t.Errorf("Expand: %q", got)
	}
	_, err := Parse("bad.yaml", []byte("name: x\ndescription: a ${topology.nope} link\n"))
	if err == nil || !strings.Contains(err.Error(), "bad.yaml:2") || !strings.Contains(err.Error(), "${topology.nope} names no parameter") {
		t.Errorf("unknown placeholder: %v", err)
	}
}

// TestQPCacheScenario: nic.qp_cache 0 gives exactly the run without the
// nic section; a cache smaller than the peers an all-to-all needs misses,
// stalls the NICs and slows the collective.
func TestQPCacheScenario(t *testing.T) {
	base := `name: qpc
topology:
  kind: leafspine
  leaves: 4
  spines: 2
  hosts_per_leaf: 4
  host_rate: 100Gbps
  queue: 1MiB
transport:
  scheme: sr-nack
workload:
  kind: alltoall
  hosts: 16
  size: 1MiB
  count: 1
`
	without := runScenario(t, "qpc.yaml", []byte(base), 1)
	off := runScenario(t, "qpc.yaml", []byte(base+"nic:\n  qp_cache: 0\n"), 1)
	ja, _ := json.Marshal(without)
	jb, _ := json.Marshal(off)
	if !bytes.Equal(ja, jb) || without[0].QPCacheMissRate != 0 || without[0].NICStallSec != 0 {
		t.Fatal("nic.qp_cache 0 changed the results")
	}
	cells := runScenario(t, "qpc.yaml", []byte(base+"nic:\n  qp_cache: [64, 4]\n  qp_miss: 2us\n"), 1)
	roomy, small := cells[0], cells[1]
	if roomy.QPCacheMissRate <= 0 || small.QPCacheMissRate <= 2*roomy.QPCacheMissRate || small.NICStallSec <= roomy.NICStallSec {
		t.Errorf("miss rate %.3f with 64 contexts, %.3f with 4; stall %v s against %v s", roomy.QPCacheMissRate, small.QPCacheMissRate,
			roomy.NICStallSec, small.NICStallSec)
	}
	// Room for every context: each host misses each of its 15 peers once.
	if want := 16 * 15 * 2e-6; math.Abs(roomy.NICStallSec-want) > 1e-12 {
		t.Errorf("stall with room for all: %g s, want %g (one 2us miss per host and peer)", roomy.NICStallSec, want)
	}
	if !(without[0].Mean < small.Mean) {
		t.Errorf("mean %v without the cache model, %v with 4 contexts: want slower", without[0].Mean, small.Mean)
	}
}

func TestMagnitude(t *testing.T) {
	for _, tt := range []struct {
		text     string
		want     string // String(); "" for a parse error
		lo, hi   float64
		verdicts bool
	}{
		{"about 1.4x", "about 1.4x", 1.35, 1.5, true},
		{"about 1.4x", "about 1.4x", 2.6, 5.5, false}, // Meta's E-ECMP against our 2.6-5.5x
		{"about 1.4x", "about 1.4x", 1.2, 1.4, false}, // gain 0.2 is under 0.4/1.5
		{"up to 15x", "up to 15x", 3, 14, true},
		{"up to 15x", "up to 15x", 3, 71.9, false},
		{"up to 4x", "up to 4x", 1.2, 1.89, false},
		{"at least 10x", "at least 10x", 10, 500, true},
		{"at least 10x", "at least 10x", 9.9, 500, false},
		{"1.05-1.1x", "1.05-1.1x", 1.004, 1.004, false}, // a tie is not 5-10% better
		{"1.05-1.1x", "1.05-1.1x", 1.04, 1.12, true},
		{" 3 - 6x ", "3-6x", 3.2, 5.9, true},
		{"about 40%", "", 0, 0, false},
		{"about 0.5x", "", 0, 0, false},
		{"6-3x", "", 0, 0, false},
		{"up to 3-6x", "", 0, 0, false},
		{"lots", "", 0, 0, false},
	} {
		m, err := ParseMagnitude(tt.text)
		if tt.want == "" {
			if err == nil || !strings.Contains(err.Error(), "like \"about 1.4x\"") {
				t.Errorf("%q: %v, want a parse error with an example", tt.text, err)
			}
			continue
		}
		if err != nil || m.String() != tt.want {
			t.Errorf("%q: %v %q, want %q", tt.text, err, m, tt.want)
			continue
		}
		if got := m.Matches(tt.lo, tt.hi); got != tt.verdicts {
			t.Errorf("%q matches %g-%gx = %v, want %v", tt.text, tt.lo, tt.hi, got, tt.verdicts)
		}
	}
}
