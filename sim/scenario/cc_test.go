package scenario

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/wire"
)

// TestRandomLossIsNotCongestion runs cells of SDR's long-haul experiment
// (random loss, no queue) under each controller: none may fall more than
// 10% behind no congestion control, since the loss says nothing about a
// queue. Each controller runs the same grid, so cell i sees the same
// seed, and the same losses, under all of them.
func TestRandomLossIsNotCongestion(t *testing.T) {
	src := []byte(`name: longhaul-cc
topology:
  host_rate: 400Gbps
  trunk_rate: 400Gbps
  trunk_delay: 12.5ms
  loss: [1e-3, 1e-2]
transport:
  scheme: [sr-nack, "xor:32,8"]
workload:
  size: [1MiB, 16MiB]
  count: 200
`)
	run := func(alg string) []Cell {
		s, err := Parse("longhaul-cc.yaml", src)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Set("transport.cc=" + alg); err != nil {
			t.Fatal(err)
		}
		cells, err := Run(s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return cells
	}
	none := run("none")
	for _, alg := range []string{"nscc", "dcqcn", "dcqcn-paper", "credit"} {
		for i, c := range run(alg) {
			base := none[i].Mean
			t.Logf("%-8s %-40s %.2f ms (%.3f x none)", alg, c.Label, 1e3*c.Mean, c.Mean/base)
			if c.Mean <= 0 || c.Mean > 1.1*base {
				t.Errorf("%s %s: mean %.2f ms, none's %.2f ms", alg, c.Label, 1e3*c.Mean, 1e3*base)
			}
		}
	}
}

// TestAuthBytes: protection's trailer costs its bytes on the wire: a
// message takes longer by about the trailer's share of each packet, and
// the model, charged the same bytes, still agrees.
func TestAuthBytes(t *testing.T) {
	src := []byte(`name: auth
topology:
  trunk_delay: 1ms
transport:
  auth: [none, full]
workload:
  size: 64MiB
  count: 3
`)
	cells := runScenario(t, "auth.yaml", src, 1)
	none, full := cells[0], cells[1]
	if full.Params["transport.auth"] != "full" || none.Mean <= 0 {
		t.Fatalf("cells %+v", cells)
	}
	// Serialization dominates a 64 MiB message: 4096 payload bytes carry
	// a DATA header and 66 bytes of framing, and now a trailer.
	want := float64(4096+wire.MessageLen+66+wire.TrailerLen) / float64(4096+wire.MessageLen+66)
	if got := full.Mean / none.Mean; got < 1+(want-1)/2 || got > want+(want-1)/2 {
		t.Errorf("full/none = %.4f, want about %.4f", got, want)
	}
	if full.Model == nil || none.Model == nil || full.Model.Mean <= none.Model.Mean {
		t.Errorf("model not charged the trailer: %+v %+v", none.Model, full.Model)
	}
}
