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
		{Group: "workload.background=0", Entries: []rankEntry{{"dwrr", 5e-3, 70}, {"obs", 7e-3, 600}, {"single", 13e-3, 1000}}},
		// A tie keeps the scenario's order.
		{Group: "workload.background=0.5", Entries: []rankEntry{{"obs", 7.2e-3, 610}, {"dwrr", 7.2e-3, 80}, {"single", 14e-3, 1020}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rank:\n got %+v\nwant %+v", got, want)
	}
	two := rank(cells, []string{"transport.select", "workload.background"})
	if len(two) != 1 || two[0].Group != "" || two[0].Entries[0].Name != "dwrr, 0" || len(two[0].Entries) != 6 {
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
	for _, s := range []string{"<strong>Paper:</strong> OBS is best.", "workload.background=0: <strong>dwrr</strong>",
		"<strong>Where ours differ, and why:</strong> Only four spines."} {
		if !strings.Contains(html.String(), s) {
			t.Errorf("report lacks %q", s)
		}
	}
}
