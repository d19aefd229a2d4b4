package scenario

import (
	"strings"
	"testing"
)

// TestRingRounds runs part of a fabric's ring AllReduce: all its rounds
// named is the whole ring, fewer take less time at no more than the
// hosts' rate, and the rounds key belongs to fabrics alone.
func TestRingRounds(t *testing.T) {
	src := `name: ring
topology:
  kind: leafspine
  leaves: 4
  spines: 2
  hosts_per_leaf: 2
  host_rate: 100Gbps
workload:
  kind: allreduce
  hosts: 8
  size: 8MiB
  count: 1
  rounds: [0, 14, 20, 1, 2]
`
	cells := runScenario(t, "ring.yaml", []byte(src), 2)
	whole := cells[0]
	for _, c := range cells[1:3] { // 14 = 2(n-1), and more, run the whole ring
		if c.Mean != whole.Mean || c.BusBWBps != whole.BusBWBps || c.Events != whole.Events {
			t.Errorf("%s: mean %v busbw %v events %d; the whole ring: %v, %v, %d", c.Label, c.Mean, c.BusBWBps, c.Events, whole.Mean, whole.BusBWBps, whole.Events)
		}
	}
	one, two := cells[3], cells[4]
	if !(one.Mean < two.Mean && two.Mean < whole.Mean) || !(one.Events < two.Events && two.Events < whole.Events) {
		t.Errorf("rounds 1, 2, all: means %v, %v, %v; events %d, %d, %d", one.Mean, two.Mean, whole.Mean, one.Events, two.Events, whole.Events)
	}
	// A round moves a share of 1 MiB from every host: at 100 Gbit/s, at
	// least 84 µs, so bus bandwidth under the host rate.
	for _, c := range cells {
		if c.BusBWBps <= 0 || c.BusBWBps > 100e9 {
			t.Errorf("%s: bus bandwidth %v, want in (0, 100 Gbit/s]", c.Label, c.BusBWBps)
		}
	}

	s, err := Parse("sites.yaml", []byte("name: sites\nworkload:\n  kind: allreduce\n  hosts: 4\n  rounds: 1\n  count: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(s, Options{Workers: 1}); err == nil || !strings.Contains(err.Error(), "workload.rounds") {
		t.Errorf("rounds over sites: error %v, want one naming workload.rounds", err)
	}
}
