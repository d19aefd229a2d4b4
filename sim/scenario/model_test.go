package scenario

import (
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/internal/model"
	"github.com/sdrnet/sdrnet/internal/monotime"
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

// TestDeviationWithinModelSpread: the full grid's SR-NACK cell at 1 GiB
// and 1e-6 saw one resent packet in 16 runs, so its own standard error is
// nil, but the model's predicted spread covers the gap; the same gap with
// 100x the runs does not.
func TestDeviationWithinModelSpread(t *testing.T) {
	p := model.Params{MessageBytes: 1 << 30, MTU: 4096, ChunkBytes: 64 << 10, HeaderBytes: 102, RateBitsPerSec: 400e9,
		RTT: 25 * monotime.Millisecond, DropProb: 1e-6, Scheme: model.SRNACK, Decode: model.DecodeStripe,
		Retry: model.RetryPacket, AtSender: true}
	pr, err := model.Predict(p)
	if err != nil {
		t.Fatal(err)
	}
	mean := pr.Mean.Seconds() * 0.94
	pred := &Prediction{Mean: pr.Mean.Seconds(), StdErr: modelStdErr(p, 16)}
	got := deviation(reliability.KindSRNACK, Cell{Runs: 16, RetxBytes: 4096}, mean, 0, 4096, pred)
	if !strings.Contains(got, "within 3 standard errors of the model's mean") {
		t.Errorf("16 runs: %q, want the model's spread to cover a 6%% gap", got)
	}
	pred.StdErr = modelStdErr(p, 1600)
	got = deviation(reliability.KindSRNACK, Cell{Runs: 1600, RetxBytes: 100 * 4096}, mean, 0, 4096, pred)
	if strings.Contains(got, "within 3 standard errors") {
		t.Errorf("1600 runs: %q, want the gap called", got)
	}
}

// TestRTOFactorReachesSchemeAndModel: transport.rto_factor sets SR's
// timeout in the simulated scheme and in the analytic model alike, and
// leaves SR-NACK's repair (about a round trip) nearly where it was.
func TestRTOFactorReachesSchemeAndModel(t *testing.T) {
	s, err := Parse("rto.yaml", []byte(`name: rto
topology:
  loss: 1e-2
transport:
  scheme: [sr, sr-nack]
  rto_factor: [2, 8]
workload:
  size: 16MiB
`))
	if err != nil {
		t.Fatal(err)
	}
	const rtt = 25 * monotime.Millisecond
	model := map[string]float64{}
	predicted := Predict(s, true)
	for i, pt := range s.Grid(true) {
		v := &values{pt: pt}
		scheme, _ := v.scheme()
		a := v.float("transport.rto_factor")
		if got, want := scheme.RetransmitTimeout(rtt), rtt+monotime.Duration(a*float64(rtt)); got != want {
			t.Errorf("%s: RTO %v, want RTT + %g RTT = %v", pt.Label(), got, a, want)
		}
		model[pt.Label()] = predicted[i].Model.Mean
	}
	if sr2, sr8 := model["scheme=sr rto_factor=2"], model["scheme=sr rto_factor=8"]; !(sr8 > 2*sr2) {
		t.Errorf("model: SR's mean %.4g s at a=2 and %.4g s at a=8, want the longer timeout to more than double it", sr2, sr8)
	}
	if n2, n8 := model["scheme=sr-nack rto_factor=2"], model["scheme=sr-nack rto_factor=8"]; n8 > 1.1*n2 || n8 < n2 {
		t.Errorf("model: SR-NACK's mean %.4g s at a=2 and %.4g s at a=8, want within 10%% (only its tail RTO grows)", n2, n8)
	}
}
