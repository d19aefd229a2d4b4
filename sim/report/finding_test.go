package report

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

func TestRank(t *testing.T) {
	cell := func(sel, bg, scheme string, mean, queue float64) scenario.Cell {
		return scenario.Cell{Params: map[string]string{"transport.select": sel, "workload.background": bg, "transport.scheme": scheme},
			Timing: scenario.Timing{Mean: mean}, Tiers: []scenario.TierMetrics{{Name: "host"}, {Name: "leaf-spine", QueueP99Bytes: queue}}}
	}
	cells := []scenario.Cell{
		cell("obs", "0", "sr", 7e-3, 600),
		cell("single", "0", "sr", 13e-3, 1000),
		cell("dwrr", "0", "sr", 5e-3, 70),
		cell("obs", "0.5", "sr", 7.2e-3, 610),
		cell("single", "0.5", "sr", 14e-3, 1020),
		cell("dwrr", "0.5", "sr", 7.2e-3, 80),
	}
	got := rank(cells, []string{"transport.select"})
	want := []ranking{
		{Group: "workload.background=0", Entries: []rankEntry{{Name: "select=dwrr", Mean: 5e-3, Queue: 70},
			{Name: "select=obs", Mean: 7e-3, Queue: 600}, {Name: "select=single", Mean: 13e-3, Queue: 1000}}},
		// A tie keeps the scenario's order, and says it is one.
		{Group: "workload.background=0.5", Entries: []rankEntry{{Name: "select=obs", Mean: 7.2e-3, Queue: 610},
			{Name: "select=dwrr", Mean: 7.2e-3, Queue: 80, Tie: true}, {Name: "select=single", Mean: 14e-3, Queue: 1020}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rank:\n got %+v\nwant %+v", got, want)
	}
	two := rank(cells, []string{"transport.select", "workload.background"})
	if len(two) != 1 || two[0].Group != "" || two[0].Entries[0].Name != "select=dwrr, background=0" || len(two[0].Entries) != 6 {
		t.Errorf("two compared keys: %+v", two)
	}
	for _, compare := range [][]string{nil, {"no.such"}} {
		if r := rank(cells, compare); r != nil {
			t.Errorf("compare %v: %+v, want none", compare, r)
		}
	}

	var html bytes.Buffer
	r := &Run{Scenario: "s", Finding: "OBS is best.", Differences: "Only four spines.", Compare: []string{"transport.select"}, Cells: cells}
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"<strong>Paper:</strong> OBS is best.", "workload.background=0: <strong>select=dwrr</strong>",
		"<strong>select=obs</strong> 7.2ms (610B) &asymp; <strong>select=dwrr</strong>",
		"<strong>Where ours differ, and why:</strong> Only four spines."} {
		if !strings.Contains(html.String(), s) {
			t.Errorf("report lacks %q", s)
		}
	}
}

// TestTied: equal within two standard errors of the difference, or within
// 1% where the runs measured no spread.
func TestTied(t *testing.T) {
	for _, tt := range []struct {
		a, sa, b, sb float64
		want         bool
	}{
		{3.012e-3, 0, 3.012e-3, 0, true},
		{1.00, 0, 1.009, 0, true},
		{1.00, 0, 1.02, 0, false},
		{1.00, 0.01, 1.02, 0.01, true},    // 0.02 <= 2*0.0141
		{1.00, 0.005, 1.03, 0.005, false}, // 0.03 > 2*0.0071
	} {
		if got := tied(tt.a, tt.sa, tt.b, tt.sb); got != tt.want {
			t.Errorf("tied(%g±%g, %g±%g) = %v, want %v", tt.a, tt.sa, tt.b, tt.sb, got, tt.want)
		}
	}
}
