package cc

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// bbrPath feeds a BBR controller a steady ACK clock: a chunk acknowledged
// every chunk time at rate, each ACK's RTT the base plus queue, a chunk
// sent for each one acked, what is in flight at most the window; every
// lossEvery-th ACK comes with a chunk's
// loss and every ecnEvery-th with an ECN echo (0: never).
type bbrPath struct {
	rate                float64 // bits per second
	rtt, queue          monotime.Duration
	lossEvery, ecnEvery int
}

// run drives b for d from now and returns the time it ended.
func (p bbrPath) run(b *BBR, now monotime.Time, d monotime.Duration) monotime.Time {
	const chunk = 64 << 10
	gap := monotime.TransmitTime(chunk, p.rate)
	inflight := int64(p.rate / 8 * (p.rtt + p.queue).Seconds())
	for i, end := 1, now.Add(d); now < end; i++ {
		now = now.Add(gap)
		b.OnSend(now, chunk)
		b.OnAck(now, Ack{Bytes: chunk, RTT: p.rtt + p.queue, InFlight: min(inflight, b.Window()),
			ECN: p.ecnEvery > 0 && i%p.ecnEvery == 0})
		if p.lossEvery > 0 && i%p.lossEvery == 0 {
			b.OnLoss(now, Loss{Bytes: chunk})
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
			base := clean
			if tc.path.lossEvery > 0 {
				base.lossEvery = 50
			}
			now := base.run(b, 0, monotime.Second)
			if b.mode != bbrProbeBW {
				t.Fatalf("after a second: mode %d, want ProbeBW", b.mode)
			}
			if got := b.bw * 8; got < 0.95*rate || got > 1.05*rate {
				t.Fatalf("after a second: bottleneck rate %.0f, want %.0f within 5%%", got, rate)
			}
			before := b.Stats()
			tc.path.run(b, now, 2*monotime.Second)
			st := b.Stats()
			cut := st.Decreases > before.Decreases
			if cut != tc.wantCut {
				t.Errorf("window cut %v (%d decreases), want %v; %+v", cut, st.Decreases-before.Decreases, tc.wantCut, st)
			}
			if tc.wantIgnor && st.IgnoredLosses == before.IgnoredLosses {
				t.Error("no loss was taken for random")
			}
			bdp := int64(rate / 8 * (20 * ms).Seconds())
			if !tc.wantCut && st.Window < 2*bdp {
				t.Errorf("window %d, want at least twice the BDP %d", st.Window, bdp)
			}
			if tc.wantCut && st.Window >= 2*bdp {
				t.Errorf("window %d after congestion, want under twice the BDP %d", st.Window, bdp)
			}
		})
	}
}

// TestBBRProbeRTT: ten seconds without a lower RTT sample, BBR holds half
// the BDP for 200 ms, then goes back to probing for bandwidth.
func TestBBRProbeRTT(t *testing.T) {
	ms := monotime.Millisecond
	p := bbrPath{rate: 1e9, rtt: 20 * ms}
	b := NewBBR(Params{MSS: 4096, Quantum: 64 << 10})
	now := p.run(b, 0, monotime.Second)
	p.rtt++ // never as low as the floor again
	now = p.run(b, now, 9500*ms)
	sawProbe := false
	for end := now.Add(monotime.Second); now < end; {
		now = p.run(b, now, ms)
		if b.mode == bbrProbeRTT {
			sawProbe = true
			if w := b.Window(); w > int64(1e9/8*0.02/2)+1 {
				t.Fatalf("ProbeRTT window %d, want at most half the BDP", w)
			}
		}
	}
	if !sawProbe || b.mode != bbrProbeBW {
		t.Fatalf("saw ProbeRTT %v, mode now %d; want ProbeRTT then ProbeBW", sawProbe, b.mode)
	}
}

// TestBBRSteadyStateAllocs: the per-packet calls allocate nothing.
func TestBBRSteadyStateAllocs(t *testing.T) {
	b := NewBBR(Params{MSS: 4096, Quantum: 64 << 10})
	p := bbrPath{rate: 1e9, rtt: 20 * monotime.Millisecond, lossEvery: 50}
	now := p.run(b, 0, monotime.Second)
	if a := testing.AllocsPerRun(1000, func() { now = p.run(b, now, monotime.Millisecond) }); a != 0 {
		t.Fatalf("%.1f allocations per millisecond of ACKs, want 0", a)
	}
}
