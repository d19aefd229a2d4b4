package cc

import (
	"math/bits"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// compete is NSCC's answer, on a real host, to a flow that keeps the
// bottleneck's queue up whatever NSCC does, such as kernel TCP's BBR in
// a shallow queue: the delay law, answering a queue it did not build,
// would hold the window at its floor. Copa meets such a competitor with
// a competitive mode; this one competes as BBR does, since BBR is what
// it meets.
//
// Entering. A round trip is pressed when its standing queue averaged at
// least half the target (BBR's drain round trips dip below the whole)
// with the window at most competeFloor chunks: a lone flow's queue is
// its own window beyond the BDP, which a window at its floor does not
// leave. After competeEnter of the last 16 round trips pressed, a listen
// (see Leaving) must still find a queue, since on a slow path the
// floor's own queue presses too (competeOwnQueue). The law reaches the
// floor beside such a queue because its push stops (delayPush).
//
// In the mode the window (competeWindowGain x the estimated BDP) and the
// pacing follow a bandwidth estimate, the most of competeBWRounds
// samples of two round trips each: a startup at twice it until three
// round trips raise it by less than a quarter, then BBR's probe cycle. A
// round trip whose standing queue averaged under a quarter of the target
// restarts startup, as the cycle finds room slowly. Losses are not
// answered: the competitor's fill the queue, and a round trip's loss
// share swings too widely, with NACKs in bursts, to bound the estimate.
//
// Leaving. Every competeListenEvery round trips the mode listens: two
// round trips at the floor, one to drain its own packets from the queue
// and one to read what is left. If the queue averaged under a quarter of
// the target, and does again in a listen competeConfirmGap later, no one
// else holds it and the delay law takes over at the estimated BDP. One
// empty listen is no proof: BBR's PROBE_RTT empties the queue briefly.
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
	// competeWindowGain is the mode's window over the estimated BDP: under
	// BBR's 2, which takes more of a link shared with kernel BBR but
	// resends far more of the data.
	competeWindowGain = 1.5
	// competeConfirmGap separates a listen that found the queue empty
	// from the one that confirms it: longer than BBR's PROBE_RTT (at
	// least 200 ms every 10 s), which empties the queue for a moment.
	// Ending the mode on one listen there would let the delay law cut
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
		// burst, so one round trip's bytes swing several-fold, and a max
		// filter over them would run the pacer ahead of the path.
		c.bw[c.bwNext] = c.span.add(c.roundBytes, d)
		c.bwNext = (c.bwNext + 1) % len(c.bw)
		c.maxBW = 0
		for _, b := range c.bw {
			c.maxBW = max(c.maxBW, b)
		}
	}
	// A round trip without a delay sample is not judged: beside kernel
	// BBR many chunks are resent, a resent chunk's ACK carries no sample
	// (Karn), and counting such round trips as not pressed would keep the
	// mode from starting (TestNSCCCompeteEntersWithoutSamples).
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
		// a round trip of their ACKs reads the queue they met, and on a
		// slow path two queued chunks outlast the round trip
		// (TestNSCCEntryListenDrains).
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
		// target); in the mode it must find the queue all but gone (a
		// quarter). A lone flow's drained queue, read through a host's
		// noise, may still read above a quarter.
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
// gone: it was NSCC's own, a window at the floor exceeding a slow or
// short path's BDP. The law takes its window back, and the next such
// listen waits twice as long, from competeListenEvery up to 16 times that.
//
// That listen, unlike the mode's, waits for what was in flight
// (draining) and for a sample (listenWait), paces at half the delivery
// rate (leastPaced) and reads half the target, so a lone flow finds its
// own queue gone; in the mode these would end it too often beside BBR.
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
