package cc

import (
	"math"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// NSCC's window law as uec.cpp has it: the delay average, the congestion
// judgment of a loss, quick adapt, the proportional and fast increases,
// the multiplicative decrease and fulfill. The host's additions are in
// nscc_host.go, the competitive mode in nscc_compete.go.

// updateDelay feeds both averages. uec.cpp feeds an unmarked delay above
// the target to the average as a quarter base RTT: a queue no switch
// marked is not held against the window (unless in delay-only mode,
// where no switch marks). The loss-judging average takes
// raw delays, so a drop-tail queue without ECN still reads as congestion.
func (n *NSCC) updateDelay(delay monotime.Duration, marked bool) {
	s := float64(delay)
	if !marked && delay > n.cfg.Target && !n.delayOnly() {
		s = 0.25 * float64(n.baseRTT)
	}
	n.avgDelay += n.cfg.DelayWeight * (s - n.avgDelay)
	n.lossDelay += n.cfg.LossDelayWeight * (float64(delay) - n.lossDelay)
}

// delayOnly reports whether an unmarked delay above the target is
// congestion: DelayWithoutECN and no ECN echo yet.
func (n *NSCC) delayOnly() bool { return n.cfg.DelayWithoutECN && !n.sawECN }

// congested reports whether the path shows a queue: a recent delay above
// the threshold (in filtered delay-only mode the standing queue at the
// target, or heavy loss through a shallow buffer), an ECN echo within
// base RTT + target, or a mark on the latest ACK that left data in flight
// (which outlasts the echo when an incast's ACKs all stop; TestNSCCLoss).
func (n *NSCC) congested(now monotime.Time) bool {
	if n.cfg.StandingWindow > 0 && n.delayOnly() {
		if n.queue >= n.cfg.Target || n.shallow && n.losses.heavy(n.cfg.MSS) {
			return true
		}
	} else if n.lossDelay > float64(n.cfg.LossDelayThreshold) {
		return true
	}
	return n.lastMarked || n.sawECN && now.Sub(n.lastECN) <= n.baseRTT+n.cfg.Target
}

// quickAdapt measures the bytes acked per base RTT + target. At the end
// of a period that something armed (a loss, or a delay above QAThreshold)
// and in which too little was acked, the window drops to what was: the
// path delivers that much. It reports whether the ACK or NACK is spent (a
// quick adapt, or a marked ACK after it, which reflects the old window).
func (n *NSCC) quickAdapt(now monotime.Time, isLoss, marked bool, delay monotime.Duration) bool {
	spent := false
	if marked && n.bytesIgnored < n.bytesToIgnore {
		spent = true
	} else if !n.qaStarted || now > n.qaEnd {
		armed := n.triggerQA || isLoss || delay > n.cfg.QAThreshold
		if n.qaStarted && armed && n.achieved < int64(n.bdpWindow())>>n.cfg.QAGate {
			n.cwnd = min(n.cwnd, max(float64(n.achieved), n.minWnd))
			n.bytesToIgnore, n.bytesIgnored = n.inFlight, 0
			n.stats.Decreases++
			spent = true
		}
		n.triggerQA = false
		n.achieved = 0
		n.qaStarted, n.qaEnd = true, now.Add(n.baseRTT+n.cfg.Target)
	}
	if spent {
		n.inc, n.received = 0, 0
	}
	return spent
}

// proportionalIncrease grows the window in proportion to how far below
// the target the delay is, or fast once the delay has stayed under
// FastIncreaseDelay for a window of ACKs (an idle path: go get it).
func (n *NSCC) proportionalIncrease(bytes int64, delay monotime.Duration) {
	if delay < n.cfg.FastIncreaseDelay {
		n.fiCount += bytes
		if n.fastInc || n.fiCount > int64(n.cwnd) {
			n.cwnd += float64(bytes) * n.fastScale()
			n.fastInc = true
			return
		}
	} else {
		n.fiCount = 0
	}
	n.fastInc = false
	n.inc += n.cfg.Alpha * float64(bytes) * float64(n.cfg.Target-delay)
}

// fastScale is FastIncreaseScale, bounded like the proportional gain
// when MaxGain is set: a round trip of fast increase adds at most
// MaxGain x the target's queue at the line rate. FastIncreaseScale grows
// with the BDP and would flood a shallow queue on a long path; in a
// datacenter the bound is slack.
func (n *NSCC) fastScale() float64 {
	if n.cfg.MaxGain <= 0 {
		return n.cfg.FastIncreaseScale
	}
	gap := n.cfg.MaxGain * n.cfg.LineRate / 8 * n.cfg.Target.Seconds()
	return min(n.cfg.FastIncreaseScale, gap/n.cwnd)
}

// multiplicativeDecrease cuts by how far the average delay avg (uec.cpp's
// slow one on a marked ACK, the fast one in delay-only mode) is above the
// target, at most by half and at most once per base RTT.
func (n *NSCC) multiplicativeDecrease(now monotime.Time, avg float64) {
	n.fastInc, n.fiCount = false, 0
	target := float64(n.cfg.Target)
	if avg <= target || (n.mdDone && now.Sub(n.lastMD) <= n.baseRTT) {
		return
	}
	n.cwnd *= max(1-n.cfg.Gamma*(avg-target)/avg, 0.5)
	n.mdDone, n.lastMD = true, now
	n.stats.Decreases++
}

// fulfill applies the increase gathered since the last one. inc is in
// bytes x bytes: over a window of ACKs the fair increase gathers
// FI x cwnd, so dividing by cwnd gives FI per round trip.
func (n *NSCC) fulfill(now monotime.Time) {
	n.cwnd += n.inc / n.cwnd
	if now.Sub(n.lastAdjust) >= n.cfg.AdjustPeriod {
		if n.delayOnly() && n.cfg.StandingWindow > 0 {
			n.cwnd += n.delayPush()
		} else {
			n.cwnd += n.cfg.Eta
		}
		n.lastAdjust = now
	}
	n.inc, n.received = 0, 0
	n.clamp()
}

// delayPush is what fulfill adds under the filtered delay-only law:
// DelayEta, except while a stop tests whether the queue is ours. Beside
// a flow that holds the queue whatever NSCC does (kernel BBR), the push
// would balance the law's decrease far above the competitive mode's
// floor, and the mode would never start.
//
// The push's own balance holds the mean delay above the target (by
// DelayEta x RTT / (DelayGain x w)), so that is no proof of a competitor:
// after nsccPushHold adjustments in a row above it the push stops. A
// queue that is ours or our peers' answers, its excess falling to
// pushAnswered of its mean over the hold; the push resumes and the next
// hold doubles (TestNSCCSharedQueueConverges). A competitor's queue does
// not answer, and the window falls to the floor, where the mode's entry
// reads the queue. Not covered: a competitor's queue under the target
// with ours on top answers too, and the mode never starts.
func (n *NSCC) delayPush() float64 {
	if !n.cfg.Compete {
		return n.cfg.DelayEta
	}
	p := &n.push
	if p.sampled { // else the mean is the last adjustment's: no new evidence
		p.sampled = false
		// The hold, doubled by stops the queue answered, at most
		// pushHoldCap: beside kernel BBR the push must stop, and the law
		// reach the floor, between two of its PROBE_RTTs (every 10 s).
		hold := min(nsccPushHold<<p.doubled, max(nsccPushHold, int(pushHoldCap/n.baseRTT)))
		p.judge(float64(n.meanDelay()-n.cfg.Target), hold)
	}
	if p.stopped {
		return 0
	}
	return n.cfg.DelayEta
}

// judge moves the stop along on an adjustment that found the mean delay
// excess above the target (at or under it if excess <= 0); a stop starts
// after hold such adjustments in a row.
func (p *pushStop) judge(excess float64, hold int) {
	above := excess > 0
	excess = max(excess, 0)
	switch {
	case p.stopped:
		p.excess += (excess - p.excess) / 4
		switch {
		case p.excess <= pushAnswered*p.ref: // the queue answered: ours
			*p = pushStop{doubled: min(p.doubled+1, nsccPushDoublings)}
		case !above:
			// A dip, not an answer: kernel BBR empties the queue for
			// PROBE_RTT whatever NSCC does, and doubling the hold on dips
			// would keep the mode from starting beside it after a lone
			// phase (TestNSCCLateCompetitorWithDips).
			*p = pushStop{doubled: p.doubled}
		}
	case above:
		p.rounds++
		p.sum += excess
		if p.rounds >= hold {
			p.stopped = true
			p.ref = p.sum / float64(p.rounds)
			p.excess = p.ref
		}
	default:
		p.rounds, p.sum = 0, 0
	}
}

// pushStop is delayPush's state.
type pushStop struct {
	rounds  int     // adjustments in a row with the mean above the target
	sum     float64 // their excess over the target, in picoseconds
	stopped bool
	ref     float64 // the mean excess over the hold that stopped the push
	excess  float64 // the excess since, smoothed over four adjustments
	doubled int     // how many times the hold has doubled
	sampled bool    // an RTT sample came since the last adjustment
}

const (
	// nsccPushHold is how many adjustments (base RTTs) in a row the mean
	// delay must stand above the target before the push first stops:
	// longer than CUBIC's loss cycle, whose drained queue restarts the
	// count, so the mode does not start beside CUBIC
	// (TestNSCCPushHoldsBesideCUBIC).
	nsccPushHold = 64
	// nsccPushDoublings bounds the hold's doubling: at most 16 x
	// nsccPushHold, and pushHoldCap.
	nsccPushDoublings = 4
	// pushHoldCap bounds the hold in time (where nsccPushHold is less):
	// the stop, the law's descent to the floor and the press must fit
	// between two of kernel BBR's PROBE_RTTs, 10 s apart.
	pushHoldCap = 2500 * monotime.Millisecond
	// pushAnswered is the share of its excess the queue must keep for
	// the stop to go on: the smoothing (a quarter per adjustment) takes
	// a queue that falls to just above the target there in three
	// adjustments (0.75^3 = 0.42); kernel BBR's probe cycle dips one
	// round trip in eight.
	pushAnswered = 0.5
)

// lossShare counts a real host's bytes acknowledged and lost over this
// round trip and the one before, to tell losses too many for chance
// (shallowBuffer): a buffer smaller than the host target (hostTarget)
// overflows before the queue reads the target, and the window would grow
// into the overflow round after round (TestNSCCBufferUnderTarget).
type lossShare struct {
	end               monotime.Time
	acked, lost       int64 // this round trip
	prevAcked, prevLo int64 // the one before
}

// count adds a round trip's acknowledged and lost bytes at now; a round
// trip lasts rtt. A count a round trip or more after the current one
// ended empties the one before: the losses before an idle spell are not
// the path's word on what is sent after it.
func (l *lossShare) count(now monotime.Time, rtt monotime.Duration, acked, lost int64) {
	if now >= l.end {
		l.prevAcked, l.prevLo = l.acked, l.lost
		if now >= l.end.Add(rtt) {
			l.prevAcked, l.prevLo = 0, 0
		}
		l.acked, l.lost = 0, 0
		l.end = now.Add(rtt)
	}
	l.acked += acked
	l.lost += lost
}

// heavy reports whether the last two round trips lost more packets of
// mss bytes than random loss of randomLossShare could by chance: at
// least heavyLossPackets and heavyLossSigmas standard deviations (plus a
// packet for a count's step) above the binomial mean. A fixed share passes
// large windows' random loss too often (TestNSCCShallowBufferLeftAlone).
func (l *lossShare) heavy(mss int) bool {
	lost := float64(l.lost+l.prevLo) / float64(mss)
	all := float64(l.acked+l.lost+l.prevAcked+l.prevLo) / float64(mss)
	mean := randomLossShare * all
	return lost >= heavyLossPackets && lost >= mean+heavyLossSigmas*math.Sqrt(mean*(1-randomLossShare))+1
}

const (
	// randomLossShare is the most random loss the delay law leaves
	// unanswered on its own: twice the lossy long haul's.
	randomLossShare = 0.02
	// heavyLossSigmas is the bound's distance from random loss's mean.
	heavyLossSigmas = 4.5
	// heavyLossPackets is the least count that is heavy: 2% random loss
	// loses 8 of 50 packets with a chance of 6 in 10^6.
	heavyLossPackets = 8
)

// OnLoss cuts the window by the NACKed bytes and arms quick adapt, on a
// congested path only (see the file comment).
func (n *NSCC) OnLoss(now monotime.Time, l Loss) {
	if n.cfg.StandingWindow > 0 && !l.Timeout {
		// A timeout declares all it waited for lost, not a share of it.
		n.losses.count(now, n.baseRTT+n.queue, 0, l.Bytes)
		if n.delayOnly() && !n.slowStart {
			n.shallowBuffer()
		}
	}
	if n.learning {
		n.learnOK = false // no doubling in a period with a loss
	}
	n.comp.draining -= l.Bytes
	if n.comp.active {
		return // the competitive mode does not answer losses (see compete)
	}
	if n.slowStart && n.cfg.StandingWindow > 0 && n.queue >= n.cfg.params.HostNoise/4 && n.losses.heavy(n.cfg.MSS) {
		// Slow start's overshoot: on a long path the window doubles far
		// past the BDP before the standing queue, biased low by the lost
		// chunks' missing samples, reads half the target. Random loss
		// comes without a queue.
		n.endSlowStart(now)
		return
	}
	if n.cfg.LossNeedsCongestion && !n.congested(now) {
		n.ignoredLosses++
		return
	}
	if n.slowStart {
		n.endSlowStart(now)
		return
	}
	if n.cfg.StandingWindow > 0 && !l.Timeout {
		n.hostLossDecrease(now)
		return
	}
	n.triggerQA = true
	if l.Timeout {
		n.quickAdapt(now, true, false, 0)
		return
	}
	n.bytesIgnored += l.Bytes
	if n.quickAdapt(now, true, true, 0) {
		return
	}
	n.cwnd -= float64(l.Bytes)
	n.clamp()
	n.stats.Decreases++
}

// OnTimer does nothing: NSCC is clocked by ACKs.
func (n *NSCC) OnTimer(monotime.Time) {}

// NextTimer is Never: NSCC has no timers.
func (n *NSCC) NextTimer() monotime.Time { return monotime.Never }
