package network

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/engine"
)

// arrival is a packet the test offers a port: when, how big, which kind.
type arrival struct {
	at      monotime.Time
	wire    int
	control bool
}

// delivery is what came out of the wire: which packet, when, marked or not.
type delivery struct {
	id  int32
	at  monotime.Time
	ecn bool
}

type sink struct {
	net *Network
	got []delivery
}

func (r *sink) Receive(p *Packet) {
	r.got = append(r.got, delivery{p.Src, r.net.Eng.Now(), p.ECN})
	r.net.Free(p)
}

// offer schedules the arrivals into port and runs the engine dry.
func offer(eng *engine.Engine, n *Network, port Node, load []arrival) {
	for i, a := range load {
		eng.At(a.at, engine.HandlerFunc(func(*engine.Engine, uint64) {
			p := n.NewPacket(nil, nil)
			p.Wire, p.Src, p.Control = a.wire, int32(i), a.control
			port.Receive(p)
		}), 0)
	}
	eng.Run()
}

// TestEgressMatchesQueueAndLink checks the one-event port against the
// two-event reference it replaces (a Queue feeding a Link): for random
// bursty loads with control packets, small buffers and ECN marking, every
// packet must come out at the same picosecond, in the same order, marked
// the same, and the counters and occupancy integral must agree.
func TestEgressMatchesQueueAndLink(t *testing.T) {
	const rate = 100e9
	for _, tc := range []struct {
		name             string
		limit, ecn       int
		controlShare     float64
		meanGap          monotime.Duration
		delay            monotime.Duration
		packets          int
		seed             uint64
		wantDrops, wantQ bool
	}{
		{"light", 0, 0, 0.1, 500 * monotime.Nanosecond, monotime.Microsecond, 2000, 1, false, true},
		{"overloaded-droptail", 64 << 10, 16 << 10, 0.2, 200 * monotime.Nanosecond, monotime.Microsecond, 5000, 2, true, true},
		{"control-heavy", 32 << 10, 8 << 10, 0.5, 150 * monotime.Nanosecond, 0, 5000, 3, true, true},
		{"long-wire", 1 << 20, 0, 0.05, 250 * monotime.Nanosecond, 25 * monotime.Millisecond, 3000, 4, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 7))
			load := make([]arrival, tc.packets)
			now := monotime.Time(0)
			for i := range load {
				// Bursts: a quarter of packets arrive together with the one before.
				if rng.Float64() > 0.25 {
					now = now.Add(monotime.Duration(rng.ExpFloat64() * float64(tc.meanGap)))
				}
				load[i] = arrival{at: now, wire: 4162, control: rng.Float64() < tc.controlShare}
				if load[i].control {
					load[i].wire = 64 + rng.IntN(100)
				}
			}

			refEng := engine.New(1)
			refNet := NewNetwork(refEng)
			refOut := &sink{net: refNet}
			link := NewLink(refNet, tc.delay, nil, refOut)
			q := NewQueue(refNet, rate, tc.limit, link)
			q.ECN = StepECN(tc.ecn)
			offer(refEng, refNet, q, load)

			eng := engine.New(1)
			net := NewNetwork(eng)
			out := &sink{net: net}
			e := NewEgress(net, rate, tc.limit, tc.delay, out)
			e.ECN = StepECN(tc.ecn)
			offer(eng, net, e, load)

			if len(out.got) != len(refOut.got) {
				t.Fatalf("%d packets delivered, reference %d", len(out.got), len(refOut.got))
			}
			for i := range out.got {
				if out.got[i] != refOut.got[i] {
					t.Fatalf("delivery %d: %+v, reference %+v", i, out.got[i], refOut.got[i])
				}
			}
			e.advance(eng.Now())
			q.account()
			got, want := e.Stats, q.Stats
			if got.Enqueued != want.Enqueued || got.Dropped != want.Dropped || got.Marked != want.Marked ||
				got.SentBytes != want.SentBytes || got.MaxBytes != want.MaxBytes {
				t.Errorf("stats %+v, reference %+v", got, want)
			}
			if math.Abs(got.ByteTime-want.ByteTime) > 1e-9*want.ByteTime {
				t.Errorf("occupancy integral %g, reference %g", got.ByteTime, want.ByteTime)
			}
			if e.bytes != 0 || e.sending != nil || e.list.n != 0 {
				t.Errorf("port not empty at the end: %d bytes, %d packets", e.bytes, e.list.n)
			}
			if (want.Dropped > 0) != tc.wantDrops || (want.MaxBytes > 8<<10) != tc.wantQ {
				t.Errorf("load did not exercise the case: %+v", want)
			}
			if e.Wire.Delivered != link.Stats.Delivered || e.Wire.Lost != 0 {
				t.Errorf("wire %+v, reference %+v", e.Wire, link.Stats)
			}
		})
	}
}

// TestEgressCut checks that a cable cut loses the packets on the wire as
// well as those serialized onto it afterwards, and that the port keeps
// draining (its buffer does not stay full).
func TestEgressCut(t *testing.T) {
	eng := engine.New(1)
	net := NewNetwork(eng)
	out := &sink{net: net}
	const delay = 10 * monotime.Microsecond
	e := NewEgress(net, 10e9, 0, delay, out)
	// 100 packets of 1250 B at 10 Gbit/s: one per microsecond.
	load := make([]arrival, 100)
	for i := range load {
		load[i] = arrival{at: monotime.Time(i) * monotime.Time(monotime.Microsecond), wire: 1250}
	}
	eng.At(monotime.Time(50*monotime.Microsecond), engine.HandlerFunc(func(*engine.Engine, uint64) { e.Up = false }), 0)
	offer(eng, net, e, load)
	// Packets arriving (departure + 10 us) before the cut at 50 us: those
	// that left by 40 us, the first 40 (departures at 1..40 us).
	if len(out.got) != 39 && len(out.got) != 40 {
		t.Errorf("%d delivered, want the ~40 that arrived before the cut", len(out.got))
	}
	if e.Wire.Lost+e.Wire.Delivered != 100 || e.Bytes() != 0 {
		t.Errorf("wire %+v, %d bytes left; want all 100 accounted and the port drained", e.Wire, e.Bytes())
	}
}
