package scenario

import (
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/internal/reliability"
)

// TestDeviation: a cell outside the tolerance is explained by sampling
// only where its own figures show it: within 3 standard errors, or with
// too few costly events for the standard error to mean much.
func TestDeviation(t *testing.T) {
	pred := &Prediction{Mean: 0.100}
	for _, tt := range []struct {
		name   string
		kind   reliability.Kind
		cell   Cell
		mean   float64
		stderr float64
		want   string
	}{
		{"within 3 SE", reliability.KindSRNACK, Cell{Runs: 16}, 0.110, 0.004, "within 3 standard errors"},
		{"rare fallbacks", reliability.KindECXOR, Cell{Runs: 128, Fallbacks: 4}, 0.110, 0.001, "only 4 fallbacks"},
		{"rare resends", reliability.KindSRRTO, Cell{Runs: 16, RetxBytes: 10 * 4096}, 0.110, 0.001, "only 10 retransmitted packets"},
		{"a model gap", reliability.KindSRNACK, Cell{Runs: 16, RetxBytes: 5000 * 4096}, 0.110, 0.001, "does not explain"},
	} {
		if got := deviation(tt.kind, tt.cell, tt.mean, tt.stderr, 4096, pred); !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want it to say %q", tt.name, got, tt.want)
		}
	}
}
