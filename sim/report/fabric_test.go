package report

import (
	"bytes"
	"encoding/csv"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

func fabricRun() *Run {
	var cells []scenario.Cell
	for i, sel := range []string{"obs", "single"} {
		depth := float64(10240 * (i*9 + 1)) // single path queues ten times deeper
		cells = append(cells, scenario.Cell{Index: i, Label: "select=" + sel,
			Params: map[string]string{"transport.select": sel}, Runs: 1, Timing: scenario.Timing{Mean: 5e-3 * float64(i+1)}, BusBWBps: 90e9 / float64(i+1),
			Tiers: []scenario.TierMetrics{
				{Name: "host", Ports: 32, QueueP99Bytes: depth / 2, PeakBytes: int(depth), UtilMax: 0.9},
				{Name: "leaf-spine", Ports: 64, QueueP50Bytes: 0, QueueP99Bytes: depth, QueueMaxBytes: 2 * depth, PeakBytes: int(3 * depth), UtilP50: 0.4, UtilMax: 0.95, Drops: uint64(i),
					Marked: 7, HeadroomDrops: 2, Pauses: 5 * uint64(i), PausedSec: 0.001, WatchdogTrips: 0,
					QueueSeries: []int64{0, int64(depth), 0}, QueueSeriesBinSec: 1e-6},
			}, Pauses: 5 * uint64(i), ReorderMean: 3.5, ReorderMax: 9})
	}
	return &Run{Scenario: "dc", Cells: cells}
}

func TestFabricSection(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, fabricRun()); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{`id="fabric"`, "queue depth p99 over time, leaf-spine tier (KiB)", "leaf-spine queue p99 (KiB)",
		"<td>100.0</td>", "<svg", "PFC pauses (PAUSE frames)", "<th>PFC pauses</th>", "reorder depth at the receivers", "<td>3.500</td>", "deepest leaf-spine port over time",
		// Bars carry their values: 90 and 45 Gbit/s of bus bandwidth.
		">90</text>", ">45</text>"} {
		if !strings.Contains(html, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	b.Reset()
	if err := WriteHTML(&b, testRun()); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), `id="fabric"`) {
		t.Error("a long-haul report has a fabric section")
	}
	// Nothing paused and nothing dropped: no figure and no column of zeros.
	r := fabricRun()
	for i := range r.Cells {
		r.Cells[i].Pauses = 0
	}
	b.Reset()
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "PFC pauses (PAUSE frames)") || strings.Contains(b.String(), "<th>PFC pauses</th>") {
		t.Error("the report shows PFC pauses that are zero in every cell")
	}
}

func TestTiersCSV(t *testing.T) {
	r := fabricRun()
	var b bytes.Buffer
	if err := WriteTiersCSV(&b, r); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1+2*2 {
		t.Fatalf("%d rows, want a header and 2 tiers of 2 cells", len(rows))
	}
	if got := strings.Join(rows[4], ","); got != "1,select=single,single,leaf-spine,64,0,102400,204800,307200,0,0.4,0,0,0.95,1,7,2,5,0.001,0" {
		t.Errorf("last row %s", got)
	}
}
