package cc

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// competePath is a real host's NSCC (1 ms of host noise: the filtered
// delay-only mode; a line rate it guesses, so it starts in slow start) on
// a 20 ms path, ACKed a chunk at a time.
type competePath struct {
	n     *NSCC
	now   monotime.Time
	chunk int64
	base  monotime.Duration
}

func newCompetePath() *competePath {
	p := Params{LineRate: 10e9, BaseRTT: 20 * monotime.Millisecond, MSS: 1024, Quantum: 16 << 10,
		HostNoise: monotime.Millisecond, LearnLineRate: true}
	return &competePath{n: NewNSCC(NSCCDefaults(p)), chunk: 16 << 10, base: p.BaseRTT}
}

// competeQueue is the competitor's standing queue: above the 1 ms target,
// within a 256 KiB queue at 1 Gbit/s.
const competeQueue = 3 * monotime.Millisecond

// press runs round trips in which the competitor holds competeQueue and
// leaves NSCC a chunk each, until the mode starts (5000 at most), and
// returns how many it ran.
func (c *competePath) press() int {
	rounds := 0
	for ; rounds < 5000; rounds++ {
		if on, _ := c.n.Competing(); on {
			break
		}
		c.round(competeQueue, c.chunk)
	}
	return rounds
}

// pressToListen runs round trips in which the competitor holds
// competeQueue and leaves NSCC a chunk each, until the listen before the
// mode starts.
func (c *competePath) pressToListen(t *testing.T) {
	t.Helper()
	for r := 0; c.n.comp.listening == 0; r++ {
		if r == 1000 {
			t.Fatal("no listen before entering in 1000 round trips of a standing queue")
		}
		c.round(competeQueue, c.chunk)
	}
}

// round runs one round trip with a standing queue of queue in which the
// path delivers deliver bytes (at least a chunk); every ACK carries the
// RTT.
func (c *competePath) round(queue monotime.Duration, deliver int64) {
	c.roundSampled(queue, deliver, true)
}

// roundSampled is round, its ACKs carrying an RTT sample only if sample:
// a chunk that was resent gives none (Karn).
func (c *competePath) roundSampled(queue monotime.Duration, deliver int64, sample bool) {
	acks := max(deliver/c.chunk, 1)
	rtt := c.base + queue
	for range acks {
		c.now = c.now.Add(rtt / monotime.Duration(acks))
		c.n.OnSend(c.now, int(c.chunk))
		a := Ack{Bytes: c.chunk, InFlight: c.n.Window() - c.chunk}
		if sample {
			a.RTT = rtt
		}
		c.n.OnAck(c.now, a)
	}
}

// TestNSCCCompetes: a queue NSCC did not build (it stays however little
// NSCC sends) puts it in the competitive mode, where the window follows
// what the path delivers; once the queue is gone, a listen hands the
// window back to the delay law.
func TestNSCCCompetes(t *testing.T) {
	c := newCompetePath()
	const queue = competeQueue
	rounds := c.press()
	on, entries := c.n.Competing()
	if !on || entries != 1 {
		t.Fatalf("after %d round trips with a standing queue of %v and a chunk delivered per round trip: competing %v (%d entries), window %d",
			rounds, queue, on, entries, c.n.Window())
	}
	if s, d := c.n.Stats(), c.n.Detail(); d[1].Value != 1 || d[0].Value != 1 || s.Queue != queue || s.Rate != c.n.competeRate() {
		t.Errorf("Stats in the mode: detail %v, queue %v (want %v), rate %g (want the mode's, %g)",
			d, s.Queue, queue, s.Rate, c.n.competeRate())
	}

	// In the mode the path gives NSCC 40 MB/s (320 Mbit/s): the window
	// and the pacing follow it, whatever the queue.
	const perRound = 40e6 * 0.023 // bytes per round trip of 23 ms
	for range 40 {
		c.round(queue, perRound)
	}
	rtt := (c.base + queue).Seconds()
	bw := float64(int64(perRound)/c.chunk*c.chunk) / rtt // what the ACKs carried, per second
	if got := c.n.comp.maxBW; got < 0.9*bw || got > 1.1*bw {
		t.Errorf("bandwidth estimate %.3g B/s, want %.3g within 10%%", got, bw)
	}
	if w, want := float64(c.n.Window()), 1.5*c.n.comp.maxBW*c.base.Seconds()+2*float64(c.chunk); w < 0.99*want || w > 1.01*want {
		t.Errorf("window %.0f, want 1.5 times the estimated BDP plus two chunks, %.0f", w, want)
	}
	if r := c.n.competeRate(); r < 0.75*8*c.n.comp.maxBW || r > 1.25*8*c.n.comp.maxBW {
		t.Errorf("pacing at %.3g bit/s, want within the probe gains of %.3g", r, 8*c.n.comp.maxBW)
	}
	// Losses do not cut the mode's window.
	w := c.n.Window()
	c.n.OnLoss(c.now, Loss{Bytes: 10 * c.chunk})
	if c.n.Window() != w {
		t.Errorf("a loss moved the mode's window from %d to %d", w, c.n.Window())
	}

	// The competitor leaves: the queue falls to nothing, and within a
	// listen period, its two round trips and the listen that confirms it
	// the delay law is back, no longer giving way to the competitor's
	// losses (as if its sawtooth had armed it just before).
	c.n.giveWayUntil = c.now.Add(monotime.Duration(c.n.cfg.YieldRounds) * c.base)
	rounds = competeListenEvery + 2 + int(competeConfirmGap/c.base) + 4
	for range rounds {
		c.round(0, perRound)
	}
	if on, entries := c.n.Competing(); on || entries != 1 || c.n.giveWayUntil != 0 {
		t.Errorf("queue gone for %d round trips: competing %v (%d entries), giving way until %v (want not)", rounds, on, entries, c.n.giveWayUntil)
	}
}

// TestNSCCLoneFlowDoesNotCompete: a lone flow through a bottleneck,
// whose queue is its own window beyond the BDP, never takes up the mode,
// at any bottleneck rate: on the slow paths (5 and 10 Mbit/s) two chunks
// are more than the BDP, and the floor's own queue pressed (9-11 entries
// in 1,000 round trips before the listen ahead of entering).
func TestNSCCLoneFlowDoesNotCompete(t *testing.T) {
	for _, rate := range []float64{0.625e6, 1.25e6, 10e6, 125e6, 1.25e9} { // bytes per second
		c := newCompetePath()
		for range 1000 {
			bdp := rate * c.base.Seconds()
			queue := monotime.Duration(max(float64(c.n.Window())-bdp, 0) / rate * float64(monotime.Second))
			c.round(queue, int64(min(float64(c.n.Window()), rate*(c.base+queue).Seconds())))
		}
		if on, entries := c.n.Competing(); on || entries != 0 {
			t.Errorf("lone flow at %.3g B/s: competing %v (%d entries), window %d", rate, on, entries, c.n.Window())
		}
		// The listens that found the queue its own came ever more
		// rarely: the wait before the next has doubled at least twice.
		if bdp := rate * c.base.Seconds(); bdp < competeFloor*float64(c.chunk) && c.n.comp.entryBackoff < 4*competeListenEvery {
			t.Errorf("lone flow at %.3g B/s: the wait before a listen ahead of entering is %d round trips, want it doubled to at least %d",
				rate, c.n.comp.entryBackoff, 4*competeListenEvery)
		}
	}
}

// TestNSCCCompeteStaysBesideCompetitor: while the competitor holds the
// queue through the listens, the mode goes on.
func TestNSCCCompeteStaysBesideCompetitor(t *testing.T) {
	c := newCompetePath()
	c.press()
	for range 4 * competeListenEvery {
		c.round(competeQueue, 1<<20)
	}
	if on, entries := c.n.Competing(); !on || entries != 1 {
		t.Errorf("beside a competitor for four listen periods: competing %v (%d entries)", on, entries)
	}
}

// TestNSCCCompeteEndsOnECN: an ECN echo shows the path marks; the law
// then reads the marks, and a spell under way ends (it had gone on
// pacing at its estimate and ignoring losses with no ACK feeding it).
func TestNSCCCompeteEndsOnECN(t *testing.T) {
	c := newCompetePath()
	c.press()
	if on, _ := c.n.Competing(); !on {
		t.Fatal("never entered the mode")
	}
	c.now = c.now.Add(monotime.Millisecond)
	c.n.OnAck(c.now, Ack{Bytes: c.chunk, RTT: c.base, ECN: true})
	if on, _ := c.n.Competing(); on || c.n.competeRate() != 0 {
		t.Errorf("after an ECN echo: competing %v, pacing at %g bit/s by the mode", on, c.n.competeRate())
	}
}

// TestNSCCCompeteEntersWithoutSamples: beside kernel BBR most chunks
// lose a packet and are resent, and a resent chunk's ACK carries no RTT
// sample. A round trip without a sample says nothing of the queue: it
// must not count against entering (it did, and beside BBR the mode did
// not start in two runs of three).
func TestNSCCCompeteEntersWithoutSamples(t *testing.T) {
	const queue = 10 * monotime.Millisecond
	c := newCompetePath()
	for r := range 400 {
		if on, _ := c.n.Competing(); on {
			return
		}
		// The window's bytes delivered per round trip, in every other
		// round trip with a sample, the queue as deep as the trace
		// beside BBR read it.
		c.roundSampled(queue, c.n.Window(), r%2 == 0)
	}
	t.Errorf("400 round trips beside a standing queue of %v, every other one with an RTT sample: never competing (window %d)",
		queue, c.n.Window())
}

// TestNSCCCompeteStaysThroughProbeRTT: kernel BBR empties the queue for
// about 200 ms every 10 s (PROBE_RTT). A listen that falls in one finds
// the queue empty; the mode leaves only if a listen competeConfirmGap
// later finds it empty again, so it stays beside BBR (one empty listen
// ended it, and the delay law cut the window to its floor).
func TestNSCCCompeteStaysThroughProbeRTT(t *testing.T) {
	c := newCompetePath()
	c.press()
	var probeEnd monotime.Time // BBR's PROBE_RTT: the queue empty for 200 ms from the first listen's reading
	for range 4 * competeListenEvery {
		if c.n.comp.listening == 1 && probeEnd == 0 {
			probeEnd = c.now.Add(200 * monotime.Millisecond)
		}
		q := competeQueue
		if c.now < probeEnd {
			q = 0
		}
		c.round(q, 1<<20)
	}
	if probeEnd == 0 {
		t.Fatal("no listen in four listen periods")
	}
	if on, entries := c.n.Competing(); !on || entries != 1 {
		t.Errorf("a listen in a 200 ms PROBE_RTT, the queue full otherwise: competing %v (%d entries)", on, entries)
	}
}

// alone runs NSCC by itself on a path of rate bytes per second for d: it
// sends at the least of the path's rate, its window per round trip and
// its pacing, a chunk at a time, and each chunk's ACK carries the round
// trip its window's queue makes. It returns the time at which NSCC first
// sent at half the path's rate or more (zero if it never did) and what
// it sent at in the end.
func (c *competePath) alone(rate float64, d monotime.Duration) (half monotime.Duration, end float64) {
	start := c.now
	for c.now.Sub(start) < d {
		bdp := rate * c.base.Seconds()
		queue := monotime.Duration(max(float64(c.n.Window())-bdp, 0) / rate * float64(monotime.Second))
		rtt := c.base + queue
		send := min(rate, float64(c.n.Window())/rtt.Seconds())
		if r := c.n.Stats().Rate; r > 0 {
			send = min(send, r/8)
		}
		if half == 0 && send >= rate/2 {
			half = c.now.Sub(start)
		}
		end = send
		c.now = c.now.Add(monotime.Duration(float64(c.chunk) / send * float64(monotime.Second)))
		c.n.OnSend(c.now, int(c.chunk))
		c.n.OnAck(c.now, Ack{Bytes: c.chunk, RTT: rtt, InFlight: c.n.Window() - c.chunk})
	}
	return half, end
}

// TestNSCCCompeteRegrowsAlone: in the mode NSCC gets a chunk per round
// trip beside the competitor (5.7 Mbit/s), then the competitor leaves. With one ACK per chunk, a round trip lasted as long as
// a chunk took to send, 100 ms and more, and the probe cycle raised the
// estimate by a tenth every eight of them: through sdrnet's kernel-queue
// bench the mode stayed at 3-15 Mbit/s on an empty 1 Gbit/s link for 8.7
// and 12 s after TCP left (the old notebook docs/benchmarks.md, in git history, "A clean bottleneck").
// BBR's startup takes ten round trips for the same climb.
func TestNSCCCompeteRegrowsAlone(t *testing.T) {
	c := newCompetePath()
	c.press()
	if on, _ := c.n.Competing(); !on {
		t.Fatal("never entered the mode")
	}
	// Beside the competitor a while longer: startup ends.
	for range 100 {
		c.round(competeQueue, c.chunk)
	}
	if c.n.comp.startup {
		t.Fatal("startup did not end beside the competitor")
	}
	const rate = 125e6 // 1 Gbit/s
	half, end := c.alone(rate, 10*monotime.Second)
	if half == 0 || half > monotime.Second {
		t.Errorf("alone on a 1 Gbit/s path after a chunk per round trip in the mode: at half the path's rate after %v (want within 1 s), %.3g Mbit/s after 10 s",
			half, 8*end/1e6)
	}
	t.Logf("at half the path's rate after %v; %.3g Mbit/s after 10 s", half, 8*end/1e6)
}

// TestNSCCCompeteEntersAboveFloor: beside a competitor that holds the
// queue a little above the target whatever NSCC does, DelayEta's push
// balanced the delay law's decrease at a window far above the floor, so
// the mode never started (kernel BBR on a clean bottleneck). With the
// mean delay above the target round trip after round trip the push
// stops, the queue does not answer the law's decrease, the window goes
// down to the floor, and the mode starts. The queue may cycle as BBR's
// probing does (one round trip in eight at 1.25 x, the next at 0.75 x).
func TestNSCCCompeteEntersAboveFloor(t *testing.T) {
	const held = 1300 * monotime.Microsecond // kernel BBR's queue, as NSCC read it beside it
	for _, tc := range []struct {
		name  string
		cycle [8]monotime.Duration
	}{
		{"steady", [8]monotime.Duration{held, held, held, held, held, held, held, held}},
		{"probe cycle", [8]monotime.Duration{1800 * monotime.Microsecond, 1050 * monotime.Microsecond, held, held, held, held, held, held}},
	} {
		c := newCompetePath()
		// A first loss ends slow start, as the competitor's overflow does.
		c.round(held, c.n.Window())
		c.n.OnLoss(c.now, Loss{Bytes: c.chunk})
		// With the push, the window balanced at 309,622 bytes, ten times
		// the floor, and the mode never started.
		on := false
		for r := 0; r < 1000 && !on; r++ {
			c.round(tc.cycle[r%8], c.n.Window())
			on, _ = c.n.Competing()
		}
		if !on {
			t.Errorf("%s: 1000 round trips beside a queue held near %v (target %v): never competing, window %d (floor %g)",
				tc.name, held, c.n.cfg.Target, c.n.Window(), competeFloor*c.n.cfg.Quantum)
		}
	}
}

// TestNSCCPushHoldsBesideCUBIC: CUBIC's queue stands above the target
// for up to 50 round trips, then drains after its loss. The push must go
// on through that (with a hold of 16 round trips a host's noise let the
// mode start beside CUBIC, and CUBIC kept 0.01 of the link in one run).
func TestNSCCPushHoldsBesideCUBIC(t *testing.T) {
	c := newCompetePath()
	c.round(1500*monotime.Microsecond, c.n.Window())
	c.n.OnLoss(c.now, Loss{Bytes: c.chunk}) // slow start ends
	most := 0
	for r := range 1000 {
		q := 1500 * monotime.Microsecond
		if r%55 >= 50 {
			q = 0 // CUBIC's loss: its cut drains the queue
		}
		c.round(q, c.n.Window())
		most = max(most, c.n.push.rounds)
	}
	if most >= nsccPushHold {
		t.Errorf("the push stopped beside a queue that drains every 55 round trips: %d adjustments in a row above the target (hold %d)", most, nsccPushHold)
	}
	if on, entries := c.n.Competing(); on || entries != 0 {
		t.Errorf("beside CUBIC's queue: competing %v (%d entries)", on, entries)
	}
}

// TestNSCCEntryListenDrains: before the mode starts, a listen at the
// floor must find a queue still there. On a slow path the chunks queued
// before it take more than a round trip to cross, and their ACKs, late
// and with the old queue's delay, are not the listen's reading: it waits
// until they are in. Then the queue is gone (NSCC's own), the mode does
// not start, the law's window comes back, and the next listen waits.
func TestNSCCEntryListenDrains(t *testing.T) {
	c := newCompetePath()
	c.pressToListen(t)
	// The listen paces at half what the path delivered (a chunk per
	// round trip would keep its own queue up on such a path).
	if r, most := c.n.Stats().Rate, 8*c.n.comp.maxBW/2; r <= 0 || r > 1.01*most {
		t.Errorf("pacing at %.3g bit/s in the listen, want at most half the delivery rate, %.3g", r, most)
	}
	// What was in flight when the listen started crosses over two round
	// trips at the old queue's delay; then the path is empty.
	out := c.n.inFlight
	if out < 2*c.chunk {
		out = 2 * c.chunk
		c.n.inFlight = out
	}
	for acked := int64(0); acked < out; acked += c.chunk {
		c.now = c.now.Add(2 * (c.base + competeQueue) * monotime.Duration(c.chunk) / monotime.Duration(out))
		c.n.OnAck(c.now, Ack{Bytes: c.chunk, RTT: c.base + competeQueue})
	}
	// Gone, but for what a host's noise adds to a lone sample: a lone
	// 40 Mbit/s path read 0.40-0.52 ms through linkem (target 1 ms).
	for range 6 {
		c.round(400*monotime.Microsecond, c.chunk)
	}
	if on, entries := c.n.Competing(); on || entries != 0 {
		t.Fatalf("the queue was gone once the bytes sent before the listen were in: competing %v (%d entries)", on, entries)
	}
	if c.n.comp.listening != 0 || c.n.comp.entryWait == 0 || c.n.cwnd < c.n.comp.heldWindow {
		t.Errorf("after a listen that found the queue gone: listening %d, wait before the next %d round trips, window %.0f (want at least the law's %.0f)",
			c.n.comp.listening, c.n.comp.entryWait, c.n.cwnd, c.n.comp.heldWindow)
	}
}

// TestNSCCEntryListenEndsOnECN: an ECN echo in the listen before the
// mode hands the path to the marks' law, with the law's window back, not
// the listen's single packet.
func TestNSCCEntryListenEndsOnECN(t *testing.T) {
	c := newCompetePath()
	c.pressToListen(t)
	held := c.n.comp.heldWindow
	if held < 4*c.n.minWnd {
		t.Fatalf("the law's window before the listen, %.0f, is near the listen's (%.0f): the test shows nothing", held, c.n.minWnd)
	}
	c.now = c.now.Add(monotime.Millisecond)
	c.n.OnAck(c.now, Ack{Bytes: c.chunk, RTT: c.base, ECN: true})
	if c.n.comp.listening != 0 || c.n.cwnd < held {
		t.Errorf("after an ECN echo in the listen: listening %d, window %.0f, want at least the law's %.0f (the listen's: %.0f)",
			c.n.comp.listening, c.n.cwnd, held, c.n.minWnd)
	}
}
