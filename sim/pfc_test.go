package sim

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/sim/engine"
)

const us = monotime.Time(monotime.Microsecond)

// TestEgressPauseResume pauses a port mid-burst and checks every arrival
// to the picosecond: the packet being sent finishes, the rest wait until
// the resume, and a control packet goes out during the pause.
func TestEgressPauseResume(t *testing.T) {
	eng := engine.New(1)
	net := NewNetwork(eng)
	out := &sink{net: net}
	const delay = 10 * monotime.Microsecond
	e := NewEgress(net, 10e9, 0, delay, out) // 1250 B: 1 us each
	load := make([]arrival, 20)
	for i := range load {
		load[i] = arrival{wire: 1250}
	}
	load = append(load, arrival{at: 10 * us, wire: 125, control: true})
	eng.At(5*us+us/2, engine.HandlerFunc(func(*engine.Engine, uint64) { e.setPaused(true) }), 0)
	eng.At(30*us, engine.HandlerFunc(func(*engine.Engine, uint64) { e.setPaused(false) }), 0)
	offer(eng, net, e, load)

	var want []delivery
	for i := range 6 { // departed by 5 us, or being sent at 5.5 us (leaves at 6)
		want = append(want, delivery{id: int32(i), at: monotime.Time(i+1)*us + monotime.Time(delay)})
	}
	want = append(want, delivery{id: 20, at: 10*us + us/10 + monotime.Time(delay)})
	for i := 6; i < 20; i++ {
		want = append(want, delivery{id: int32(i), at: 30*us + monotime.Time(i-5)*us + monotime.Time(delay)})
	}
	if len(out.got) != len(want) {
		t.Fatalf("%d delivered, want %d", len(out.got), len(want))
	}
	for i := range want {
		if out.got[i] != want[i] {
			t.Errorf("delivery %d: %+v, want %+v", i, out.got[i], want[i])
		}
	}
	if s := e.stats(eng.Now()); s.Pauses != 1 || s.Paused != monotime.Duration(24*us+us/2) {
		t.Errorf("pause stats %+v; want 1 pause of 24.5us", s)
	}
}

// TestPauseWatchdog leaves a port paused: the watchdog must count the
// storm and let the data go.
func TestPauseWatchdog(t *testing.T) {
	eng := engine.New(1)
	net := NewNetwork(eng)
	out := &sink{net: net}
	e := NewEgress(net, 10e9, 0, monotime.Microsecond, out)
	e.Watchdog = 100 * monotime.Microsecond
	eng.At(0, engine.HandlerFunc(func(*engine.Engine, uint64) { e.setPaused(true) }), 0)
	offer(eng, net, e, []arrival{{at: us, wire: 1250}, {at: 2 * us, wire: 1250}})
	if e.Pause.WatchdogTrips != 1 || len(out.got) != 2 || out.got[0].at != 102*us {
		t.Errorf("trips %d, deliveries %+v; want one trip and both packets after it", e.Pause.WatchdogTrips, out.got)
	}
}

// incastFabric is seven hosts sending to one across a small leaf-spine
// with shallow port buffers, with or without PFC.
func incastFabric(t *testing.T, pfc *PFC) (*Fabric, FlowsResult) {
	return incastWith(t, pfc, 0)
}

func incastWith(t *testing.T, pfc *PFC, admission int) (*Fabric, FlowsResult) {
	t.Helper()
	eng := engine.New(1)
	cfg := dcConfig(100e9, EECMP)
	cfg.TierQueue = []int{64 << 10}
	cfg.PFC = pfc
	f, err := LeafSpine(eng, 2, 2, 4, cfg)
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

func countFabric(f *Fabric) fabricCounts {
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

	f, res := incastFabric(t, &PFC{XOff: 32 << 10, XOn: 16 << 10, Watchdog: 10 * monotime.Millisecond})
	c := countFabric(f)
	if c.drops != 0 || c.headroomDrops != 0 || c.pauses == 0 || c.trips != 0 || res.Stats.RetxBytes != 0 {
		t.Errorf("with PFC: %+v, %d bytes resent; want pauses and no loss", c, res.Stats.RetxBytes)
	}
	hostPauses := uint64(0)
	for _, p := range f.Ports {
		if p.Q != nil {
			hostPauses += p.Q.Pause.Pauses
		}
		if p.In != nil && p.In.bytes != 0 {
			t.Errorf("port %d: ingress holds %d bytes at the end", p.ID, p.In.bytes)
		}
		if p.E != nil && (p.E.paused || p.E.held.n != 0) || p.Q != nil && p.Q.paused {
			t.Errorf("port %d left paused", p.ID)
		}
	}
	if hostPauses == 0 {
		t.Errorf("no sender NIC was ever paused: the back-pressure did not reach the hosts")
	}
	for _, s := range f.FSwitch {
		if u := s.Mem.Used(); u != 0 {
			t.Errorf("switch %d holds %d bytes at the end", s.id, u)
		}
	}
	// The incast is bottlenecked by the receiver's link either way; PFC
	// must not cost more than a few percent of it.
	if res.End > lossy.End+lossy.End/20 {
		t.Errorf("lossless incast ended at %v, lossy at %v", res.End, lossy.End)
	}

	f, res = incastFabric(t, &PFC{XOff: 32 << 10, XOn: 16 << 10, Headroom: 1})
	if c := countFabric(f); c.headroomDrops == 0 || res.Stats.RetxBytes == 0 {
		t.Errorf("with 1 byte of headroom: %+v, %d bytes resent; want headroom overflows", c, res.Stats.RetxBytes)
	}
}

type waitSink struct {
	net  *Network
	wait map[int32]monotime.Duration
}

func (s *waitSink) Receive(p *Packet) {
	s.wait[p.Src] = p.wait
	s.net.Free(p)
}

// TestControlWait checks the queueing wait a packet carries: a control
// packet behind ten data packets waits for the one being sent with a
// priority queue, for all of them in line; a pause adds the time the port
// sat idle (from 5us, when the packet it was sending at 4us left, to 9us).
func TestControlWait(t *testing.T) {
	for _, tc := range []struct {
		name   string
		inLine bool
		pause  bool
		want   monotime.Duration // the control packet's wait
	}{
		{"priority", false, false, monotime.Duration(us / 2)},
		{"in line", true, false, monotime.Duration(7*us + us/2)},
		{"in line, paused 4us-9us", true, true, monotime.Duration(11*us + us/2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := engine.New(1)
			net := NewNetwork(eng)
			out := &waitSink{net: net, wait: map[int32]monotime.Duration{}}
			e := NewEgress(net, 10e9, 0, monotime.Microsecond, out)
			e.ControlInLine = tc.inLine
			load := make([]arrival, 10)
			for i := range load {
				load[i] = arrival{wire: 1250}
			}
			load = append(load, arrival{at: 2*us + us/2, wire: 125, control: true})
			if tc.pause {
				eng.At(4*us, engine.HandlerFunc(func(*engine.Engine, uint64) { e.setPaused(true) }), 0)
				eng.At(9*us, engine.HandlerFunc(func(*engine.Engine, uint64) { e.setPaused(false) }), 0)
			}
			offer(eng, net, e, load)
			if got := out.wait[10]; got != tc.want {
				t.Errorf("control packet waited %v, want %v", got, tc.want)
			}
		})
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
