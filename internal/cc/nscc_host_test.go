package cc

// NSCC on a real host (Params.HostNoise set): the filtered delay-only
// law, slow start, pacing, the yield after a loss and the window's floor.

import (
	"math/rand/v2"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// TestNSCCHostMode: on a real host (HostNoise 1 ms) NSCC guesses the line
// rate (10 Gbit/s over a 1 Gbit/s path), sees no ECN, and reads RTT
// samples up to a millisecond late at random. On the 1 Gbit/s, 20 ms,
// 256 KiB drop-tail model it must still start small, find the path and
// hold the standing queue near its target: the link near full, nothing
// lost after the start, the queue inside the buffer. Without the
// standing filter (raw samples, as the delay-only mode had), the noise
// reads as a queue and the window collapses.
func TestNSCCHostMode(t *testing.T) {
	ms := monotime.Millisecond
	b := bottleneck{bdp: 1e9 / 8 * 0.02, buffer: 256 << 10, rate: 1e9 / 8 / 1e12}
	params := Params{LineRate: 10e9, LearnLineRate: true, BaseRTT: 20 * ms, MSS: mss, HostNoise: ms}
	cfg := NSCCDefaults(params)
	if cfg.Target != ms || cfg.StandingWindow != 4*ms || !cfg.DelayWithoutECN || cfg.PacingGain != 1 || !cfg.SlowStart {
		t.Fatalf("host defaults %+v", cfg)
	}
	known := params
	known.LearnLineRate = false
	if NSCCDefaults(known).SlowStart {
		t.Errorf("slow start with a known line rate")
	}
	noisy := func(cfg NSCCConfig, seed uint64) *nsccPath {
		p := newNSCCPath(cfg)
		r := rand.New(rand.NewPCG(seed, 1))
		p.noise = func() monotime.Duration { return monotime.Duration(r.Float64() * float64(ms)) }
		return p
	}
	for seed := range uint64(3) {
		p := noisy(cfg, seed)
		if w := p.n.Window(); w != 16*mss {
			t.Fatalf("initial window %d, want 16 packets", w)
		}
		util, lost, maxQ := b.run(p, 400, 50, false)
		t.Logf("seed %d: utilization %.3f, lost %.0f B, largest queue %.0f B", seed, util, lost, maxQ)
		if util < 0.9 || lost > 0 || maxQ >= b.buffer {
			t.Errorf("seed %d: utilization %.3f, lost %.0f B, largest queue %.0f B: want >= 0.9, none, < %.0f", seed, util, lost, maxQ, b.buffer)
		}
	}
	raw := cfg
	raw.StandingWindow = 0
	util, _, _ := b.run(noisy(raw, 0), 400, 50, false)
	t.Logf("raw samples: utilization %.3f", util)
	if util >= 0.9 {
		t.Errorf("raw noisy samples kept the link %.3f full; the test shows nothing", util)
	}
}

// fullAcks acknowledges one MSS at a time to n, gap apart, with the
// window full and an RTT of base + the queue the test gives.
type fullAcks struct {
	n         *NSCC
	now       monotime.Time
	base, gap monotime.Duration
}

func (a *fullAcks) ack(q monotime.Duration) {
	a.now = a.now.Add(a.gap)
	a.n.OnAck(a.now, Ack{Bytes: mss, RTT: a.base + q, InFlight: a.n.Window()})
}

// TestNSCCSlowStartExit: ACKs come at a 1 Gbit/s bottleneck's rate on a
// 20 ms path while slow start grows the window far past the 2.5 MB BDP
// (ACK-clocked, the window grows by what is acked). When the queue ends
// slow start, the window is the BDP the ACKs measured, not half the
// window; the overshoot's losses in the next two round trips cut nothing,
// and a loss after them cuts as usual.
func TestNSCCSlowStartExit(t *testing.T) {
	ms := monotime.Millisecond
	n := NewNSCC(NSCCDefaults(Params{LineRate: 10e9, LearnLineRate: true, BaseRTT: 20 * ms, MSS: mss, HostNoise: ms}))
	const bdp = 1e9 / 8 * 0.02
	a := &fullAcks{n: n, base: 20 * ms, gap: monotime.TransmitTime(mss, 1e9)}
	ack := a.ack
	for range 1500 { // 49 ms at no queue: slow start grows on
		ack(0)
	}
	if !n.slowStart || float64(n.Window()) < 2*bdp {
		t.Fatalf("after 49 ms of ACKs: slow start %v, window %d", n.slowStart, n.Window())
	}
	for i := 0; n.slowStart; i++ { // a queue of 2 ms ends it
		if i == 3000 {
			t.Fatal("a 2 ms queue did not end slow start")
		}
		ack(2 * ms)
	}
	if w := float64(n.Window()); w < 0.9*bdp || w > 1.1*bdp {
		t.Fatalf("window after slow start %.2f MB, want the 2.5 MB BDP within 10%%", w/1e6)
	}
	settled := n.Window()
	for range 1000 { // 33 ms: the overshoot's NACKs come in
		n.OnLoss(a.now, Loss{Bytes: mss})
		ack(2 * ms)
	}
	if n.Window() < settled {
		t.Fatalf("the overshoot's losses cut the window %d -> %d", settled, n.Window())
	}
	for range 300 {
		ack(2 * ms)
	}
	before := n.cwnd // the law's window, without ackRoom's chunk
	n.OnLoss(a.now, Loss{Bytes: mss})
	if want := before * hostLossBeta; n.cwnd > want+1 {
		t.Fatalf("a loss after the settling: window %.0f -> %.0f, want %.0f", before, n.cwnd, want)
	}
}

// TestNSCCSlowStartExitHostDelay: on a short host path whose ACKs run
// late under load (loopback: a 200 us base RTT, samples 1.1 ms with 1.5
// MB in flight), slow start ends on that delay and keeps the window the
// delivery rate needs at it: the delivered rate x (base RTT + the
// standing delay, at most the target), not x the base RTT alone, which
// starved the path until the delay law regrew the window.
func TestNSCCSlowStartExitHostDelay(t *testing.T) {
	us := monotime.Microsecond
	n := NewNSCC(NSCCDefaults(Params{LineRate: 100e9, LearnLineRate: true, BaseRTT: 200 * us, MSS: mss,
		HostNoise: monotime.Millisecond}))
	const rate = 2e9 // bytes per second delivered
	ack := (&fullAcks{n: n, base: 200 * us, gap: monotime.Duration(float64(monotime.Second) * mss / rate)}).ack
	for range 200 {
		ack(0)
	}
	for i := 0; n.slowStart; i++ {
		if i == 10000 {
			t.Fatal("a 900 us delay did not end slow start")
		}
		ack(900 * us)
	}
	want := rate * (200*us + 900*us).Seconds()
	if w := float64(n.Window()); w < 0.9*want || w > 1.1*want {
		t.Fatalf("window after slow start %.0f bytes, want %.0f (the rate x 1.1 ms) within 10%%", w, want)
	}
}

// TestNSCCPacing: on a host NSCC spaces packets at the window per
// round trip (twice it in slow start); a pacer behind schedule keeps up
// to half the target of lateness, and in the competitive mode, which
// paces at its bandwidth estimate, up to a tenth of a round trip.
func TestNSCCPacing(t *testing.T) {
	ms := monotime.Millisecond
	n := NewNSCC(NSCCDefaults(Params{LineRate: 1e9, BaseRTT: 20 * ms, MSS: mss, HostNoise: ms}))
	n.slowStart = false
	n.cwnd = 2.5e6
	n.OnSend(0, mss)
	// 2.5 MB per 20 ms = 1 Gbit/s: a 4096-byte packet every 32.8 us.
	if got, want := n.NextSend(), monotime.TransmitTime(mss, 1e9); got != monotime.Time(want) {
		t.Fatalf("next send %v, want %v", got, want)
	}
	late := monotime.Time(5 * ms)
	n.OnSend(late, mss)
	if got, want := n.NextSend(), late.Add(-ms/2).Add(monotime.TransmitTime(mss, 1e9)); got != want {
		t.Fatalf("after a late send: next %v, want %v (0.5 ms of lateness kept)", got, want)
	}
	// The competitive mode at gain 1 on an estimate of 100 MB/s.
	n.comp.active, n.comp.maxBW, n.comp.cycle = true, 100e6, 2
	late = late.Add(5 * ms)
	n.OnSend(late, mss)
	if got, want := n.NextSend(), late.Add(-2*ms).Add(monotime.TransmitTime(mss, 800e6)); got != want {
		t.Fatalf("competing, after a late send: next %v, want %v (2 ms of lateness kept)", got, want)
	}
	sim := NewNSCC(NSCCDefaults(Params{LineRate: 1e9, BaseRTT: 20 * ms, MSS: mss}))
	sim.OnSend(0, mss)
	if sim.NextSend() != 0 {
		t.Errorf("simulation NSCC paces: next send %v", sim.NextSend())
	}
}

// TestNSCCPacesBelowChunk: in a simulation NSCC paces only a window
// below the core's admission unit, at the window per round trip at the
// target delay but at least an eighth of a chunk per round trip, and lets
// no idle time build up a burst.
func TestNSCCPacesBelowChunk(t *testing.T) {
	us := monotime.Microsecond
	n := NewNSCC(NSCCDefaults(Params{LineRate: 100e9, BaseRTT: 8 * us, MSS: mss, Quantum: 64 << 10}))
	rtt := n.Config().BaseRTT + n.Config().Target
	n.cwnd = 64 << 10
	n.OnSend(0, mss)
	if n.NextSend() != 0 {
		t.Fatalf("a window of one chunk is paced: next send %v", n.NextSend())
	}
	n.cwnd = 16 << 10 // a quarter chunk: 4 packets per round trip
	at := monotime.Time(100 * us)
	for i := range 8 {
		n.OnSend(at, mss)
		if got, want := n.NextSend(), at.Add(monotime.Duration(i+1)*rtt/4); got < want-1 || got > want+1 {
			t.Fatalf("packet %d: next send %v, want %v (a quarter round trip apart)", i, got, want)
		}
	}
	idle := at.Add(10 * rtt) // idle: no credit for the gap
	n.OnSend(idle, mss)
	if got, want := n.NextSend(), idle.Add(rtt/4); got < want-1 || got > want+1 {
		t.Fatalf("after idling: next send %v, want %v", got, want)
	}
	n.cwnd = mss // a sixteenth: paced at the floor, an eighth of a chunk per round trip
	at = n.NextSend()
	n.OnSend(at, mss)
	if got, want := n.NextSend(), at.Add(rtt/2); got < want-1 || got > want+1 {
		t.Fatalf("one-MSS window: next send %v, want %v (half a round trip apart)", got, want)
	}
}

// TestNSCCHostLoss: on a real host a NACK on a congested path cuts the
// window to 0.7 of itself once per round trip, however many NACKs come,
// and never quick-adapts (with erasure coding a period of NACKs and no
// ACK is normal); a random loss (no standing queue) costs nothing.
func TestNSCCHostLoss(t *testing.T) {
	ms := monotime.Millisecond
	n := NewNSCC(NSCCDefaults(Params{LineRate: 1e9, BaseRTT: 20 * ms, MSS: mss, HostNoise: ms}))
	a := &fullAcks{n: n, base: 20 * ms, gap: ms}
	ack := a.ack
	for range 30 {
		ack(0)
	}
	before := n.Window()
	n.OnLoss(a.now, Loss{Bytes: mss})
	if n.Window() != before {
		t.Fatalf("a loss with no standing queue moved the window %d -> %d", before, n.Window())
	}
	for range 30 { // a standing queue of 3 ms: congested
		ack(3 * ms)
	}
	cwnd := n.cwnd // the law's window, without ackRoom's chunk
	for range 50 {
		n.OnLoss(a.now, Loss{Bytes: 16 * mss})
	}
	if want := cwnd * 0.7; n.cwnd < want-1 || n.cwnd > want+1 {
		t.Fatalf("50 NACKs in one round trip: window %.0f -> %.0f, want one cut to %.0f", cwnd, n.cwnd, want)
	}
	a.now = a.now.Add(4 * ms) // a period passes with NACKs and no ACK
	n.OnLoss(a.now, Loss{Bytes: mss})
	if n.cwnd < cwnd*0.7-1 {
		t.Fatalf("quick adapt on NACKs: window %d", n.Window())
	}
}

// TestNSCCYield: on a real host a loss on a congested path makes the
// delay law shed the queue above 1.25 x the target YieldGain times as
// fast for YieldRounds base RTTs (a loss-based flow shares the queue); a
// random loss, a timeout, a congested loss that long ago, or a queue
// within the band leaves it as it was. Each case is measured against the same history
// without its loss.
func TestNSCCYield(t *testing.T) {
	ms := monotime.Millisecond
	base, target := 20*ms, ms
	// shed runs two round trips under the target, the history (with or
	// without its loss), and four round trips at a queue of q, and
	// returns the bytes the last two shed (the ACKs come at a fixed rate,
	// so the law sheds bytes, not a share of the window).
	shed := func(history func(n *NSCC, a *fullAcks, lose bool), lose bool, q monotime.Duration) float64 {
		cfg := NSCCDefaults(Params{LineRate: 1e9, BaseRTT: base, MSS: mss, HostNoise: ms})
		cfg.DelayEta = 0 // the law's decrease alone
		n := NewNSCC(cfg)
		if n.cfg.Target != target {
			t.Fatalf("target %v, want %v", n.cfg.Target, target)
		}
		a := &fullAcks{n: n, base: base, gap: 50 * monotime.Microsecond}
		for range 800 {
			a.ack(target / 2)
		}
		history(n, a, lose)
		for range 800 {
			a.ack(q)
		}
		w := n.cwnd
		for range 800 {
			a.ack(q)
		}
		return w - n.cwnd
	}
	loss := func(n *NSCC, a *fullAcks, lose bool) {
		if lose {
			n.OnLoss(a.now, Loss{Bytes: mss})
		}
	}
	// congestedThen: a standing queue, so a loss after it is congestion.
	congestedThen := func(l Loss) func(n *NSCC, a *fullAcks, lose bool) {
		return func(n *NSCC, a *fullAcks, lose bool) {
			for range 800 {
				a.ack(3 * target)
			}
			if lose {
				n.OnLoss(a.now, l)
			}
		}
	}
	congested := congestedThen(Loss{Bytes: mss})
	for _, tc := range []struct {
		name    string
		history func(n *NSCC, a *fullAcks, lose bool)
		q       monotime.Duration
		want    float64 // the shed's ratio to the shed without the loss
	}{
		// 1 + 5 x (2 - 1.25) / (2 - 1): the band is shed at the usual gain.
		{"congested loss", congested, 2 * target, 4.75},
		{"congested loss, queue in the band", congested, target + target/5, 1},
		{"random loss", loss, 2 * target, 1},
		{"congested timeout", congestedThen(Loss{Bytes: mss, Timeout: true}), 2 * target, 1},
		// The shed is measured from two round trips after the history
		// ends: here from YieldRounds base RTTs after the loss.
		{"congested loss, YieldRounds base RTTs ago", func(n *NSCC, a *fullAcks, lose bool) {
			congested(n, a, lose)
			for range int(monotime.Duration(n.cfg.YieldRounds-2) * base / a.gap) {
				a.ack(target / 2)
			}
		}, 2 * target, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, plain := shed(tc.history, true, tc.q), shed(tc.history, false, tc.q)
			if plain <= 0 {
				t.Fatalf("a %v queue over a %v target did not shrink the window (%.0f bytes)", tc.q, target, plain)
			}
			if ratio := got / plain; ratio < 0.9*tc.want || ratio > 1.1*tc.want {
				t.Errorf("shed %.0f bytes in two round trips at %v, %.2fx what it sheds without the loss; want %.2fx", got, tc.q, ratio, tc.want)
			}
		})
	}
}

// TestNSCCGivesWay: a congested loss episode that comes while the yield
// an earlier one armed still runs (a loss-based flow's sawtooth) makes
// the law steer to YieldTarget x the target for YieldRounds base RTTs: a
// queue at 0.75 x the target then shrinks the window, where it grows it
// after one episode, two losses of one episode, random losses, or once
// the give-way has run out.
func TestNSCCGivesWay(t *testing.T) {
	ms := monotime.Millisecond
	base, target := 20*ms, ms
	// grows runs the history and then four round trips at 0.75 x the
	// target, and returns what the last two did to the window.
	grows := func(history func(n *NSCC, a *fullAcks)) float64 {
		cfg := NSCCDefaults(Params{LineRate: 1e9, BaseRTT: base, MSS: mss, HostNoise: ms})
		cfg.DelayEta = 0 // the law alone
		n := NewNSCC(cfg)
		if n.cfg.Target != target || n.cfg.YieldTarget != 0.5 {
			t.Fatalf("target %v, give-way share %g; want %v, 0.5", n.cfg.Target, n.cfg.YieldTarget, target)
		}
		a := &fullAcks{n: n, base: base, gap: 50 * monotime.Microsecond}
		for range 800 {
			a.ack(target / 2)
		}
		history(n, a)
		for range 800 {
			a.ack(target * 3 / 4)
		}
		w := n.cwnd
		for range 800 {
			a.ack(target * 3 / 4)
		}
		return n.cwnd - w
	}
	// episodes: a standing queue over the target (so a loss is
	// congestion), a NACK, and after apart ACKs of that queue another,
	// count times.
	episodes := func(count, apart int, l Loss) func(n *NSCC, a *fullAcks) {
		return func(n *NSCC, a *fullAcks) {
			for range 800 {
				a.ack(3 * target)
			}
			for i := range count {
				if i > 0 {
					for range apart {
						a.ack(3 * target)
					}
				}
				n.OnLoss(a.now, l)
			}
		}
	}
	roundTrip := int((base + 3*target) / (50 * monotime.Microsecond)) // ACKs
	nack := Loss{Bytes: mss}
	for _, tc := range []struct {
		name    string
		history func(n *NSCC, a *fullAcks)
		shrinks bool
	}{
		{"two episodes, two round trips apart", episodes(2, 2*roundTrip, nack), true},
		{"one episode", episodes(1, 0, nack), false},
		{"two NACKs of one episode", episodes(2, roundTrip/4, nack), false},
		{"two timeouts", episodes(2, 2*roundTrip, Loss{Bytes: mss, Timeout: true}), false},
		{"random losses (no standing queue)", func(n *NSCC, a *fullAcks) {
			for range 3 {
				for range 2 * roundTrip {
					a.ack(target / 2)
				}
				n.OnLoss(a.now, nack)
			}
		}, false},
		{"two episodes, YieldRounds base RTTs ago", func(n *NSCC, a *fullAcks) {
			episodes(2, 2*roundTrip, nack)(n, a)
			for range int(monotime.Duration(n.cfg.YieldRounds) * base / a.gap) {
				a.ack(target / 2)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := grows(tc.history)
			if tc.shrinks != (got < 0) {
				t.Errorf("two round trips at a queue of %v (target %v) moved the window by %.0f bytes; want it to shrink: %v",
					target*3/4, target, got, tc.shrinks)
			}
		})
	}
}

// TestNSCCMeanLaw: on a real host the delay law steers by the mean delay
// of the standing-queue filter's windows, not the least. A queue that
// swings between 0.4 and 2.4 ms (a loss-based competitor's sawtooth: the
// least under the 1 ms target, the mean above it) shrinks the window; a
// steady queue at the sawtooth's least grows it.
func TestNSCCMeanLaw(t *testing.T) {
	ms := monotime.Millisecond
	run := func(queue func(now monotime.Time) monotime.Duration) (before, after int64) {
		n := NewNSCC(NSCCDefaults(Params{LineRate: 1e9, BaseRTT: 20 * ms, MSS: mss, HostNoise: ms}))
		n.slowStart = false
		n.cwnd = 2e6
		now := monotime.Time(0)
		before = int64(n.cwnd) // the law's window, without ackRoom
		for range 4000 {       // 200 ms, ten round trips
			now = now.Add(50 * monotime.Microsecond)
			n.OnAck(now, Ack{Bytes: mss, RTT: 20*ms + queue(now), InFlight: n.Window()})
		}
		return before, int64(n.cwnd)
	}
	sawtooth := func(now monotime.Time) monotime.Duration {
		return 400*monotime.Microsecond + monotime.Duration(now)%(10*ms)/5 // 0.4 to 2.4 ms every 10 ms
	}
	if before, after := run(sawtooth); after >= before {
		t.Errorf("a queue swinging from 0.4 to 2.4 ms (mean 1.4 ms, target 1 ms): window %d -> %d, want it smaller", before, after)
	}
	if before, after := run(func(monotime.Time) monotime.Duration { return 400 * monotime.Microsecond }); after <= before {
		t.Errorf("a steady 0.4 ms queue: window %d -> %d, want it larger", before, after)
	}
}

// TestNSCCHostWindowFloor: on a real host the maximum window holds two
// chunks however small the BDP; in simulation it is 1.5 BDP (at least an
// MSS) and a chunk less an MSS, and NSCC starts at 1.5 BDP.
func TestNSCCHostWindowFloor(t *testing.T) {
	p := Params{LineRate: 2e9, BaseRTT: 10 * monotime.Microsecond, MSS: mss, Quantum: 64 << 10}
	n := NewNSCC(NSCCDefaults(p))
	if w := n.MaxWindow(); w != 64<<10 {
		t.Errorf("simulation: max window %d, want one chunk (1.5 BDP is less than an MSS)", w)
	}
	if w := n.Window(); w != mss {
		t.Errorf("simulation: initial window %d, want one MSS", w)
	}
	p.BaseRTT = 100 * monotime.Microsecond // 1.5 BDP: 37,500 bytes
	n = NewNSCC(NSCCDefaults(p))
	if got, want := n.MaxWindow(), int64(37500+64<<10-mss); got != want {
		t.Errorf("simulation, 100 us: max window %d, want %d", got, want)
	}
	if w := n.Window(); w != 37500 {
		t.Errorf("simulation, 100 us: initial window %d, want 1.5 BDP", w)
	}
	p.HostNoise = monotime.Millisecond
	n = NewNSCC(NSCCDefaults(p)) // a rate the user gave: no slow start
	if w := n.MaxWindow(); w != 2*64<<10 {
		t.Errorf("real host: max window %d, want two chunks", w)
	}
	if w := n.Window(); w != 2*64<<10 {
		t.Errorf("real host: initial window %d, want two chunks", w)
	}
	cfg := NSCCDefaults(Params{LineRate: 1e9, BaseRTT: 10 * monotime.Microsecond, MSS: mss})
	cfg.Quantum = 0 // built by hand: no chunk's slack, never below an MSS
	if n := NewNSCC(cfg); n.Window() != mss || n.MaxWindow() != mss {
		t.Errorf("no quantum: window %d, max %d, want one MSS", n.Window(), n.MaxWindow())
	}
}

// TestNSCCBufferUnderTarget: on a real host the target grows with the
// path (a twentieth of the base RTT: 2.5 ms at 50 ms), and a bottleneck's
// buffer may hold less: 256 KiB at 1 Gbit/s is 2.1 ms. The queue then
// never reads the target, the losses never read as congestion, and the
// window grew into the overflow round after round: through linkem
// (1 Gbit/s, 50 ms, 256 KiB) 14% of the data was resent. Losses too many
// for chance, with a queue standing, show the buffer is the shallower:
// the target comes down under it, once (shallowBuffer). Counted from the
// first round trip, slow start's overshoot included.
func TestNSCCBufferUnderTarget(t *testing.T) {
	ms := monotime.Millisecond
	b := bottleneck{bdp: 1e9 / 8 * 0.05, buffer: 256 << 10, rate: 1e9 / 8 / 1e12}
	bufferDelay := monotime.Duration(b.buffer / b.rate)
	params := Params{LineRate: 10e9, LearnLineRate: true, BaseRTT: 50 * ms, MSS: mss, HostNoise: ms}
	if cfg := NSCCDefaults(params); cfg.Target <= bufferDelay {
		t.Fatalf("target %v, buffer %v: the test needs a buffer under the target", cfg.Target, bufferDelay)
	}
	for seed := range uint64(3) {
		p := noisyPath(params, seed)
		util, lost, _ := b.run(p, 600, 0, false)
		sent := util * b.bdp * 600
		target := p.n.cfg.Target
		t.Logf("seed %d: utilization %.3f, lost %.2f%% of what the link carried, target %v", seed, util, 100*lost/sent, target)
		if util < 0.9 || lost > 0.01*sent || !p.n.shallow || target >= bufferDelay {
			t.Errorf("seed %d: utilization %.3f (want >= 0.9), lost %.2f%% (want under 1%%), target %v (want lowered under the buffer's %v)",
				seed, util, 100*lost/sent, target, bufferDelay)
		}
		// A later overflow (the buffer halved) is congestion to the
		// lowered law: the target stays where the first one put it.
		half := b
		half.buffer /= 2
		util, lost, _ = half.run(p, 300, 0, false)
		sent = util * b.bdp * 300
		if p.n.cfg.Target != target || lost > 0.01*sent || util < 0.8 {
			t.Errorf("seed %d, buffer halved: target %v -> %v (want kept), lost %.2f%% (want under 1%%), utilization %.3f (want >= 0.8)",
				seed, target, p.n.cfg.Target, 100*lost/sent, util)
		}
		// Random loss is still not congestion to it: 1% on top of the
		// buffer's own.
		r := rand.New(rand.NewPCG(seed, 9))
		lossy := b
		lossy.random = func() bool { return r.Float64() < 0.01 }
		if util, _, _ = lossy.run(p, 300, 0, false); util < 0.85 {
			t.Errorf("seed %d, 1%% random loss after the lowering: utilization %.3f, want >= 0.85", seed, util)
		}
	}
	// Where the target is at the host's noise already (20 ms) it stays,
	// and heavy loss is congestion: a 64 KiB buffer (0.52 ms) lost 152%
	// of what the link carried without it.
	short := Params{LineRate: 10e9, LearnLineRate: true, BaseRTT: 20 * ms, MSS: mss, HostNoise: ms}
	tiny := bottleneck{bdp: 1e9 / 8 * 0.02, buffer: 64 << 10, rate: 1e9 / 8 / 1e12}
	for seed := range uint64(2) {
		p := noisyPath(short, seed)
		target := p.n.cfg.Target
		tiny.run(p, 100, 0, false)
		util, lost, _ := tiny.run(p, 500, 0, false)
		sent := util * tiny.bdp * 500
		t.Logf("20 ms, 64 KiB, seed %d: utilization %.3f, lost %.2f%%", seed, util, 100*lost/sent)
		if p.n.cfg.Target != target || lost > 0.02*sent || util < 0.85 {
			t.Errorf("20 ms, 64 KiB, seed %d: target %v -> %v (want kept), lost %.2f%% (want under 2%%), utilization %.3f (want >= 0.85)",
				seed, target, p.n.cfg.Target, 100*lost/sent, util)
		}
	}
	// A target the user set stays, and heavy loss is congestion all the
	// same: with it left out, the window flooded a 128 KiB buffer.
	set := NSCCOptions{Target: 5 * ms / 2}
	small := b
	small.buffer = 128 << 10
	for seed := range uint64(3) {
		p := noisyPathWith(params, set, seed)
		small.run(p, 100, 0, false) // slow start's overshoot
		util, lost, _ := small.run(p, 500, 0, false)
		sent := util * b.bdp * 500
		t.Logf("a set target, 128 KiB, seed %d: utilization %.3f, lost %.2f%%, target %v", seed, util, 100*lost/sent, p.n.cfg.Target)
		if p.n.cfg.Target != set.Target || lost > 0.01*sent || util < 0.85 {
			t.Errorf("a set target, 128 KiB, seed %d: target %v (want %v kept), lost %.2f%% (want under 1%%), utilization %.3f (want >= 0.85)",
				seed, p.n.cfg.Target, set.Target, 100*lost/sent, util)
		}
	}
}

// noisyPath is a real host's path in fake time: up to 1 ms of lateness
// on each RTT sample, drawn from seed.
func noisyPath(params Params, seed uint64) *nsccPath {
	return noisyPathWith(params, NSCCOptions{}, seed)
}

// noisyPathWith is noisyPath for NSCC with options o.
func noisyPathWith(params Params, o NSCCOptions, seed uint64) *nsccPath {
	p := newNSCCPath(NSCCDefaultsWith(params, o))
	r := rand.New(rand.NewPCG(seed, 1))
	p.noise = func() monotime.Duration { return monotime.Duration(r.Float64() * float64(monotime.Millisecond)) }
	return p
}

// TestNSCCShallowBufferLeftAlone: what must not lower the target or end
// slow start on loss: random loss of 2% (twice the lossy long haul's),
// with no queue or with another flow's standing under the target; a
// path whose target is at the host's noise already; the competitive
// mode and its listens.
func TestNSCCShallowBufferLeftAlone(t *testing.T) {
	ms := monotime.Millisecond
	long := Params{LineRate: 10e9, LearnLineRate: true, BaseRTT: 50 * ms, MSS: mss, HostNoise: ms}
	deep := bottleneck{bdp: 1e9 / 8 * 0.05, buffer: 4 << 20, rate: 1e9 / 8 / 1e12}
	for _, tc := range []struct {
		name   string
		params Params
		b      bottleneck
		other  monotime.Duration // a standing queue not ours
		loss   float64           // random loss
	}{
		{"2% random loss, no other queue", long, deep, 0, 0.02},
		{"2% random loss, 0.3 ms other queue", long, deep, 3 * ms / 10, 0.02},
		{"2% random loss, 0.8 ms other queue", long, deep, 8 * ms / 10, 0.02},
		{"2% random loss, 1.5 ms other queue", long, deep, 3 * ms / 2, 0.02},
		{"20 ms, 256 KiB", Params{LineRate: 10e9, LearnLineRate: true, BaseRTT: 20 * ms, MSS: mss, HostNoise: ms},
			bottleneck{bdp: 1e9 / 8 * 0.02, buffer: 256 << 10, rate: 1e9 / 8 / 1e12}, 0, 0},
	} {
		for seed := range uint64(5) {
			p := noisyPath(tc.params, seed)
			target := p.n.cfg.Target
			// Slow start may end on the queue, its cap or the competitive
			// mode (a queue not ours that never answers), not on random
			// loss.
			exited := tc.loss == 0
			p.trace = func(_ monotime.Time, w int64) {
				if !exited && !p.n.slowStart {
					exited = true
					if _, entries := p.n.Competing(); p.n.queue < target/2 && entries == 0 && w < p.n.MaxWindow()/2 {
						t.Errorf("%s, seed %d: slow start ended at a %d B window, the standing queue at %v", tc.name, seed, w, p.n.queue)
					}
				}
			}
			b := tc.b
			b.other = tc.other
			r := rand.New(rand.NewPCG(seed, 7))
			b.random = func() bool { return r.Float64() < tc.loss }
			b.run(p, 400, 0, false)
			if p.n.shallow || p.n.cfg.Target != target {
				t.Errorf("%s, seed %d: target %v -> %v, shallow %v: want it left alone", tc.name, seed, target, p.n.cfg.Target, p.n.shallow)
			}
		}
	}
	// The competitive mode's window and its listens' are not the law's;
	// outside them the same evidence lowers the target.
	for _, tc := range []struct {
		name      string
		active    bool
		listening int
		lowers    bool
	}{
		{"the mode", true, 0, false},
		{"the listen before the mode", false, 2, false},
		{"its reading", false, 1, false},
		{"the law", false, 0, true},
	} {
		p := noisyPath(long, 0)
		p.n.slowStart = false
		p.n.queue = ms
		p.n.losses.count(0, 50*ms, 1<<20, 1<<20)
		p.n.comp.active, p.n.comp.listening = tc.active, tc.listening
		p.n.shallowBuffer()
		if p.n.shallow != tc.lowers {
			t.Errorf("%s: target lowered %v, want %v", tc.name, p.n.shallow, tc.lowers)
		}
	}
}

// TestLossShare: what counts as heavy loss, and that an idle spell
// forgets the round trips before it.
func TestLossShare(t *testing.T) {
	rtt := 10 * monotime.Millisecond
	for _, tc := range []struct {
		name        string
		acked, lost [2]int64 // packets in each of two round trips
		idle        bool     // a silence of two round trips, then an ACK
		heavy       bool
	}{
		{"7 of 20", [2]int64{7, 6}, [2]int64{4, 3}, false, false},
		{"8 of 50", [2]int64{21, 21}, [2]int64{4, 4}, false, true},
		{"8 of 200 (4%)", [2]int64{96, 96}, [2]int64{4, 4}, false, false},
		{"17 of 300", [2]int64{142, 141}, [2]int64{9, 8}, false, false},
		{"18 of 300", [2]int64{141, 141}, [2]int64{9, 9}, false, true},
		{"60 of 3000 (2%)", [2]int64{1470, 1470}, [2]int64{30, 30}, false, false},
		{"96 of 3000", [2]int64{1452, 1452}, [2]int64{48, 48}, false, true},
		{"8 of 50 in the second, then idle", [2]int64{0, 42}, [2]int64{0, 8}, true, false},
	} {
		var l lossShare
		now := monotime.Time(0)
		for i := range 2 {
			l.count(now, rtt, tc.acked[i]*mss, tc.lost[i]*mss)
			now = now.Add(rtt)
		}
		if tc.idle {
			l.count(now.Add(2*rtt), rtt, mss, 0)
		}
		if got := l.heavy(mss); got != tc.heavy {
			t.Errorf("%s: heavy %v, want %v", tc.name, got, tc.heavy)
		}
	}
}
