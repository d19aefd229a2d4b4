package report

import (
	"slices"
	"testing"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

func TestNumberColumn(t *testing.T) {
	cells := []scenario.Cell{{RetxBytes: 0}, {RetxBytes: 3 << 20}, {RetxBytes: 5 << 20}, {RetxBytes: 1500}, {RetxBytes: 2 << 30}}
	col := numberColumn(cells, "resent", byteUnit, always(func(c scenario.Cell) float64 { return float64(c.RetxBytes) }))
	// The unit fits the typical value (MiB), not the largest (GiB).
	if want := []string{"0", "3.000", "5.000", "0.0014", "2048"}; col.head != "resent (MiB)" || !slices.Equal(col.cells, want) {
		t.Errorf("column %q %q, want resent (MiB) %q", col.head, col.cells, want)
	}
	zero := numberColumn(cells, "drops", plain, always(func(c scenario.Cell) float64 { return float64(c.Drops) }))
	if zero.cells != nil {
		t.Errorf("a column of zeros is kept: %+v", zero)
	}
	for _, tt := range []struct {
		x    float64
		want string
	}{{0, "0"}, {1234.6, "1235"}, {12.345, "12.35"}, {0.5, "0.5000"}, {0.0012345, "0.0012"}, {2e-18, "<0.0001"}} {
		if got := significant(tt.x, 4); got != tt.want {
			t.Errorf("significant(%g, 4) = %q, want %q", tt.x, got, tt.want)
		}
	}
}
