package report

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

func TestJudge(t *testing.T) {
	cell := func(cc, kind string, mean float64, retx uint64) scenario.Cell {
		return scenario.Cell{Runs: 1, Timing: scenario.Timing{Mean: mean}, RetxBytes: retx,
			Params: map[string]string{"transport.cc": cc, "workload.kind": kind, "topology.pfc": "off"}}
	}
	cells := []scenario.Cell{
		cell("none", "incast", 2, 1000), cell("dcqcn", "incast", 3, 50),
		cell("none", "allreduce", 1, 10), cell("dcqcn", "allreduce", 0.9, 0),
	}
	better, worse := map[string]string{"transport.cc": "none"}, map[string]string{"transport.cc": "dcqcn"}
	incast := map[string]string{"workload.kind": "incast"}
	mag := func(s string) scenario.Magnitude {
		m, err := scenario.ParseMagnitude(s)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, tt := range []struct {
		name         string
		claim        scenario.Claim
		holds, total int
		outcome      string
		summary      string
	}{
		{"mean everywhere", scenario.Claim{Better: better, Worse: worse}, 1, 2, OutcomeFails,
			"direction holds in 1 of 2 settings; ratio 0.900-1.500x"},
		{"where", scenario.Claim{Better: better, Worse: worse, Where: incast}, 1, 1, OutcomeHolds,
			"direction holds; ratio 1.500x"},
		{"about met", scenario.Claim{Better: better, Worse: worse, Where: incast, Magnitude: mag("about 1.4x")}, 1, 1, OutcomeHolds,
			"direction holds; magnitude 1.500x against about 1.4x: met"},
		{"about off", scenario.Claim{Better: better, Worse: worse, Where: incast, Magnitude: mag("about 3x")}, 1, 1, OutcomeMagnitudeOff,
			"direction holds; magnitude 1.500x against about 3x: off"},
		{"retx at least", scenario.Claim{Better: worse, Worse: better, Metric: "retx_bytes", Magnitude: mag("at least 10x")}, 2, 2, OutcomeHolds,
			"direction holds in 2 of 2 settings; magnitude 20x to unbounded (none against some) against at least 10x: met"},
		{"retx floor too high", scenario.Claim{Better: worse, Worse: better, Metric: "retx_bytes", Magnitude: mag("at least 30x")}, 2, 2, OutcomeMagnitudeOff,
			"direction holds in 2 of 2 settings; magnitude 20x to unbounded (none against some) against at least 30x: off"},
		{"within a tolerance", scenario.Claim{Better: worse, Worse: better, Tolerance: 0.12}, 1, 2, OutcomeFails,
			"direction holds in 1 of 2 settings"},
		{"wide tolerance", scenario.Claim{Better: worse, Worse: better, Tolerance: 0.55}, 2, 2, OutcomeHolds,
			"direction holds in 2 of 2 settings"},
		{"no pair", scenario.Claim{Better: better, Worse: map[string]string{"transport.cc": "nscc"}}, 0, 0, OutcomeNotJudged,
			"not judged: this run has no cell with transport.cc=nscc"},
		{"no tail", scenario.Claim{Better: better, Worse: worse, Metric: "p999"}, 0, 0, OutcomeNotJudged,
			"not judged: the cells have no p999 figure (a p99.9 needs 1000 runs per cell; these have at most 1)"},
		{"no model", scenario.Claim{Better: better, Worse: worse, Metric: "model_p999"}, 0, 0, OutcomeNotJudged,
			"not judged: the cells have no model_p999 figure (the analytic model does not apply to them)"},
	} {
		v := Judge(cells, []scenario.Claim{tt.claim})[0]
		if v.Holds != tt.holds || len(v.Groups) != tt.total || v.Outcome != tt.outcome || !strings.HasPrefix(v.Summary(), tt.summary) {
			t.Errorf("%s: holds %d of %d, %s: %q", tt.name, v.Holds, len(v.Groups), v.Outcome, v.Summary())
		}
	}
	// sender_mean judges SDR-RDMA's timing: here the order flips.
	cells[0].AtSender, cells[1].AtSender = &scenario.Timing{Mean: 5}, &scenario.Timing{Mean: 4}
	if v := Judge(cells[:2], []scenario.Claim{{Better: better, Worse: worse, Metric: "sender_mean"}})[0]; v.Holds != 0 || len(v.Groups) != 1 {
		t.Errorf("sender_mean: %+v", v)
	}
	// Cells not timed at the sender are not judged by sender_mean (their
	// receiver mean is not put in its place).
	if v := Judge(cells[2:], []scenario.Claim{{Better: better, Worse: worse, Metric: "sender_mean"}})[0]; len(v.Groups) != 0 || v.Judged ||
		!strings.Contains(v.Reason, "not timed at the sender") {
		t.Errorf("sender_mean without sender timing judged: %+v", v)
	}
	// model_mean judges the analytic model's figures for the same cells.
	cells[0].Model, cells[1].Model = &scenario.Prediction{Mean: 4}, &scenario.Prediction{Mean: 8}
	if v := Judge(cells[:2], []scenario.Claim{{Better: better, Worse: worse, Metric: "model_mean"}})[0]; v.Holds != 1 || v.RatioText() != "2x" {
		t.Errorf("model_mean: %+v", v)
	}
	v := Judge(cells, []scenario.Claim{{Better: better, Worse: worse, Where: incast}})[0]
	if g := v.Groups[0]; g.Better != 2 || g.Worse != 3 || g.Figures() != "2s against 3s (1.50x)" {
		t.Errorf("pair %+v: %q", g, g.Figures())
	}
}

// TestJudgeTies: a difference within the report's noise rule is no win,
// so a claim that one setting beats another does not hold there; a claim
// with a tolerance is about being as good, and a tie holds.
func TestJudgeTies(t *testing.T) {
	cell := func(sel string, mean, stderr float64) scenario.Cell {
		return scenario.Cell{Runs: 10, Timing: scenario.Timing{Mean: mean, StdErr: stderr}, Params: map[string]string{"transport.select": sel}}
	}
	better, worse := map[string]string{"transport.select": "obs"}, map[string]string{"transport.select": "dwrr"}
	for _, tt := range []struct {
		name              string
		obs, dwrr         scenario.Cell
		tolerance         float64
		holds, ties       int
		outcome, contains string
	}{
		{"a clear win", cell("obs", 1, 0.01), cell("dwrr", 1.2, 0.01), 0, 1, 0, OutcomeHolds, "1.200x"},
		{"within 1%", cell("obs", 1, 0), cell("dwrr", 1.004, 0), 0, 0, 1, OutcomeFails, "(1 a tie)"},
		{"within the noise", cell("obs", 1, 0.1), cell("dwrr", 1.2, 0.1), 0, 0, 1, OutcomeFails, "(1 a tie)"},
		{"as good within 5%", cell("obs", 1.004, 0), cell("dwrr", 1, 0), 0.05, 1, 0, OutcomeHolds, "direction holds"},
	} {
		v := Judge([]scenario.Cell{tt.obs, tt.dwrr}, []scenario.Claim{{Better: better, Worse: worse, Tolerance: tt.tolerance}})[0]
		if v.Holds != tt.holds || v.Ties != tt.ties || v.Outcome != tt.outcome || !strings.Contains(v.Summary(), tt.contains) {
			t.Errorf("%s: holds %d, ties %d, %s: %q", tt.name, v.Holds, v.Ties, v.Outcome, v.Summary())
		}
	}
}

// TestJudgeMedian: runs with a heavy tail tie on their means, while a
// claim judged on the median takes its tie rule from the runs' ranks.
func TestJudgeMedian(t *testing.T) {
	cell := func(sel string, runs ...float64) scenario.Cell {
		c := scenario.Cell{Runs: len(runs), Params: map[string]string{"transport.select": sel}}
		sorted := slices.Sorted(slices.Values(runs))
		c.Completions, c.P50 = runs, scenario.Percentile(sorted, 0.5)
		for _, r := range runs {
			c.Mean += r / float64(len(runs))
		}
		for _, r := range runs {
			c.StdErr += (r - c.Mean) * (r - c.Mean) / float64(len(runs)-1)
		}
		c.StdErr = math.Sqrt(c.StdErr / float64(len(runs)))
		return c
	}
	fast := cell("obs", 0.753, 0.571, 0.527, 0.512, 0.521)
	heavy := cell("single", 7.475, 2.234, 3.679, 0.579, 0.579)
	mixed := cell("obs", 4.056, 4.479, 1.343, 6.669, 0.441)
	lowerMixed := cell("obs", 0.5, 3.0, 2.0, 8.0, 0.6) // a lower median, but no rank test tells it apart
	better, worse := map[string]string{"transport.select": "obs"}, map[string]string{"transport.select": "single"}
	for _, tt := range []struct {
		name    string
		cells   []scenario.Cell
		metric  string
		outcome string
	}{
		{"mean of a heavy tail", []scenario.Cell{fast, heavy}, "mean", OutcomeFails},
		{"median, ranks apart", []scenario.Cell{fast, heavy}, "median", OutcomeHolds},
		{"median, ranks mixed", []scenario.Cell{mixed, heavy}, "median", OutcomeFails},
		{"lower median, ranks mixed", []scenario.Cell{lowerMixed, heavy}, "median", OutcomeFails},
	} {
		v := Judge(tt.cells, []scenario.Claim{{Better: better, Worse: worse, Metric: tt.metric}})[0]
		if v.Outcome != tt.outcome {
			t.Errorf("%s: %s: %q", tt.name, v.Outcome, v.Summary())
		}
	}
}

// TestSortedVerdicts: failing claims come first, holding ones last.
func TestSortedVerdicts(t *testing.T) {
	vs := []Verdict{{Claim: "a", Outcome: OutcomeHolds}, {Claim: "b", Outcome: OutcomeNotJudged},
		{Claim: "c", Outcome: OutcomeMagnitudeOff}, {Claim: "d", Outcome: OutcomeFails}, {Claim: "e", Outcome: OutcomeHolds}}
	var got string
	for _, v := range SortedVerdicts(vs) {
		got += v.Claim
	}
	if got != "dcbae" {
		t.Errorf("order %q, want dcbae", got)
	}
	if s := tally(vs); s != "1 fails, 1 magnitude off, 1 not judged, 2 hold" {
		t.Errorf("tally %q", s)
	}
}

// TestJudgeDerivedParameter checks that a parameter following the
// compared one (topology.k auto follows workload.hosts) does not keep the
// cells apart, while one that varies on its own still groups them.
func TestJudgeDerivedParameter(t *testing.T) {
	cell := func(hosts, k, scheme string, mean float64) scenario.Cell {
		return scenario.Cell{Runs: 1, Timing: scenario.Timing{Mean: mean},
			Params: map[string]string{"workload.hosts": hosts, "topology.k": k, "transport.scheme": scheme}}
	}
	cells := []scenario.Cell{
		cell("64", "8", "gbn", 1), cell("1024", "18", "gbn", 3),
		cell("64", "8", "csaud", 1), cell("1024", "18", "csaud", 0.5),
	}
	v := Judge(cells, []scenario.Claim{{Better: map[string]string{"workload.hosts": "64"}, Worse: map[string]string{"workload.hosts": "1024"}}})[0]
	if len(v.Groups) != 2 || v.Holds != 1 {
		t.Errorf("hosts 64 against 1024 on fabrics of their size: %+v", v)
	}
	// Comparing schemes, k varies with the hosts, not with the scheme:
	// the groups are the two sizes.
	v = Judge(cells, []scenario.Claim{{Better: map[string]string{"transport.scheme": "csaud"}, Worse: map[string]string{"transport.scheme": "gbn"}}})[0]
	if len(v.Groups) != 2 || v.Holds != 1 {
		t.Errorf("csaud against gbn at two sizes: %+v", v)
	}
}
