package sim

import (
	"slices"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// twoAllToAlls is an all-to-all, then another whose every flow waits for
// all of the first: through one shared After slice, or each through a
// copy of its own.
func twoAllToAlls(shared bool) func(*engine.Engine, int) []Flow {
	return func(_ *engine.Engine, hosts int) []Flow {
		first := AllToAll(hostList(hosts), 1<<20)
		all := make([]int, len(first))
		for i := range all {
			all[i] = i
		}
		flows := append([]Flow(nil), first...)
		for _, f := range AllToAll(hostList(hosts), 1<<20) {
			f.After = all
			if !shared {
				f.After = slices.Clone(all)
			}
			flows = append(flows, f)
		}
		return flows
	}
}

// TestSharedAfter: flows that share one After slice wait as a group, and
// run exactly as flows with a copy each do; in parts, the same on any
// number of threads.
func TestSharedAfter(t *testing.T) {
	want, res := partsRun(t, 4, 0, false, twoAllToAlls(false))
	got, _ := partsRun(t, 4, 0, false, twoAllToAlls(true))
	if got != want {
		t.Errorf("one engine: a shared After runs differently from copies:\n%s", firstDiff(want, got))
	}
	n := len(res.Done) / 2
	last := slices.Max(res.Done[:n])
	for i := n; i < len(res.Start); i++ {
		if res.Start[i] != last {
			t.Fatalf("flow %d of the second all-to-all started at %v, the first ended at %v", i, res.Start[i], last)
		}
	}

	want, inParts := partsRun(t, 4, 1, false, twoAllToAlls(true))
	if got, _ := partsRun(t, 4, 2, false, twoAllToAlls(true)); got != want {
		t.Errorf("in parts: 2 threads differ from one:\n%s", firstDiff(want, got))
	}
	copies, _ := partsRun(t, 4, 1, false, twoAllToAlls(false))
	if copies != want {
		// A group hears of another part's arrivals a lookahead later, as
		// each flow did: the same times, in fewer events.
		t.Errorf("in parts: a shared After runs differently from copies:\n%s", firstDiff(copies, want))
	}
	if r := float64(inParts.End) / float64(res.End); r < 0.8 || r > 1.25 {
		t.Errorf("in parts the flows end at %v, on one engine at %v (%.2fx)", inParts.End, res.End, r)
	}
}

func TestSharedAfterErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after []int
		want  string
	}{
		{"a member", []int{0, 2}, "flow 2 waits for flow 2"},
		{"out of range", []int{0, 9}, "flow 2 waits for flow 9"},
		{"negative", []int{0, -1}, "flow 2 waits for flow -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flows := []Flow{{Src: 0, Dst: 1, Bytes: 100}, {Src: 1, Dst: 2, Bytes: 100},
				{Src: 2, Dst: 3, Bytes: 100, After: tc.after}, {Src: 3, Dst: 0, Bytes: 100, After: tc.after}}
			f, err := topology.FatTree(engine.New(1), 4, dcConfig(100e9, topology.EECMP))
			if err != nil {
				t.Fatal(err)
			}
			_, err = RunFlows(&f.Topology, flows, flowsCfg(1, path.Single))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}
