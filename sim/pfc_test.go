package sim

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/network"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// incastFabric is seven hosts sending to one across a small leaf-spine
// with shallow port buffers, with or without PFC.
func incastFabric(t *testing.T, pfc *network.PFC) (*topology.Fabric, FlowsResult) {
	return incastWith(t, pfc, 0)
}

func incastWith(t *testing.T, pfc *network.PFC, admission int) (*topology.Fabric, FlowsResult) {
	t.Helper()
	eng := engine.New(1)
	cfg := dcConfig(100e9, topology.EECMP)
	cfg.TierQueue = []int{64 << 10}
	cfg.PFC = pfc
	f, err := topology.LeafSpine(eng, 2, 2, 4, cfg)
	if err != nil {
		t.Fatal(err)
	}
	fc := flowsCfg(1, path.Single)
	fc.Admission = admission
	res, err := RunFlows(&f.Topology, Incast([]int{1, 2, 3, 4, 5, 6, 7}, 0, 1<<20), fc)
	if err != nil {
		t.Fatal(err)
	}
	return f, res
}

type fabricCounts struct {
	drops, headroomDrops, pauses, trips uint64
}

func countFabric(f *topology.Fabric) fabricCounts {
	var c fabricCounts
	for _, p := range f.Ports {
		if p.E != nil {
			c.drops += p.E.Stats.Dropped
		}
		if p.In != nil {
			c.headroomDrops += p.In.Drops
		}
		s := p.Pause(f.Net.Eng.Now())
		c.pauses += s.Pauses
		c.trips += s.WatchdogTrips
	}
	return c
}

// TestPFCIncast checks PFC turns a lossy incast lossless: the drops
// become pauses (reaching back to the senders' NICs), nothing is
// retransmitted, and at the end every ingress and switch memory is empty
// and no port is left paused. With too little headroom, the packets
// already on the wire when the pause lands are lost.
func TestPFCIncast(t *testing.T) {
	f, lossy := incastFabric(t, nil)
	if c := countFabric(f); c.drops == 0 || c.pauses != 0 || lossy.Stats.RetxBytes == 0 {
		t.Fatalf("without PFC: %+v, %d bytes resent; want drops and retransmissions", c, lossy.Stats.RetxBytes)
	}

	f, res := incastFabric(t, &network.PFC{XOff: 32 << 10, XOn: 16 << 10, Watchdog: 10 * monotime.Millisecond})
	c := countFabric(f)
	if c.drops != 0 || c.headroomDrops != 0 || c.pauses == 0 || c.trips != 0 || res.Stats.RetxBytes != 0 {
		t.Errorf("with PFC: %+v, %d bytes resent; want pauses and no loss", c, res.Stats.RetxBytes)
	}
	hostPauses := uint64(0)
	for _, p := range f.Ports {
		if p.Q != nil {
			hostPauses += p.Q.Pause.Pauses
		}
		if p.In != nil && p.In.Held() != 0 {
			t.Errorf("port %d: ingress holds %d bytes at the end", p.ID, p.In.Held())
		}
		if p.E != nil && (p.E.Paused() || p.E.Held() != 0) || p.Q != nil && p.Q.Paused() {
			t.Errorf("port %d left paused", p.ID)
		}
	}
	if hostPauses == 0 {
		t.Errorf("no sender NIC was ever paused: the back-pressure did not reach the hosts")
	}
	for i, s := range f.FSwitch {
		if u := s.Mem.Used(); u != 0 {
			t.Errorf("switch %d holds %d bytes at the end", i, u)
		}
	}
	// The incast is bottlenecked by the receiver's link either way; PFC
	// must not cost more than a few percent of it.
	if res.End > lossy.End+lossy.End/20 {
		t.Errorf("lossless incast ended at %v, lossy at %v", res.End, lossy.End)
	}

	f, res = incastFabric(t, &network.PFC{XOff: 32 << 10, XOn: 16 << 10, Headroom: 1})
	if c := countFabric(f); c.headroomDrops == 0 || res.Stats.RetxBytes == 0 {
		t.Errorf("with 1 byte of headroom: %+v, %d bytes resent; want headroom overflows", c, res.Stats.RetxBytes)
	}
}

// TestReceiverAdmission grants one sender at a time: the incast that
// overflowed shallow buffers then drops nothing, the flows arrive one
// after another in order, and the whole takes what the receiver's link
// needs for 7 MiB, plus a few round trips.
func TestReceiverAdmission(t *testing.T) {
	f, res := incastWith(t, nil, 1)
	if c := countFabric(f); c.drops != 0 || res.Stats.RetxBytes != 0 {
		t.Errorf("%+v, %d bytes resent; want no loss", c, res.Stats.RetxBytes)
	}
	for i := 1; i < len(res.Done); i++ {
		if res.Done[i] <= res.Done[i-1] {
			t.Errorf("flow %d arrived at %v, before flow %d at %v", i, res.Done[i], i-1, res.Done[i-1])
		}
	}
	ideal := 7 * monotime.TransmitTime(1<<20, 100e9)
	if end := monotime.Duration(res.End); end < ideal || end > ideal+ideal/5 {
		t.Errorf("incast took %v; the receiver's link needs %v", end, ideal)
	}
}
