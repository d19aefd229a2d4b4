package cc

import (
	"math/bits"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// compete is NSCC's answer, on a real host, to a flow that keeps the
// bottleneck's queue up whatever NSCC does: kernel TCP's BBR in a shallow
// queue sends at its bandwidth estimate and does not back off on delay or
// loss, so the delay law, answering a queue it did not build, held the
// window at its floor and NSCC got 1% of the link (the old notebook docs/benchmarks.md, in git history).
// Copa meets such a competitor with a competitive mode; this one competes
// as BBR does, since that is what it meets.
//
// Entering. A round trip is pressed when the standing queue averaged at
// least half the target while the window was at most competeFloor
// chunks: the queue is not NSCC's (a lone flow's queue is its own window
// beyond the BDP, so a window at its floor leaves none). After
// competeEnter of the last 16 round trips pressed, a listen (see Leaving)
// must still find a queue; then the mode starts. Where two chunks are
// more than the path's BDP, the floor's own queue presses too: a lone
// flow at 5-10 Mbit/s entered 9-11 times in 1,000 round trips at 20 ms
// (16 KiB chunks); its listens find the queue gone (competeOwnQueue).
// (With the whole target, BBR's drain rounds kept too few pressed: the
// mode started after 9.8 s of a 20 s run.) The law reaches the floor
// beside such a queue because its push stops when the mean delay has
// stood above the target for a while and the queue does not answer
// (delayPush).
//
// In the mode the window and the pacing follow a bandwidth estimate, the
// most of the last competeBWRounds samples, each the bytes acknowledged
// over the last two round trips per second: first a startup paced
// at twice it until three round trips raise it by less than a quarter,
// then BBR's probe cycle (paced at 1.25, 0.75, then 1 x it for six round
// trips), the window 1.5 times the estimate times the base RTT. A round
// trip whose standing queue averaged under a quarter of the target starts
// startup again: the path has room, and the cycle finds it slowly when a
// round trip is as long as a chunk takes to send (after kernel TCP left,
// the mode went on at 3-15 Mbit/s on an empty 1 Gbit/s link for 8.7 and
// 12 s). Losses are not answered: the competitor's are what fills the
// queue (BBR's own answer is the same). Capping the estimate at what a
// round trip with more than 10% lost delivered, as BBRv2 bounds its inflight, brought
// NSCC's share back to 0.04: a round trip's loss share swings from 0 to
// 0.6 with NACKs arriving in bursts.
//
// Leaving. Every competeListenEvery round trips (startup's among them)
// the mode listens: two round trips at the floor, the first to drain its
// own packets from the queue, the second to read what is left. If the
// standing queue then averaged below a quarter of the target, and did
// again in a listen competeConfirmGap later, no one else holds it and the
// delay law takes over again at the estimated BDP; otherwise the probe
// cycle goes on.
// (Its least sample below half the target was no proof: BBR's drain
// round trips reach it; nor is one empty listen: BBR's PROBE_RTT empties
// the queue for 200 ms.)
type compete struct {
	active  bool
	startup bool
	// listening counts the round trips of a listen left: 2, then 1.
	listening int
	// draining starts at the bytes in flight when the listen started,
	// and every byte acknowledged or lost since takes one off (those
	// sent in the listen, and resends, too): the listen's first part
	// lasts until as many bytes as were out have come back either way.
	// Every ACK lowers it, so the wait ends.
	draining int64
	// listenSum and listenN: the standing queue's samples in the
	// listen's second round trip.
	listenSum float64
	listenN   int
	// listenWait counts the round trips the reading waited for a
	// sample (competeListenWait at most).
	listenWait int

	roundStart, roundEnd monotime.Time
	roundBytes           int64
	roundQueue           float64 // sum of the round trip's standing-queue samples, ps
	roundSamples         int
	pressed              uint16 // one bit per round trip, newest lowest

	span        rateSpan                 // the last two round trips' bytes and lengths
	bw          [competeBWRounds]float64 // bytes per second, a ring
	bwNext      int
	maxBW       float64
	startBW     float64 // the estimate startup last raised by a quarter
	startStall  int     // round trips since
	cycle       int     // probe phase, 0..len(competeGains)-1
	sinceListen int
	// confirmAt, when set, is when a listen confirms the one before,
	// which found the queue empty.
	confirmAt monotime.Time
	entries   uint64
	// heldWindow is the law's window before a listen ahead of entering
	// (competeOwnQueue); entryWait counts down the round trips before
	// the next such listen may start, entryBackoff is the last wait.
	heldWindow   float64
	entryWait    int
	entryBackoff int
}

const (
	competeFloor       = 2  // chunks: a window at most this is at its floor
	competeEnter       = 12 // pressed round trips of the last 16 that start the mode
	competeBWRounds    = 10 // round trips the bandwidth filter keeps (BBR's)
	competeListenEvery = 64 // round trips between listens
	competeListenWait  = 4  // round trips a listen's reading waits for a sample
	competeStartGain   = 2.0
	// competeWindowGain is the mode's window over the estimated BDP:
	// BBR's 2 took 0.69-0.76 of a clean bottleneck from kernel BBR
	// (tuntcp -kernel-queue, MTU 9000), resending 17.8-18.3%; at 1.5
	// BBR kept 0.36-0.64, and sdrnet resent 2.2-11.3%.
	competeWindowGain = 1.5
	// competeConfirmGap separates a listen that found the queue empty
	// from the one that confirms it: longer than BBR's PROBE_RTT (at
	// least 200 ms at a window of four packets, every 10 s), which
	// empties the queue for a moment. A single listen that fell in one
	// would end the mode beside kernel BBR, and the delay law would cut
	// the window to its floor until the mode started over.
	competeConfirmGap = 300 * monotime.Millisecond
)

// competeGains is BBR's probe cycle, one gain per round trip.
var competeGains = [...]float64{1.25, 0.75, 1, 1, 1, 1, 1, 1}

// competeAck feeds the mode an ACK of bytes with, if sample, the
// standing queue q, and reports whether the mode holds the window (the
// delay law then stays out). The mode runs only in the filtered
// delay-only mode: once an ECN echo shows the path marks, the law reads
// the marks, and a spell under way ends.
func (n *NSCC) competeAck(now monotime.Time, bytes int64, q monotime.Duration, sample bool) bool {
	c := &n.comp
	if !n.cfg.Compete || n.cfg.StandingWindow <= 0 || !n.delayOnly() {
		if c.active {
			n.competeLeave()
		} else if c.listening > 0 { // the listen before entering: the law's window back
			n.cwnd = c.heldWindow
			n.clamp()
		}
		c.listening = 0
		return false
	}
	c.roundBytes += bytes
	c.draining -= bytes
	if sample {
		c.roundQueue += float64(q)
		c.roundSamples++
		if c.listening == 1 {
			c.listenSum += float64(q)
			c.listenN++
		}
	}
	if now >= c.roundEnd {
		n.competeRound(now)
	}
	return c.active || c.listening > 0
}

// competeRound closes a round trip: it feeds the bandwidth filter, judges
// whether the round was pressed, and moves the mode along.
func (n *NSCC) competeRound(now monotime.Time) {
	c := &n.comp
	if d := now.Sub(c.roundStart); c.roundStart != 0 && d > 0 {
		// A sample spans the last two round trips (rateSpan): ACKs come a
		// chunk at a time and NACKed bytes are acknowledged late in a
		// burst, so one round trip's bytes swing several-fold, and the
		// maximum of such samples ran the pacer far ahead of what got
		// through (35% of the bytes resent).
		c.bw[c.bwNext] = c.span.add(c.roundBytes, d)
		c.bwNext = (c.bwNext + 1) % len(c.bw)
		c.maxBW = 0
		for _, b := range c.bw {
			c.maxBW = max(c.maxBW, b)
		}
	}
	// A round trip without a delay sample is not judged: beside kernel
	// BBR about half the chunks lose a packet and are resent, and a
	// resent chunk's ACK carries no sample (Karn); counted as not
	// pressed, such round trips kept the mode from starting in two runs
	// of three (the old notebook docs/benchmarks.md, in git history, "A second machine").
	roomy := false // the round trip's standing queue was under a quarter of the target
	if c.roundSamples > 0 {
		mean := c.roundQueue / float64(c.roundSamples)
		c.pressed <<= 1
		if mean >= float64(n.cfg.Target)/2 && n.cwnd <= competeFloor*n.cfg.Quantum {
			c.pressed |= 1
		}
		roomy = mean < float64(n.cfg.Target)/4
	}
	c.roundStart, c.roundBytes, c.roundQueue, c.roundSamples = now, 0, 0, 0
	c.roundEnd = now.Add(n.baseRTT + n.queue)

	switch {
	case c.listening == 2 && !c.active && c.draining > 0:
		// Before entering, bytes sent before the listen are still out:
		// a round trip of their ACKs reads the queue they met. Through a
		// 20 Mbit/s path a 64 KiB chunk takes 26 ms to cross, and two of
		// them queued outlast the round trip.
	case c.listening == 2:
		c.listening, c.listenSum, c.listenN, c.listenWait = 1, 0, 0, 0
	case c.listening == 1 && !c.active && c.listenN == 0 && c.listenWait < competeListenWait:
		// No sample yet before entering: the ACKs were of chunks resent
		// before the listen (Karn). If none comes, the mode starts on
		// the press alone: beside kernel BBR most chunks are resent.
		c.listenWait++
	case c.listening == 1:
		c.listening = 0
		// Before entering, the listen confirms the press (half the
		// target); in the mode it must find the queue all but gone
		// (a quarter). Alone on a 40 Mbit/s path, the queue drained,
		// listens read 0.25-0.66 ms through linkem, one sample each,
		// with a 1.06-1.09 ms target.
		empty := c.listenN > 0 && c.listenSum/float64(c.listenN) < float64(n.cfg.Target)/4
		if !c.active {
			empty = c.listenN > 0 && c.listenSum/float64(c.listenN) < float64(n.cfg.Target)/2
		}
		switch {
		case !c.active && empty:
			n.competeOwnQueue()
		case !c.active:
			c.active, c.startup, c.startBW, c.startStall = true, true, c.maxBW, 0
			c.sinceListen, c.cycle, c.confirmAt, c.entryWait, c.entryBackoff = 0, 0, 0, 0, 0
			c.entries++
			n.losses = lossShare{} // the competitor's overflow is not the buffer's measure
			n.slowStart = false
			n.push = pushStop{}
		case empty && c.confirmAt != 0:
			n.competeLeave()
			return
		case empty:
			c.confirmAt = now.Add(competeConfirmGap)
		default:
			c.confirmAt = 0
		}
	case !c.active:
		if c.entryWait > 0 {
			c.entryWait--
		} else if bits.OnesCount16(c.pressed) >= competeEnter {
			c.listening, c.heldWindow, c.draining = 2, n.cwnd, n.inFlight // listen before entering
		}
	default:
		switch {
		case roomy && !c.startup: // room on the path: startup again
			c.startup, c.startBW, c.startStall = true, c.maxBW, 0
		case c.startup:
			if c.maxBW >= 1.25*c.startBW {
				c.startBW, c.startStall = c.maxBW, 0
			} else if c.startStall++; c.startStall >= 3 {
				c.startup = false
			}
		default:
			c.cycle = (c.cycle + 1) % len(competeGains)
		}
		if c.sinceListen++; c.sinceListen >= competeListenEvery || c.confirmAt != 0 && now >= c.confirmAt {
			c.sinceListen, c.listening = 0, 2
		}
	}
	if c.active || c.listening > 0 {
		n.cwnd = n.competeWindow()
		n.clamp()
	}
}

// competeOwnQueue ends a listen before entering that found the queue
// gone: it was NSCC's own, a window at the floor being more than the
// path's BDP (a slow path, or a short one: two 64 KiB chunks are the BDP
// of 50 Mbit/s at 20 ms). The law takes its window back, and the next
// such listen waits twice as long as this one did, from
// competeListenEvery up to 16 times that.
//
// That listen differs from the mode's own: it waits for what was in
// flight to be in (draining), for a sample (listenWait), paces at half
// the delivery rate (leastPaced) and reads half the target, not a
// quarter. Through linkem a lone flow then neither entered the mode nor
// resent a byte at 20 and 40 Mbit/s, where it had entered and resent
// 11-16% (the old notebook docs/benchmarks.md, in git history, "Slow paths"). Given to the mode's listens
// too, these let the mode leave and come back two to four times a run
// beside kernel BBR, which kept 0.69-0.82 of the link.
func (n *NSCC) competeOwnQueue() {
	c := &n.comp
	c.pressed = 0
	c.entryBackoff = min(max(2*c.entryBackoff, competeListenEvery), 16*competeListenEvery)
	c.entryWait = c.entryBackoff
	n.cwnd = c.heldWindow
	n.clamp()
	n.inc, n.received = 0, 0
}

// competeLeave hands the window back to the delay law at the estimated
// BDP.
func (n *NSCC) competeLeave() {
	c := &n.comp
	c.active, c.pressed, c.confirmAt = false, 0, 0
	n.losses = lossShare{}
	n.giveWayUntil = 0 // the queue it gave way to is gone
	n.cwnd = c.maxBW * n.baseRTT.Seconds()
	n.clamp()
	n.inc, n.received = 0, 0
	n.push.rounds, n.push.sum, n.push.stopped = 0, 0, false
}

// competeWindow is the mode's window: the floor while listening, else
// competeWindowGain times the estimated BDP, with room for the chunks
// the core admits whole.
func (n *NSCC) competeWindow() float64 {
	c := &n.comp
	if c.listening > 0 {
		return n.minWnd
	}
	return competeWindowGain*c.maxBW*n.baseRTT.Seconds() + competeFloor*n.cfg.Quantum
}

// competeRate is the mode's pacing rate in bits per second; 0 outside
// the mode and while listening (pace then paces the window).
func (n *NSCC) competeRate() float64 {
	c := &n.comp
	switch {
	case !c.active || c.listening > 0:
		return 0
	case c.startup:
		return competeStartGain * c.maxBW * 8
	default:
		return competeGains[c.cycle] * c.maxBW * 8
	}
}

// Competing reports whether NSCC is in its competitive mode, and how many
// times it has entered it.
func (n *NSCC) Competing() (bool, uint64) { return n.comp.active, n.comp.entries }
