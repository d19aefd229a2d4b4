package fidelity

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// longHaulControllers is the long haul of longHaul at the loss rates
// where random loss is most often mistaken for congestion, once per
// controller and once without one. At 10 Gbit/s, where a 25 ms round
// trip holds 31 MB, 16 and 128 MiB messages fill the window, so a
// controller that cut it for random loss shows.
const longHaulControllers = `name: fidelity-longhaul-cc
seed: 1
topology:
  kind: longhaul
  host_rate: 10Gbps
  trunk_rate: 10Gbps
  trunk_delay: 12.5ms
  loss: [1e-3, 1e-2]
transport:
  scheme: [sr, sr-nack, "ec:32,8", "xor:32,8"]
  cc: [none, bbr, dcqcn, nscc]
  mtu: 4096
  chunk: 64KiB
workload:
  kind: messages
  size: [16MiB, 128MiB]
  count: 200
  bytes: 4GiB
  min_count: 32
  payload: virtual
`

// TestLongHaulControllersIgnoreRandomLoss: random loss on a path with no
// queue is not congestion, so a controller costs at most 10% of the mean
// completion time the same cell has without one (issue 47).
// bench/sim-longhaul-cc.sh runs the scenario's whole grid.
func TestLongHaulControllersIgnoreRandomLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 48 long-haul cells")
	}
	s, err := scenario.Parse("fidelity-longhaul-cc.yaml", []byte(longHaulControllers))
	if err != nil {
		t.Fatal(err)
	}
	cells, err := scenario.Run(s, scenario.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// key is a cell's parameters but its controller.
	key := func(c scenario.Cell) string {
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(c.Params)) {
			if k != "transport.cc" {
				b.WriteString(k + "=" + c.Params[k] + " ")
			}
		}
		return b.String()
	}
	none := map[string]scenario.Cell{}
	for _, c := range cells {
		if c.Params["transport.cc"] == "none" {
			none[key(c)] = c
		}
	}
	checked := 0
	for _, c := range cells {
		cc := c.Params["transport.cc"]
		if cc == "none" {
			continue
		}
		base, ok := none[key(c)]
		if !ok || base.AtSender.Mean == 0 {
			t.Fatalf("%s: no cell without a controller to compare with", c.Label)
		}
		ratio := c.AtSender.Mean / base.AtSender.Mean
		line := fmt.Sprintf("%s: %.3fx the mean completion without a controller", c.Label, ratio)
		if ratio > 1.10 {
			t.Errorf("%s, want at most 1.10", line)
		} else {
			t.Log(line)
		}
		checked++
	}
	if checked != 3*len(none) {
		t.Errorf("compared %d cells, want %d", checked, 3*len(none))
	}
}
