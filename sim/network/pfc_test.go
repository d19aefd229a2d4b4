package network

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
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
	if s := e.PauseStats(eng.Now()); s.Pauses != 1 || s.Paused != monotime.Duration(24*us+us/2) {
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

type waitSink struct {
	net  *Network
	wait map[int32]monotime.Duration
}

func (s *waitSink) Receive(p *Packet) {
	s.wait[p.Src] = p.Waited()
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
