package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/internal/units"
	"github.com/sdrnet/sdrnet/sim/scenario"
)

var (
	testLosses  = []string{"1e-4", "1e-2"}
	testSizes   = []string{"1MiB", "1GiB"}
	testSchemes = []string{"sr", "sr-nack", "ec:32,8", "xor:32,8"}
	// Made-up mean completion times, by loss, size and scheme.
	testMeans = [2][2][4]float64{
		{{0.0130, 0.0128, 0.0140, 0.0145}, {0.100, 0.060, 0.040, 0.042}},
		{{0.050, 0.030, 0.0125, 0.013}, {0.400, 0.250, 0.020, 0.025}},
	}
)

// testRun builds a 2 losses x 2 sizes x 4 schemes grid. Speedups (best SR
// over best EC) are 0.91, 1.50, 2.40 and 12.5 on the mean; p99.9 is 3x the
// mean for SR and 1.2x for EC, so 2.5 times those at the tail. The model
// is absent, within 2%, off by 20% and not applicable in turn.
func testRun() *Run {
	r := &Run{Scenario: "test-grid", File: "scenarios/test.yaml", Description: "A made-up grid.", Seed: 7,
		Params: []scenario.Param{
			{Path: keyLoss, Values: testLosses, Pos: "test.yaml:3:9"},
			{Path: keyScheme, Values: testSchemes, Pos: "test.yaml:5:11"},
			{Path: "transport.mtu", Values: []string{"4096"}, Pos: "test.yaml:6:8"},
			{Path: keySize, Values: testSizes, Pos: "test.yaml:8:9"},
		}}
	for li, loss := range testLosses {
		for si, scheme := range testSchemes {
			for zi, size := range testSizes {
				mean := testMeans[li][zi][si]
				tail := 1.2
				if schemeFamily(scheme) == "sr" {
					tail = 3
				}
				i := len(r.Cells)
				// 1000 runs, the slowest two at the tail: p99.9 is the
				// 999th of them.
				comps := make([]float64, 1000)
				for k := range comps {
					comps[k] = mean
				}
				comps[3], comps[500] = mean*tail, mean*tail
				c := scenario.Cell{Index: i, Label: fmt.Sprintf("loss=%s scheme=%s size=%s", loss, scheme, size),
					Params: map[string]string{keyLoss: loss, keyScheme: scheme, keySize: size, "transport.mtu": "4096"},
					Seed:   uint64(1000 + i), Runs: len(comps), GoodputBps: 1.5e9, DataBytes: 1 << 20,
					Timing: scenario.Timing{Mean: mean, StdErr: mean / 100, P50: mean, P99: mean,
						P999: mean * tail, Min: mean, Max: mean * tail, Completions: comps}}
				switch i % 4 {
				case 1:
					c.Model = &scenario.Prediction{Mean: mean / 1.02, Error: 0.02}
				case 2:
					c.Model = &scenario.Prediction{Mean: mean / 1.2, P999: mean, Error: 0.2, Note: "a note"}
				case 3:
					c.Model = &scenario.Prediction{Note: "no model for this"}
				}
				r.Cells = append(r.Cells, c)
			}
		}
	}
	return r
}

func html(t *testing.T, r *Run) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestHTMLDeterministic(t *testing.T) {
	a, b := html(t, testRun()), html(t, testRun())
	if a != b {
		t.Fatal("two renderings of the same run differ")
	}
	// Go randomizes map iteration: more renderings give it more chances
	// to leak into the page.
	for range 5 {
		if html(t, testRun()) != a {
			t.Fatal("renderings differ")
		}
	}
}

func TestHTMLContent(t *testing.T) {
	s := html(t, testRun())
	for _, want := range []string{
		"<svg",
		// The mean heatmap, and the p99.9 one at 2.5 times.
		">0.91×<", ">1.50×<", ">2.40×<", ">12.5×<",
		">2.29×<", ">3.75×<", ">6.00×<", ">31.2×<",
		"Where EC wins (3)", "Where SR wins (1)",
		"loss=1e-4 size=1MiB: 0.91×",
		"EC has the lower mean in 3 of 4 cells (0 ties) and the lower tail in 4 of 4",
		// The paper's comparison: sr over ec:32,8 alone.
		// (not timed at the sender: the paper's figures, from its
		// long-haul message grid, are not set beside it)
		"SR-RTO over EC-MDS: mean up to 20.0× (loss=1e-2 size=1GiB), p99.9 up to 50.0× (loss=1e-2 size=1GiB).",
		"4 of 16 cells within 5% of the model, 0 more within 3 standard errors of it, 4 outside, 8 where the model does not apply.",
		"within 5%", "outside 5%", "Where it does not: no model for this.",
		// One line plot per loss, the model dashed.
		">loss=1e-4<", ">loss=1e-2<", "stroke-dasharray",
		// The parameter and results tables are kept: outcomes first, with
		// their units, then the parameters that vary.
		"test.yaml:8:9", "<tr><th>runs</th><th>mean (ms)</th>", "<th class=\"l\">transport.scheme</th>",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	timed := testRun()
	for i := range timed.Cells {
		c := &timed.Cells[i]
		c.AtSender = &scenario.Timing{Mean: c.Mean, StdErr: c.StdErr, Completions: c.Completions}
	}
	if want := "SR-RTO over EC-MDS timed until the sender&#39;s last ACK: mean up to 20.0× (loss=1e-2 size=1GiB; paper 6.50×)"; !strings.Contains(html(t, timed), want) {
		t.Errorf("messages timed at the sender: report lacks %q", want)
	}
	if n := strings.Count(s, "<svg"); n != 6 {
		t.Errorf("%d SVG elements, want 6 (2 line plots, 4 heatmaps)", n)
	}
	for _, bad := range []string{`src="http`, `href="http`, "src='http", "href='http", "<?xml", "<script",
		"<link", "@import", "url(", "<img"} {
		if strings.Contains(s, bad) {
			t.Errorf("report contains %q: it must open offline, with inline SVG", bad)
		}
	}
	if strings.Count(s, "<svg") != strings.Count(s, "</svg>") {
		t.Error("unbalanced <svg> elements")
	}
}

func TestHTMLLossAxis(t *testing.T) {
	// One size: the plot runs over the drop rate instead.
	r := testRun()
	r.Cells = slices.DeleteFunc(r.Cells, func(c scenario.Cell) bool { return c.Params[keySize] != "1GiB" })
	s := html(t, r)
	if !strings.Contains(s, ">drop rate (topology.loss)<") || strings.Count(s, "<svg") != 5 {
		t.Errorf("want one plot against topology.loss and four heatmaps")
	}
	// SR alone: no EC-vs-SR section.
	r = testRun()
	r.Cells = slices.DeleteFunc(r.Cells, func(c scenario.Cell) bool { return schemeFamily(c.Params[keyScheme]) != "sr" })
	s = html(t, r)
	if strings.Contains(s, "Where EC wins") || strings.Count(s, "<svg") != 2 {
		t.Errorf("SR-only grid: want two line plots and no heatmap")
	}
	// One cell: nothing varies, nothing to plot, and the tables remain.
	r = testRun()
	r.Cells = r.Cells[:1]
	s = html(t, r)
	if strings.Contains(s, "<svg") || strings.Contains(s, `id="plots"`) || strings.Contains(s, `id="model"`) || !strings.Contains(s, `id="results"`) {
		t.Errorf("single-cell report: %s", s)
	}
}

func TestInlineSVG(t *testing.T) {
	got, err := inlineSVG("<?xml version=\"1.0\"?>\n<!-- c -->\n<svg width=\"1\"></svg>\n")
	if err != nil || got != `<svg width="1"></svg>` {
		t.Errorf("inlineSVG = %q, %v", got, err)
	}
	if _, err := inlineSVG("<html><svg></svg>"); err == nil {
		t.Error("inlineSVG accepted something that is not an SVG document")
	}
}

func TestAxisOrder(t *testing.T) {
	cells := []scenario.Cell{
		{Params: map[string]string{keySize: "1GiB", keyLoss: "1e-2", keyScheme: "xor:32,8"}},
		{Params: map[string]string{keySize: "128KiB", keyLoss: "0", keyScheme: "sr"}},
		{Params: map[string]string{keySize: "16MiB", keyLoss: "1e-6", keyScheme: "ec:32,8"}},
	}
	for key, want := range map[string][]string{
		keySize:   {"128KiB", "16MiB", "1GiB"},
		keyLoss:   {"0", "1e-6", "1e-2"},
		keyScheme: {"xor:32,8", "sr", "ec:32,8"}, // not numbers: as they come
	} {
		if got := newAxis(cells, key).Values; !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", key, got, want)
		}
	}
}

func TestCSV(t *testing.T) {
	r := testRun()
	var b bytes.Buffer
	if err := WriteCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+len(r.Cells) {
		t.Fatalf("%d rows, want a header and %d cells", len(rows), len(r.Cells))
	}
	header := rows[0]
	// Parameters as numbers in the unit their names end with, where
	// they are numbers.
	want := []string{"index", "label", keyLoss, "transport.mtu_bytes", keyScheme, keySize + "_bytes", "runs", "mean_s", "stderr_s",
		"p50_s", "p99_s", "p999_s"}
	if !slices.Equal(header[:len(want)], want) {
		t.Errorf("header starts %v, want %v", header[:len(want)], want)
	}
	for _, col := range []string{"goodput_bps", "retx_bytes", "parity_bytes", "fallbacks", "model_mean_s",
		"model_p999_s", "model_rel_error", "model_note", "seed"} {
		if !slices.Contains(header, col) {
			t.Errorf("header lacks %s", col)
		}
	}
	col := func(name string) int { return slices.Index(header, name) }
	for i, row := range rows[1:] {
		c := r.Cells[i]
		if len(row) != len(header) {
			t.Fatalf("row %d has %d fields, header %d", i, len(row), len(header))
		}
		size, _ := units.ParseSize(c.Params[keySize])
		loss, _ := strconv.ParseFloat(c.Params[keyLoss], 64)
		if row[col(keySize+"_bytes")] != strconv.FormatInt(size, 10) || row[col(keyLoss)] != f(loss) {
			t.Errorf("row %d: size %q loss %q, want the numbers of %q %q", i, row[col(keySize+"_bytes")], row[col(keyLoss)],
				c.Params[keySize], c.Params[keyLoss])
		}
		if row[col(keyScheme)] != c.Params[keyScheme] || row[col("mean_s")] != f(c.Mean) {
			t.Errorf("row %d: scheme %q mean %q, want %q %q", i, row[col(keyScheme)], row[col("mean_s")],
				c.Params[keyScheme], f(c.Mean))
		}
		if (c.Model == nil || c.Model.Mean == 0) != (row[col("model_rel_error")] == "") {
			t.Errorf("row %d: model_rel_error %q with model %v", i, row[col("model_rel_error")], c.Model)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	r := testRun()
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var back Run
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := WriteJSON(&again, &back); err != nil {
		t.Fatal(err)
	}
	if again.String() != b.String() {
		t.Error("the run read back from JSON writes different JSON")
	}
	var raw struct {
		Cells  []map[string]any `json:"cells"`
		Params []map[string]any `json:"params"`
	}
	if err := json.Unmarshal(b.Bytes(), &raw); err != nil {
		t.Fatal(err)
	}
	// Every cell has every key, whatever it holds, and the keys are
	// snake_case; sizes are numbers.
	keys := func(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }
	for i, c := range raw.Cells {
		if !slices.Equal(keys(c), keys(raw.Cells[0])) {
			t.Errorf("cell %d has keys %v, cell 0 %v", i, keys(c), keys(raw.Cells[0]))
		}
		for _, k := range keys(c) {
			if k != strings.ToLower(k) || strings.Contains(k, " ") {
				t.Errorf("key %q is not snake_case", k)
			}
		}
		if n, ok := c["param_numbers"].(map[string]any)[keySize+"_bytes"].(float64); !ok || n < 1<<20 {
			t.Errorf("cell %d: param_numbers %v lacks the size in bytes", i, c["param_numbers"])
		}
	}
	if !slices.Equal(keys(raw.Params[0]), []string{"path", "values", "where"}) {
		t.Errorf("params keys %v", keys(raw.Params[0]))
	}
	// The same HTML from the run read back as from the original.
	if html(t, &back) != html(t, r) {
		t.Error("the run read back from JSON renders differently")
	}
}

// TestTailSupported: a tail percentile is shown only where the runs
// support it; 50 runs a cell give a p90, never a p99.9.
func TestTailSupported(t *testing.T) {
	r := testRun()
	for i := range r.Cells {
		r.Cells[i].Completions = r.Cells[i].Completions[:50]
		r.Cells[i].Runs = 50
	}
	s := html(t, r)
	for _, want := range []string{"p90 up to", "support only a p90", "(p90)"} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(s, "p99.9 up to") {
		t.Error("report states a p99.9 from 50 runs")
	}
	for _, tt := range []struct {
		n    int
		want float64
	}{{1, 0}, {9, 0}, {10, 0.9}, {99, 0.9}, {100, 0.99}, {999, 0.99}, {1000, 0.999}} {
		if got := supportedQuantile(tt.n); got != tt.want {
			t.Errorf("supportedQuantile(%d) = %g, want %g", tt.n, got, tt.want)
		}
	}
}

// TestSRLeadSkipsMissing: a square with no SR time has no ratio, and
// must not be taken for SR's largest lead.
func TestSRLeadSkipsMissing(t *testing.T) {
	r := testRun()
	r.Cells = slices.DeleteFunc(r.Cells, func(c scenario.Cell) bool {
		return schemeFamily(c.Params[keyScheme]) == "sr" && c.Params[keyLoss] == "1e-2" && c.Params[keySize] == "1GiB"
	})
	s := html(t, r)
	if want := "SR&#39;s largest lead 1.09× at loss=1e-4 size=1MiB"; !strings.Contains(s, want) {
		i := strings.Index(s, "EC has the lower mean")
		t.Errorf("report lacks %q; summary: %.300s", want, s[max(i, 0):])
	}
}

// TestRanParams: a quick grid's parameters list the values its cells ran,
// in the scenario's order, and the run keeps the declared grid beside
// them; a full run has no Grid.
func TestRanParams(t *testing.T) {
	s := &scenario.Scenario{Name: "p", Params: []scenario.Param{
		{Path: "topology.loss", Values: []string{"1e-6", "1e-4", "1e-2"}},
		{Path: "workload.size", Values: []string{"1MiB"}},
	}}
	cell := func(loss string) scenario.Cell {
		return scenario.Cell{Params: map[string]string{"topology.loss": loss, "workload.size": "1MiB"}}
	}
	r := New(s, false, []scenario.Cell{cell("1e-2"), cell("1e-6")})
	if got := r.Params[0].Values; !slices.Equal(got, []string{"1e-6", "1e-2"}) {
		t.Errorf("loss values run %v, want [1e-6 1e-2]", got)
	}
	if len(r.Grid) != 2 || len(r.Grid[0].Values) != 3 {
		t.Errorf("grid %v, want the declared one", r.Grid)
	}
	if r := New(s, true, []scenario.Cell{cell("1e-6"), cell("1e-4"), cell("1e-2")}); r.Grid != nil {
		t.Errorf("a run of the whole grid has Grid %v", r.Grid)
	}
}
