package cc

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// learnRun ACKs an NSCC sender whose window refills at once (so in
// flight stays at the window, unless appLimited caps it) for rounds
// round trips of base RTT + delay, and returns it.
func learnRun(learn bool, delay monotime.Duration, appLimited int64, rounds int) *NSCC {
	p := Params{LineRate: 10e9, BaseRTT: 20 * monotime.Microsecond, MSS: mss, LearnLineRate: learn}
	n := NewNSCC(NSCCDefaults(p))
	var now monotime.Time
	rtt := p.BaseRTT + delay
	for range rounds {
		pkts := max(n.Window()/mss, 1)
		for range pkts {
			now = now.Add(rtt / monotime.Duration(pkts))
			inflight := n.Window() - mss
			if appLimited > 0 {
				inflight = min(inflight, appLimited)
			}
			n.OnSend(now, mss)
			n.OnAck(now, Ack{Bytes: mss, RTT: rtt, InFlight: inflight})
		}
	}
	return n
}

func TestNSCCLearnLineRate(t *testing.T) {
	const rounds = 40
	start := NewNSCC(NSCCDefaults(Params{LineRate: 10e9, BaseRTT: 20 * monotime.Microsecond, MSS: mss})).MaxWindow()

	// A clear path and a full window: the line rate doubles per period
	// (base RTT + target = two round trips) up to the bound, 100x.
	if n := learnRun(true, 0, 0, 10); n.LineRate() < 10e9*4 || n.MaxWindow() < start*4 {
		t.Errorf("clear path: line rate %g, max window %d after 10 round trips; want >= 4x (%d)",
			n.LineRate(), n.MaxWindow(), start*4)
	}
	if n := learnRun(true, 0, 0, rounds); n.LineRate() != n.cfg.MaxLineRate || n.MaxWindow() != start*100 {
		t.Errorf("line rate %g, max window %d after %d round trips, want the bound %g (%d)",
			n.LineRate(), n.MaxWindow(), rounds, n.cfg.MaxLineRate, start*100)
	}
	// Without learning, the window never passes 1.5 BDP of the guess.
	if n := learnRun(false, 0, 0, rounds); n.MaxWindow() != start || n.LineRate() != 10e9 {
		t.Errorf("not learning: max window %d (want %d), line rate %g", n.MaxWindow(), start, n.LineRate())
	}
	// A queue above the target: the path has its rate, no doubling.
	if n := learnRun(true, 40*monotime.Microsecond, 0, rounds); n.LineRate() != 10e9 {
		t.Errorf("queue above the target: line rate %g, want 10e9", n.LineRate())
	}
	// An application that does not fill the window learns nothing of
	// the path.
	if n := learnRun(true, 0, mss, rounds); n.LineRate() != 10e9 {
		t.Errorf("application-limited: line rate %g, want 10e9", n.LineRate())
	}
}

// TestNSCCLearnLoss: a period with a loss does not double.
func TestNSCCLearnLoss(t *testing.T) {
	p := Params{LineRate: 10e9, BaseRTT: 20 * monotime.Microsecond, MSS: mss, LearnLineRate: true}
	n := NewNSCC(NSCCDefaults(p))
	var now monotime.Time
	for range 40 {
		pkts := max(n.Window()/mss, 1)
		for i := range pkts {
			now = now.Add(p.BaseRTT / monotime.Duration(pkts))
			if i == 0 {
				n.OnLoss(now, Loss{Bytes: mss})
				continue
			}
			n.OnAck(now, Ack{Bytes: mss, RTT: p.BaseRTT, InFlight: n.Window() - mss})
		}
	}
	if n.LineRate() != 10e9 {
		t.Errorf("a loss every round trip: line rate %g, want 10e9", n.LineRate())
	}
}

// TestNSCCLearnBatchedAcks: on a real host the driver reads ACKs in
// batches and refills the window after each batch, so within a batch in
// flight falls a chunk per ACK. The sender still fills its window every
// round trip, and the line rate must still be learned (it was not: every
// ACK had to find the window full, and on loopback NSCC ran at 0.85 of
// none's goodput with its window stuck at 0.5 MB).
func TestNSCCLearnBatchedAcks(t *testing.T) {
	const chunk = 16 * mss
	for _, batch := range []int64{1, 4} {
		p := Params{LineRate: 10e9, BaseRTT: 20 * monotime.Microsecond, MSS: mss, Quantum: chunk,
			LearnLineRate: true, HostNoise: monotime.Millisecond}
		n := NewNSCC(NSCCDefaults(p))
		var now monotime.Time
		var inflight int64
		// The core admits whole chunks, and one into any window.
		fill := func() {
			for inflight == 0 || inflight+chunk <= n.Window() {
				n.OnSend(now, chunk)
				inflight += chunk
			}
		}
		for range 2000 { // round trips: 40 ms, some 40 learning periods
			fill()
			chunks := inflight / chunk
			for i := range chunks {
				now = now.Add(p.BaseRTT / monotime.Duration(chunks))
				inflight -= chunk
				n.OnAck(now, Ack{Bytes: chunk, RTT: p.BaseRTT, InFlight: inflight})
				if (i+1)%batch == 0 {
					fill()
				}
			}
		}
		if n.LineRate() < 16*10e9 {
			t.Errorf("ACKs in batches of %d: line rate %g after 40 ms of a full window on a clear path, want at least 16x the guess",
				batch, n.LineRate())
		}
	}
}
