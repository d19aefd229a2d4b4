package cc

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// bbrPath is a tiny simulator for a BBR sender: a bottleneck at rate, a
// base round trip rtt, and queue more on every RTT sample (a standing
// queue someone else keeps); every lossEvery-th chunk sent is lost
// (reported when its ACK would have come) and every ecnEvery-th ACK
// echoes a mark (0: never). The sender always has data, or, with msg
// set, sends messages of msg chunks and a tail of tailBytes, each
// after waiting gap (for the receiver's credit).
type bbrPath struct {
	rate                float64 // bits per second
	rtt, queue          monotime.Duration
	lossEvery, ecnEvery int
	msg                 int
	tailBytes           int64
	gap                 monotime.Duration

	held monotime.Time // the next message may not start before

	free             monotime.Time // when the bottleneck is next free
	ring             [1 << 14]bbrChunk
	head, tail, sent int
	acks             int
	inflight         int64
}

type bbrChunk struct {
	sentAt, ackAt monotime.Time
	bytes         int64
	lost          bool
}

// run drives b for d from now, in 10 us steps, and returns the time it
// ended.
func (p *bbrPath) run(b *BBR, now monotime.Time, d monotime.Duration) monotime.Time {
	const chunk = 64 << 10
	for end := now.Add(d); now < end; {
		now = now.Add(10 * monotime.Microsecond)
		for p.head != p.tail && p.ring[p.head].ackAt <= now {
			c := p.ring[p.head]
			p.head = (p.head + 1) % len(p.ring)
			p.inflight -= c.bytes
			if c.lost {
				b.OnLoss(now, Loss{Bytes: c.bytes})
				continue
			}
			p.acks++
			b.OnAck(now, Ack{Bytes: c.bytes, RTT: now.Sub(c.sentAt) + p.queue, InFlight: p.inflight,
				ECN: p.ecnEvery > 0 && p.acks%p.ecnEvery == 0})
		}
		for now >= p.held && b.NextSend() <= now && (p.inflight == 0 || p.inflight+chunk <= b.Window()) {
			bytes := int64(chunk)
			last := p.msg > 0 && (p.sent+1)%(p.msg+1) == 0
			if last {
				bytes, p.held = p.tailBytes, now.Add(p.gap)
			}
			b.OnSend(now, int(bytes))
			if last {
				b.OnAppLimited(now) // as the core's next poll finds nothing
			}
			p.free = max(now, p.free).Add(monotime.TransmitTime(int(bytes), p.rate))
			p.sent++
			p.ring[p.tail] = bbrChunk{sentAt: now, ackAt: p.free.Add(p.rtt), bytes: bytes, lost: p.lossEvery > 0 && p.sent%p.lossEvery == 0}
			p.tail = (p.tail + 1) % len(p.ring)
			p.inflight += bytes
		}
	}
	return now
}

// TestBBRLoss: startup finds the rate, random loss on an empty queue is
// not congestion, loss well above it with a queue is, and so is ECN.
func TestBBRLoss(t *testing.T) {
	ms := monotime.Millisecond
	const rate = 1e9
	clean := bbrPath{rate: rate, rtt: 20 * ms}
	bdp := int64(rate / 8 * (20 * ms).Seconds())
	cases := []struct {
		name      string
		path      bbrPath
		wantCut   bool
		wantIgnor bool
	}{
		{"clean", clean, false, false},
		{"2% random loss, no queue", bbrPath{rate: rate, rtt: 20 * ms, lossEvery: 50}, false, true},
		{"a queue, no loss", bbrPath{rate: rate, rtt: 20 * ms, queue: 5 * ms}, false, false},
		// The first second (no queue) learns 2% as the path's own; a
		// queue with 2% more is no congestion, with 10% more it is.
		{"a queue with 2% loss", bbrPath{rate: rate, rtt: 20 * ms, queue: 5 * ms, lossEvery: 50}, false, true},
		{"a queue with 12% loss", bbrPath{rate: rate, rtt: 20 * ms, queue: 5 * ms, lossEvery: 8}, true, false},
		{"ECN", bbrPath{rate: rate, rtt: 20 * ms, ecnEvery: 10}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBBR(Params{LineRate: 10e9, MSS: 4096, Quantum: 64 << 10, HostNoise: ms})
			p := tc.path
			p.queue, p.ecnEvery = 0, 0 // the first second: the path alone, its random loss learnt
			if p.lossEvery > 0 {
				p.lossEvery = 50
			}
			now := p.run(b, 0, monotime.Second)
			if b.mode != bbrProbeBW {
				t.Fatalf("after a second: mode %d, want ProbeBW", b.mode)
			}
			if got := b.bw * 8; got < 0.95*rate || got > 1.05*rate {
				t.Fatalf("after a second: bottleneck rate %.0f, want %.0f within 5%%", got, rate)
			}
			before := b.Stats()
			p.queue, p.lossEvery, p.ecnEvery = tc.path.queue, tc.path.lossEvery, tc.path.ecnEvery
			p.run(b, now, 2*monotime.Second)
			st := b.Stats()
			cut := st.Decreases > before.Decreases
			if cut != tc.wantCut {
				t.Errorf("window cut %v (%d decreases), want %v; %+v", cut, st.Decreases-before.Decreases, tc.wantCut, st)
			}
			if tc.wantIgnor && st.IgnoredLosses == before.IgnoredLosses {
				t.Error("no loss was taken for random")
			}
			if !tc.wantCut && st.Window < 19*bdp/10 {
				t.Errorf("window %d, want at least 1.9 times the BDP %d", st.Window, bdp)
			}
			if tc.wantCut && st.Window >= 2*bdp {
				t.Errorf("window %d after congestion, want under twice the BDP %d", st.Window, bdp)
			}
		})
	}
}

// TestBBRAppLimited: an application slower than the path, whose
// messages end in a few bytes and wait for the next, does not lower the
// model: its ACKs measure the application (the core says when it ran out
// of data), so a sender that has data again starts at the path's rate.
func TestBBRAppLimited(t *testing.T) {
	ms := monotime.Millisecond
	const rate = 1e9
	b := NewBBR(Params{MSS: 8192, Quantum: 64 << 10, LearnLineRate: true, HostNoise: ms})
	p := bbrPath{rate: rate, rtt: ms}
	now := p.run(b, 0, monotime.Second)
	if b.bw < 0.95*rate/8 {
		t.Fatalf("after a second of bulk data the model's rate is %.0f B/s, want %.0f", b.bw, rate/8)
	}
	p.msg, p.tailBytes, p.gap = 1, 16, 900*monotime.Microsecond
	for range 50 {
		now = p.run(b, now, 100*ms)
		if b.bw < 0.95*rate/8 {
			t.Fatalf("an application-limited sender's model fell to %.0f B/s, want %.0f", b.bw, rate/8)
		}
	}
}

// TestBBRTailAlone: after pauses in the ACKs (a host descheduled), a
// message's last chunk of a few bytes acknowledged alone does not lower
// the model: it says where a message ended, not how fast the path is.
func TestBBRTailAlone(t *testing.T) {
	ms := monotime.Millisecond
	b := NewBBR(Params{MSS: 8192, Quantum: 64 << 10, LearnLineRate: true, HostNoise: ms})
	p := bbrPath{rate: 200e6, rtt: 300 * monotime.Microsecond}
	now := p.run(b, 0, monotime.Second)
	learnt := b.bw
	for range 2 * bbrBWRounds {
		now = now.Add(10 * ms)
		b.OnAck(now, Ack{Bytes: 64 << 10, RTT: 300 * monotime.Microsecond, InFlight: 16})
		now = now.Add(600 * monotime.Microsecond)
		b.OnAck(now, Ack{Bytes: 16, RTT: 300 * monotime.Microsecond})
	}
	if b.bw < 0.9*learnt {
		t.Fatalf("the model fell from %.0f to %.0f B/s", learnt, b.bw)
	}
}

// TestBBRClimbsBack: a model far below the path's rate climbs back by
// probing, though at that rate its pacer spaces the ACKs further apart
// than two round trips: a gap the pacer made is not idleness, and the
// samples across it count.
func TestBBRClimbsBack(t *testing.T) {
	us := monotime.Microsecond
	b := NewBBR(Params{MSS: 8192, Quantum: 64 << 10, LearnLineRate: true, HostNoise: monotime.Millisecond})
	p := bbrPath{rate: 200e6, rtt: 300 * us}
	now := p.run(b, 0, monotime.Second).Add(100 * monotime.Millisecond)
	const low = 20e3
	for i := range b.bwSlots {
		b.bwSlots[i] = low
	}
	b.bw = low
	rtt := 300*us + monotime.TransmitTime(64<<10, p.rate)
	for end := now.Add(60 * monotime.Second); now < end; {
		now = max(now, b.NextSend())
		b.OnSend(now, 64<<10)
		now = now.Add(rtt)
		b.OnAck(now, Ack{Bytes: 64 << 10, RTT: rtt})
	}
	if b.bw < 4*low {
		t.Fatalf("a minute after the model fell to %.0f B/s it is at %.0f", low, b.bw)
	}
}

// TestBBRProbeRTT: ten seconds without a lower RTT sample, BBR holds half
// the BDP for 200 ms, then goes back to probing for bandwidth.
func TestBBRProbeRTT(t *testing.T) {
	ms := monotime.Millisecond
	p := &bbrPath{rate: 1e9, rtt: 20 * ms}
	b := NewBBR(Params{MSS: 4096, Quantum: 64 << 10, LearnLineRate: true})
	now := p.run(b, 0, monotime.Second)
	p.queue = monotime.Millisecond // never as low as the floor again
	now = p.run(b, now, 9500*ms)
	sawProbe := false
	for end := now.Add(monotime.Second); now < end; {
		now = p.run(b, now, ms)
		if b.mode == bbrProbeRTT {
			sawProbe = true
			if w := b.Window(); w > int64(1e9/8*0.02*0.55) {
				t.Fatalf("ProbeRTT window %d, want about half the BDP", w)
			}
		}
	}
	if !sawProbe || b.mode != bbrProbeBW {
		t.Fatalf("saw ProbeRTT %v, mode now %d; want ProbeRTT then ProbeBW", sawProbe, b.mode)
	}
}

// TestBBRSteadyStateAllocs: the per-packet calls allocate nothing.
func TestBBRSteadyStateAllocs(t *testing.T) {
	b := NewBBR(Params{MSS: 4096, Quantum: 64 << 10, LearnLineRate: true})
	p := &bbrPath{rate: 1e9, rtt: 20 * monotime.Millisecond, lossEvery: 50}
	now := p.run(b, 0, monotime.Second)
	if a := testing.AllocsPerRun(1000, func() { now = p.run(b, now, monotime.Millisecond) }); a != 0 {
		t.Fatalf("%.1f allocations per millisecond of ACKs, want 0", a)
	}
}
