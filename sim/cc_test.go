package sim

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/network"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// ccIncast runs a 7-to-1 incast of 1 MiB per sender on a leaf-spine with
// shallow, ECN-marking switches, every sender under controller alg, and
// returns the senders' controller state summed.
func ccIncast(t *testing.T, alg string) (FlowsResult, fabricCounts, cc.Stats) {
	t.Helper()
	a, err := cc.Parse(alg)
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(1)
	cfg := dcConfig(100e9, topology.EECMP)
	cfg.TierQueue = []int{256 << 10}
	cfg.ECN = []network.ECN{{Min: 32 << 10, Max: 128 << 10, PMax: 0.2}}
	f, err := topology.LeafSpine(eng, 2, 2, 4, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fc := flowsCfg(1, path.Single)
	fc.Core.CC, fc.Core.LineRate, fc.Core.BaseRTT = a, 100e9, 8*monotime.Microsecond
	fc.Core.MaxBytesInFlight = 1 << 20
	fc.Limit = 50 * monotime.Millisecond
	senders := []int{1, 2, 3, 4, 5, 6, 7}
	res, err := RunFlows(&f.Topology, Incast(senders, 0, 1<<20), fc)
	if err != nil {
		t.Fatalf("%s: %v", alg, err)
	}
	var sum cc.Stats
	for _, s := range senders {
		for id := uint64(1); id <= uint64(len(f.Hosts)); id++ {
			if c := f.Hosts[s].EP.Conn(id); c != nil {
				st := c.CCStats()
				sum.Decreases += st.Decreases
				sum.Congestions += st.Congestions
			}
		}
	}
	return res, countFabric(f), sum
}

// TestCCIncast: switches mark ECN, receivers echo the marks, and the
// controllers react. NSCC resends under a twelfth of what no control
// does, in less time (0.52 MB against 8.79, in 0.58x the time): with
// 64 KiB chunks it paces a window below a chunk and hears of the path
// once per chunk (NSCC's chunkPaceFloor), and a timeout after a silence
// in which its whole window was lost counts as congestion when the
// latest ACK was marked (before that it resent 1.71 MB). DCQCN (ns-3
// HPCC's default parameters) cuts its rate and resends less, at the cost
// of time (Meta's "hard to tune").
func TestCCIncast(t *testing.T) {
	none, noneFabric, noneCC := ccIncast(t, "none")
	if noneCC != (cc.Stats{}) || noneFabric.drops == 0 {
		t.Fatalf("none: %+v, %+v; want an incast that drops and no controller", noneCC, noneFabric)
	}
	for _, tt := range []struct {
		alg      string
		retxDiv  float64 // resends no more than none's over this
		slowdown float64
	}{
		{"nscc", 12, 1.2},
		{"credit", 100, 1.05},
		{"dcqcn", 1.5, 8}, // 5.29 MB against 8.79
	} {
		res, fab, st := ccIncast(t, tt.alg)
		if tt.alg != "credit" && (st.Congestions == 0 || st.Decreases == 0) {
			t.Errorf("%s: %+v; want ECN echoes taken and cuts", tt.alg, st)
		}
		t.Logf("%s: %v, resent %d, drops %d (none: %v, %d, %d)", tt.alg, monotime.Duration(res.End), res.Stats.RetxBytes, fab.drops,
			monotime.Duration(none.End), none.Stats.RetxBytes, noneFabric.drops)
		if float64(res.Stats.RetxBytes)*tt.retxDiv > float64(none.Stats.RetxBytes) || fab.drops >= noneFabric.drops {
			t.Errorf("%s resent %d bytes (%d drops); none resent %d (%d drops)", tt.alg, res.Stats.RetxBytes,
				fab.drops, none.Stats.RetxBytes, noneFabric.drops)
		}
		if float64(res.End) > tt.slowdown*float64(none.End) {
			t.Errorf("%s took %v, none %v", tt.alg, monotime.Duration(res.End), monotime.Duration(none.End))
		}
		again, _, _ := ccIncast(t, tt.alg)
		if again.End != res.End || again.Stats != res.Stats {
			t.Errorf("%s: two runs differ", tt.alg)
		}
	}
}

// TestCCLoneFlow: a lone flow pays little for a controller. Credit only
// waits for its first grant. NSCC's 1.5 BDP at the configured 8 us holds
// two 64 KiB chunks, and the core admits whole chunks: without the
// chunk's slack in its maximum window the link idled between them, and
// the flow took 1.34x as long; with it, the window grows from 1.5 BDP
// to where it no longer limits.
func TestCCLoneFlow(t *testing.T) {
	run := func(alg string) (monotime.Duration, cc.Stats) {
		a, _ := cc.Parse(alg)
		f, err := topology.LeafSpine(engine.New(1), 2, 2, 4, dcConfig(100e9, topology.EECMP))
		if err != nil {
			t.Fatal(err)
		}
		fc := flowsCfg(1, path.Single)
		fc.Core.CC, fc.Core.LineRate, fc.Core.BaseRTT = a, 100e9, 8*monotime.Microsecond
		res, err := RunFlows(&f.Topology, Incast([]int{5}, 0, 16<<20), fc)
		if err != nil {
			t.Fatal(err)
		}
		var st cc.Stats
		if c := f.Hosts[5].EP.Conn(1); c != nil {
			st = c.CCStats()
		}
		return res.FCT(0), st
	}
	none, _ := run("none")
	for _, tt := range []struct {
		alg  string
		cost float64 // at most this share over none's completion
	}{
		{"credit", 0.02},
		{"nscc", 0.05},
	} {
		got, st := run(tt.alg)
		t.Logf("%s: %v (none %v), window %d", tt.alg, got, none, st.Window)
		if float64(got) > (1+tt.cost)*float64(none) {
			t.Errorf("16 MiB alone: %v with %s, %v without", got, tt.alg, none)
		}
	}
}
