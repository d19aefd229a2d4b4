package fidelity

import (
	"fmt"
	"math"
	"testing"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// longHaul is SDR-RDMA's long haul (scenarios/sdr-longhaul.yaml: 400
// Gbit/s, 25 ms RTT) at every fixed scheme, over the loss rates where
// schemes differ and the sizes the suite can afford, each cell with
// enough messages that a 5% drift stands out of the sampling noise.
const longHaul = `name: fidelity-longhaul
seed: 1
topology:
  kind: longhaul
  host_rate: 400Gbps
  trunk_rate: 400Gbps
  trunk_delay: 12.5ms
  loss: [1e-4, 1e-3, 1e-2]
transport:
  scheme: [sr, sr-nack, "ec:32,8", "xor:32,8"]
  mtu: 4096
  chunk: 64KiB
workload:
  kind: messages
  size: [128KiB, 1MiB, 16MiB, 128MiB]
  count: 2000
  bytes: 8GiB
  min_count: 64
  payload: virtual
`

// TestLongHaulMatchesModel: every cell's mean at the sender agrees with
// the analytic model, within 5% or within what sampling explains (3
// standard errors of the sample's mean or of the model's), and never
// further than twice the tolerance: sampling may excuse a small miss,
// not a drift.
func TestLongHaulMatchesModel(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 48 long-haul cells")
	}
	s, err := scenario.Parse("fidelity-longhaul.yaml", []byte(longHaul))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := scenario.Run(s, scenario.Options{})
	if err != nil {
		t.Fatal(err)
	}
	within := 0
	for _, c := range cells {
		m := c.Model
		if m == nil || m.Mean == 0 {
			t.Errorf("%s: no model prediction (%+v)", c.Label, m)
			continue
		}
		line := fmt.Sprintf("%-40s %5d runs: simulated %.3f ms, model %.3f ms (%+.1f%%)",
			c.Label, c.Runs, 1e3*c.AtSender.Mean, 1e3*m.Mean, 100*m.Error)
		switch {
		case math.Abs(m.Error) <= scenario.Tolerance:
			within++
			t.Log(line)
		case m.Agrees() && math.Abs(m.Error) <= 2*scenario.Tolerance:
			t.Logf("%s: %s", line, m.Note)
		default:
			t.Errorf("%s: %s", line, m.Note)
		}
	}
	// Sampling may excuse a few cells, not a scheme's worth.
	if len(cells)-within > len(cells)/12 {
		t.Errorf("%d of %d cells within %.0f%% of the model, want all but %d", within, len(cells), 100*scenario.Tolerance, len(cells)/12)
	}
}
