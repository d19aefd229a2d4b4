package scenario

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestHostMemoryOff: a scenario that enables no host memory path gives
// exactly the results of one without the host section, on two sites and
// on a fabric.
func TestHostMemoryOff(t *testing.T) {
	for _, base := range []string{`name: off
topology:
  kind: longhaul
  trunk_delay: 10us
  loss: 1e-3
transport:
  scheme: sr-nack
workload:
  size: 1MiB
  count: 5
`, `name: off
topology:
  kind: leafspine
  leaves: 2
  spines: 2
  hosts_per_leaf: 2
workload:
  kind: allreduce
  hosts: 4
  size: 256KiB
  count: 1
`} {
		without := runScenario(t, "off.yaml", []byte(base), 1)
		off := runScenario(t, "off.yaml", []byte(base+"host:\n  translation: off\n  pinning: off\n  atc: 1\n"), 1)
		// The atc key differs in the params; the results must not.
		for i := range without {
			without[i].Params, off[i].Params = nil, nil
		}
		ja, _ := json.Marshal(without)
		jb, _ := json.Marshal(off)
		if !bytes.Equal(ja, jb) {
			t.Errorf("the host section, off, changed the results:\n%s\n%s", ja, jb)
		}
	}
}

// TestHostMemoryScenario: on a fabric, ATS with a buffer far beyond the
// caches' reach slows an AllReduce that eMTT runs at full speed, and
// PVDMA pays its first touches.
func TestHostMemoryScenario(t *testing.T) {
	cells := runScenario(t, "on.yaml", []byte(`name: on
topology:
  kind: leafspine
  leaves: 2
  spines: 2
  hosts_per_leaf: 2
  host_rate: 200Gbps
workload:
  kind: allreduce
  hosts: 4
  size: 4MiB
  count: 1
host:
  translation: [ats, emtt]
  pinning: on_demand
`), 1)
	ats, emtt := cells[0], cells[1]
	if !(ats.Mean > emtt.Mean) || ats.ATCMissRate < 0.9 || emtt.ATCMissRate != 0 {
		t.Errorf("ATS %v (ATC misses %.2f), eMTT %v (%.2f): want ATS slower, thrashing", ats.Mean, ats.ATCMissRate, emtt.Mean, emtt.ATCMissRate)
	}
	if ats.PinFaults == 0 || ats.StartupSec <= 0 || ats.DMAStallSec <= emtt.DMAStallSec {
		t.Errorf("ATS: %d pins, start-up %v s, stall %v s (eMTT's %v s)", ats.PinFaults, ats.StartupSec, ats.DMAStallSec, emtt.DMAStallSec)
	}
}
