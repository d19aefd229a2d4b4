package sim

import (
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/topology"
)

func dcConfig(rate float64, b topology.BalancerKind) topology.FabricConfig {
	return topology.FabricConfig{HostRate: rate, HostDelay: monotime.Microsecond, TierRate: []float64{rate},
		TierDelay: []monotime.Duration{monotime.Microsecond}, TierQueue: []int{1 << 20}, Balancer: topology.Balancer{Kind: b}}
}

func hostList(n int) []int {
	h := make([]int, n)
	for i := range h {
		h[i] = i
	}
	return h
}

func flowsCfg(qps int, sel path.Kind) FlowsConfig {
	return FlowsConfig{Scheme: reliability.SelectiveRepeat{NACK: true}, QPs: qps, Select: sel,
		Core: core.Config{InitialRTT: 20 * monotime.Microsecond, MaxMsgs: 16}}
}

func TestFatTreePermutation(t *testing.T) {
	eng := engine.New(1)
	f, err := topology.FatTree(eng, 4, dcConfig(100e9, topology.EECMP))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Hosts) != 16 || len(f.FSwitch) != 20 {
		t.Fatalf("k=4 fat-tree: %d hosts, %d switches", len(f.Hosts), len(f.FSwitch))
	}
	flows := Permutation(eng, hostList(16), 1<<20)
	res, err := RunFlows(&f.Topology, flows, flowsCfg(8, path.Oblivious))
	if err != nil {
		t.Fatal(err)
	}
	// 1 MiB at 100 Gbit/s is 84 us of serialization: with spraying over
	// a full-bisection fabric every flow should finish close to that.
	for i := range flows {
		if fct := res.FCT(i); fct < 84*monotime.Microsecond || fct > 400*monotime.Microsecond {
			t.Errorf("flow %d: FCT %v", i, fct)
		}
	}
	// A hop is a packet crossing a cable, counted once: the network's
	// tally is what the cables delivered, and every packet of a flow
	// crosses at least two of them (its host's and its peer's).
	var delivered uint64
	for _, p := range f.Ports {
		if p.E != nil {
			delivered += p.E.Wire.Delivered
		} else {
			delivered += p.L.Stats.Delivered
		}
	}
	if f.Net.Hops != delivered {
		t.Errorf("%d hops, but the cables delivered %d packets", f.Net.Hops, delivered)
	}
	if lo := uint64(2 * 16 * (1 << 20) / 4096); f.Net.Hops < lo || f.Net.Hops > 3*lo {
		t.Errorf("%d hops for 16 flows of 256 packets over 2 to 6 cables each (with control packets): want %d..%d", f.Net.Hops, lo, 3*lo)
	}
}

func TestRingAllReduceFlows(t *testing.T) {
	eng := engine.New(2)
	f, err := topology.LeafSpine(eng, 4, 2, 4, dcConfig(100e9, topology.EECMP))
	if err != nil {
		t.Fatal(err)
	}
	flows := RingAllReduce(hostList(16), 16<<20)
	res, err := RunFlows(&f.Topology, flows, flowsCfg(4, path.Single))
	if err != nil {
		t.Fatal(err)
	}
	// Lower bound: 2(N-1) steps of size/N at the host rate.
	bound := monotime.Duration(2*15) * monotime.TransmitTime((16<<20)/16, 100e9)
	if res.End < monotime.Time(bound) {
		t.Fatalf("allreduce took %v, below the %v bound", monotime.Duration(res.End), bound)
	}
	t.Logf("allreduce %v, bound %v", monotime.Duration(res.End), bound)
}

// TestLinkFailureReroutes cuts a leaf-spine cable mid-run: packets in
// flight on it are lost, routing converges after a detection delay, and
// every flow still arrives.
func TestLinkFailureReroutes(t *testing.T) {
	eng := engine.New(3)
	f, err := topology.LeafSpine(eng, 2, 2, 4, dcConfig(100e9, topology.EECMP))
	if err != nil {
		t.Fatal(err)
	}
	leaf0, spine0 := f.SwitchNode(0), f.SwitchNode(2)
	eng.After(50*monotime.Microsecond, engine.HandlerFunc(func(*engine.Engine, uint64) {
		if err := f.SetCable(leaf0, spine0, false); err != nil {
			t.Error(err)
		}
		eng.After(20*monotime.Microsecond, engine.HandlerFunc(func(*engine.Engine, uint64) { f.Reroute() }), 0)
	}), 0)
	var flows []Flow
	for i := range 4 {
		flows = append(flows, Flow{Src: i, Dst: 4 + i, Bytes: 4 << 20})
	}
	start := time.Now()
	res, err := RunFlows(&f.Topology, flows, flowsCfg(8, path.Oblivious))
	if err != nil {
		t.Fatal(err)
	}
	lost := uint64(0)
	for _, p := range f.Ports {
		lost += p.Lost()
	}
	if lost == 0 {
		t.Fatal("nothing was lost on the cut cable")
	}
	t.Logf("done at %v, %d lost on the cut, wall %v", monotime.Duration(res.End), lost, time.Since(start))
}

// TestFlowsCompleteOutOfOrder loses the tail of a large message (its
// host's cable is cut for a microsecond) and sends many small ones behind
// it on the same connection: the small ones complete first, while the
// large one waits for its retransmission timeout. Receives must still be
// posted only into free slots: the window runs from the oldest incomplete
// receive, not from the count completed.
func TestFlowsCompleteOutOfOrder(t *testing.T) {
	eng := engine.New(5)
	f, err := topology.LeafSpine(eng, 2, 1, 2, dcConfig(100e9, topology.EECMP))
	if err != nil {
		t.Fatal(err)
	}
	flows := []Flow{{Src: 0, Dst: 2, Bytes: 4 << 20}}
	for range 40 {
		flows = append(flows, Flow{Src: 0, Dst: 2, Bytes: 4 << 10})
	}
	leaf := f.SwitchNode(0)
	cut := func(up bool) engine.HandlerFunc {
		return func(*engine.Engine, uint64) { _ = f.SetCable(0, leaf, up) }
	}
	eng.At(monotime.Time(330*monotime.Microsecond), cut(false), 0)
	eng.At(monotime.Time(331*monotime.Microsecond), cut(true), 0)
	fc := flowsCfg(1, path.Single)
	fc.Scheme = reliability.SelectiveRepeat{} // repaired by timeout only
	res, err := RunFlows(&f.Topology, flows, fc)
	if err != nil {
		t.Fatal(err)
	}
	before := 0
	for i := 1; i < len(flows); i++ {
		if res.Done[i] < res.Done[0] {
			before++
		}
	}
	// MaxMsgs 16 gives a window of 8 receives: the large one and 7 more.
	if before != 7 {
		t.Errorf("%d small messages completed before the large one, want the 7 its window leaves", before)
	}
}
