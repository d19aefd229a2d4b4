package cc

import (
	"math"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// NSCC on a real host: what a sender whose line rate is a guess and whose
// RTT samples carry scheduling noise adds to uec.cpp's law (NSCCConfig's
// fields marked "ours"): pacing, line-rate learning, the standing-queue
// filter and the delay law it drives, slow start, and a loss answer for
// NACK-heavy schemes. The competitive mode is in nscc_compete.go.

// hostPacing is the pacing gain on a real host: the window's own rate.
// A gain above 1 only made up for pacers that woke late; with the
// pacers' waits timed finely (sdr's fineWaker), 1.0 fills the link best.
func hostPacing(p Params) float64 {
	if p.HostNoise > 0 {
		return 1.0
	}
	return 0
}

// hostTarget is the least target on a real host for a base RTT of rtt:
// a twentieth of it, so HostNoise (1 ms) governs up to a 20 ms path. A
// host's noise does not shrink with the path: on a long path a 1 ms
// target leaves the law no room above it, and random losses read as
// congestion. A twentieth costs the same share of every round trip.
func hostTarget(rtt monotime.Duration) monotime.Duration { return rtt / 20 }

// learnBaseRTT rederives the configuration from a first RTT sample rtt
// (LearnBaseRTT): the default base RTT, a datacenter's 12 us, only ever
// falls, so a listener on a long path would read the whole round trip
// as queue and hold the window at its floor. What NSCCDefaults derives
// from the base RTT follows; the window and slow start go on as they were.
func (n *NSCC) learnBaseRTT(rtt monotime.Duration) {
	p := n.cfg.params
	p.BaseRTT, p.baseRTTGuessed = rtt, false
	p.LineRate = n.cfg.LineRate // as learned by now, if ACKs without a sample came first
	n.cfg = NSCCDefaultsWith(p, n.cfg.options)
	n.setBaseRTT(rtt)
}

// pace spaces data packets at PacingGain x the window per round trip
// (base RTT + standing queue): a host's socket is not the bottleneck,
// and a window an ACK releases unpaced leaves as a burst that overflows
// a shallow queue the window itself fits. A late pacer keeps some of its
// lateness (pacingRate), as a real driver wakes late.
func (n *NSCC) pace(now monotime.Time, bytes int) {
	rate, catchUp := n.pacingRate()
	n.pacing.sent(now, monotime.TransmitTime(bytes, rate), catchUp)
}

// pacingRate is pace's rate in bits per second and the lateness it
// keeps: half the target, as more lets the window out faster than the
// link drains; in the competitive mode a tenth of a round trip, as
// lateness never made up lowers the delivery its estimate is read from.
func (n *NSCC) pacingRate() (float64, monotime.Duration) {
	rtt := n.baseRTT + n.queue
	if r := n.competeRate(); r > 0 {
		return r, rtt / 10
	}
	gain := n.cfg.PacingGain
	if n.slowStart {
		gain = 2 // the window doubles per round trip
	}
	// At least a quantum per round trip: the core admits a whole chunk
	// into any window, and a chunk paced at a one-packet window's rate
	// would take many round trips while a competitor holds the window at
	// its floor.
	return gain * max(n.cwnd, n.leastPaced(rtt)) * 8 / rtt.Seconds(), n.cfg.Target / 2
}

// leastPaced is the least the pacer sends per round trip of rtt: a
// quantum, except in the listen before the competitive mode starts,
// which must drain NSCC's own queue: there half a round trip of what the
// path delivered (the mode's bandwidth filter), at least paceChunk's
// floor, as a chunk per round trip can overrun a slow path.
func (n *NSCC) leastPaced(rtt monotime.Duration) float64 {
	if n.comp.listening == 0 || n.comp.active {
		return n.cfg.Quantum
	}
	return max(min(n.cfg.Quantum, n.comp.maxBW*rtt.Seconds()/2), n.cfg.Quantum*chunkPaceFloor)
}

// ackRoom is what a paced window admits beyond itself on a real host:
// what the pacer sends while the hosts hold ACKs (Ack.HostDelay: its
// average and four mean deviations, as RFC 6298's RTO covers a stall)
// and a chunk for whole-chunk admission, so the pacer, not the window,
// sets the rate. Only the hold, not the samples' spread: room for a
// swinging queue overfills a shallow one (TestNSCCShallowBottleneck).
// Zero in simulation, slow start, the competitive mode and its listens.
func (n *NSCC) ackRoom() float64 {
	if !n.cfg.AckRoom || n.cfg.PacingGain <= 0 || n.slowStart || n.comp.active || n.comp.listening > 0 {
		return 0
	}
	return n.cwnd*(n.hostDelay+4*n.hostDelayDev)/float64(n.baseRTT+n.queue) + n.cfg.Quantum
}

// paceChunk spreads a chunk the window cannot hold back: the core admits
// one whole chunk into any window, so below a chunk the window limits
// nothing (incast senders would each keep a chunk in flight). NSCC paces
// at its window per round trip at the target delay, at least
// chunkPaceFloor of a chunk. Ours: UET's window never goes below an MTU.
func (n *NSCC) paceChunk(now monotime.Time, bytes int) {
	w := max(n.cwnd, n.cfg.Quantum*chunkPaceFloor)
	rate := w * 8 / (n.baseRTT + n.cfg.Target).Seconds() // bits per second
	n.pacing.sent(now, monotime.TransmitTime(bytes, rate), 0)
}

// chunkPaceFloor bounds how long paceChunk stretches a chunk: to eight
// round trips. NSCC hears of its path once per chunk, so a window quick
// adapt cut to an MSS would stay down for many round trips (sim's
// TestCCIncast); a higher floor resends more into a shallow switch buffer.
const chunkPaceFloor = 1.0 / 8

// learn runs line-rate learning on an ACK: a period (base RTT + target)
// in which the window stayed full at its maximum and the path clear (no
// mark, the delay under the target, no loss) doubles the line rate. On a
// real host a send that filled the window counts (learnFilled): ACKs read
// in batches find it short however full it is (TestNSCCLearnBatchedAcks).
func (n *NSCC) learn(now monotime.Time, a Ack, marked bool) {
	host := n.cfg.StandingWindow > 0
	full := host || n.cwnd >= n.maxWnd && float64(a.InFlight+a.Bytes)+n.cfg.Quantum >= n.cwnd
	clear := !marked && n.lossDelay < float64(n.cfg.Target)
	if host {
		clear = !marked && n.queue < n.cfg.Target
	}
	if n.learnEnd == 0 || now > n.learnEnd {
		filled := n.learnFull && (!host || n.learnFilled)
		if n.learnEnd != 0 && filled && n.learnOK && n.cfg.LineRate < n.cfg.MaxLineRate {
			n.scaleLineRate(2)
		}
		n.learnEnd = now.Add(n.baseRTT + n.cfg.Target)
		n.learnFull, n.learnOK, n.learnFilled = full, clear, false
		return
	}
	n.learnFull = n.learnFull && full
	n.learnOK = n.learnOK && clear
}

// scaleLineRate multiplies the line rate by f, rescaling the maximum
// window, the window and the gains NSCCDefaults scales with the BDP.
func (n *NSCC) scaleLineRate(f float64) {
	f = min(f, n.cfg.MaxLineRate/n.cfg.LineRate)
	c := &n.cfg
	c.LineRate *= f
	c.A *= f
	c.Alpha *= f
	c.FI *= f
	c.Eta *= f
	c.FastIncreaseScale *= f
	n.setBaseRTT(n.baseRTT)
	n.cwnd = min(n.cwnd*f, n.maxWnd)
}

// hostLossDecrease is a real host's answer to a NACK on a congested path:
// the window times hostLossBeta, at most once per round trip, as TCP cuts
// once per loss episode. uec.cpp's per-NACK cut and quick adapt assume
// ACKs every period; erasure coding acknowledges a decoded sub-message
// at a time, and a period of NACKs alone would cut the window to a packet.
func (n *NSCC) hostLossDecrease(now monotime.Time) {
	if now < n.ss.settleEnd {
		return // slow start's overshoot, answered at its end
	}
	until := now.Add(monotime.Duration(n.cfg.YieldRounds) * n.baseRTT)
	if n.mdDone && now.Sub(n.lastMD) <= n.baseRTT+n.queue {
		n.yieldUntil = until
		return // the same episode
	}
	if now < n.yieldUntil {
		n.giveWayUntil = until // episodes that recur: a loss-based flow (hostYield)
	}
	n.yieldUntil = until
	n.cwnd *= hostLossBeta
	n.clamp()
	n.mdDone, n.lastMD = true, now
	n.stats.Decreases++
}

// shallowBuffer takes losses too many for chance (lossShare) with a
// standing queue under the target, but a queue (a quarter of the host's
// noise or more), for a bottleneck buffer smaller than the target, whose
// overflow the least delay reads low. From then on heavy loss is
// congestion (congested), and unless the user set the target it comes
// down once to three quarters of the mean delay the buffer overflowed
// at, at least the host's noise, if under seven eighths of the target: a
// buffer does not grow, and lowering on every burst would ratchet. Random
// loss, which has no queue, and the competitive mode, whose windows are
// not the law's, are left alone (TestNSCCShallowBufferLeftAlone).
func (n *NSCC) shallowBuffer() {
	if n.shallow || n.comp.active || n.comp.listening > 0 ||
		n.queue >= n.cfg.Target || n.queue < n.cfg.params.HostNoise/4 || !n.losses.heavy(n.cfg.MSS) {
		return
	}
	n.shallow = true
	if t := max(n.meanDelay()*3/4, n.cfg.params.HostNoise, nsccMinQDly); t < n.cfg.Target*7/8 && n.cfg.options.Target <= 0 {
		n.cfg.Target = t
	}
}

// hostLossBeta is what a congested loss leaves of a real host's window:
// CUBIC's 0.7.
const hostLossBeta = 0.7

// hostYield is YieldGain, YieldRounds and YieldTarget on a real host, 0
// in simulation. For 100 base RTTs after a NACK on a congested path,
// longer than CUBIC's loss cycle so each loss renews it, the delay law
// sheds six times as fast the queue above 1.25 x the target, giving way
// before a loss-based flow overflows it again. Below 1.25 x it does not,
// so two NSCC connections, whose shared queue settles just above the
// target and whose losses fall on one of them, stay fair (TestNSCCYield).
//
// A second loss episode within that span is a loss-based flow's sawtooth:
// for YieldRounds base RTTs the law steers to half the target, since a
// CUBIC flow's share is set by how often it overflows the buffer. A lone
// connection or NSCC peers rarely overflow twice within 100 round trips
// (TestNSCCGivesWay).
func hostYield(p Params) (gain float64, rounds int, target float64) {
	if p.HostNoise > 0 {
		return 6, 100, 0.5
	}
	return 0, 0, 0
}

// nsccMaxDelayEta caps DelayEta at its value for 4 KiB datagrams: a push
// of bytes per round trip, which a jumbo datagram is no reason to raise.
// Uncapped at MTU 9000 it is several times CUBIC's additive step, which
// sets the shares in AIMD, and it holds the window beside BBR above the
// floor where the competitive mode starts.
const nsccMaxDelayEta = 8 << 10

// hostFloor is the least window on a real host (PacingGain set): two
// chunks. The core admits whole chunks, and a window of one runs
// stop-and-wait, a chunk's loss stalling everything for an RTO. 0 in
// simulation.
func (n *NSCC) hostFloor() float64 {
	if n.cfg.PacingGain > 0 {
		return 2 * n.cfg.Quantum
	}
	return 0
}

// noDelay stands for "no sample yet" in the standing-queue filter.
const noDelay = monotime.Duration(math.MaxInt64)

// standingDelay feeds the standing-queue filter a delay sample taken at
// now and returns the queue it reads: the least delay over the current
// window and the one before (so over one to two windows of
// max(StandingWindow, base RTT / 2)). It keeps the windows' mean too
// (meanDelay). Without a StandingWindow it is the sample itself.
func (n *NSCC) standingDelay(now monotime.Time, d monotime.Duration) monotime.Duration {
	w := n.cfg.StandingWindow
	if w <= 0 {
		return d
	}
	w = max(w, n.baseRTT/2)
	if now >= n.standEnd {
		// The last window that had samples, however long ago: with one
		// chunk in flight a window may pass without any, and a lone
		// sample is not a standing queue.
		n.standPrev = n.standCur
		n.standCur, n.standEnd = d, now.Add(w)
		n.standSumPrev, n.standNPrev = n.standSum, n.standN
		n.standSum, n.standN = 0, 0
	} else {
		n.standCur = min(n.standCur, d)
	}
	n.standSum += float64(d)
	n.standN++
	n.push.sampled = true
	n.queue = min(n.standPrev, n.standCur)
	return n.queue
}

// meanDelay is the mean delay over the standing-queue filter's windows.
// The delay law steers by it, not by the least: beside a loss-based flow
// the least reads the troughs of its sawtooth, and NSCC would grow into
// the queue the other flow gave up (TestNSCCMeanLaw). The mean carries
// the host's noise, so slow start and the loss judgment keep the least.
func (n *NSCC) meanDelay() monotime.Duration {
	if n.standN+n.standNPrev == 0 {
		return 0 // no sample yet
	}
	return monotime.Duration((n.standSum + n.standSumPrev) / (n.standN + n.standNPrev))
}

// delayLaw steers the window by the mean queue delay q (filtered
// delay-only mode): each ACK adds DelayGain x bytes x (target - q) /
// (base RTT + q), closing DelayGain of the gap per round trip at the
// delivery rate, not at a guessed line rate as uec.cpp's increase does,
// and without its decrease, which overshoots on the filter's lag.
func (n *NSCC) delayLaw(now monotime.Time, bytes int64, q monotime.Duration) {
	n.fastInc, n.fiCount = false, 0
	if n.slowStart || now < n.ss.settleEnd {
		n.ss.deliver(now, bytes, n.baseRTT)
	}
	if n.slowStart {
		if n.queue < n.cfg.Target/2 {
			n.cwnd += float64(bytes)
			return
		}
		n.endSlowStart(now)
	}
	if now < n.ss.settleEnd {
		n.cwnd = max(n.cwnd, min(n.ss.bdp(n.ss.exitRTT), n.ss.exitWindow))
		n.clamp()
		return
	}
	target := n.cfg.Target
	if now < n.giveWayUntil && n.cfg.YieldTarget > 0 {
		target = monotime.Duration(float64(target) * n.cfg.YieldTarget)
	}
	gap := float64(target - q)
	if from := n.cfg.Target + n.cfg.Target/4; q > from && now < n.yieldUntil && n.cfg.YieldGain > 1 {
		gap += (n.cfg.YieldGain - 1) * float64(from-q)
	}
	n.inc += n.cfg.DelayGain * float64(bytes) * n.cwnd * gap / float64(n.baseRTT+q)
}

// slowStartExit is slow start's measure of the path and its settling.
// The signal that ends slow start reports on a window a round trip old,
// and halving it (uec.cpp, TCP) leaves far less than the BDP on a long
// path, so the window is set to the BDP as delivered: the fastest
// delivery over half a round trip times exitRTT (the base RTT plus the
// standing delay, much of it a host's own, up to the target). For two
// round trips the measure runs on and the window follows it up to its
// exit size, as BBR learns from startup's last round, while the delay
// law waits and the overshoot's losses cut nothing more.
type slowStartExit struct {
	start, end monotime.Time // the current quarter round trip
	acked      int64         // bytes acknowledged in it
	span       rateSpan
	maxRate    float64 // bytes per second, the fastest span
	settleEnd  monotime.Time
	exitWindow float64           // the window when slow start ended
	exitRTT    monotime.Duration // the base RTT + the standing delay then, at most the target
}

// deliver feeds the delivery-rate filter an ACK of bytes at now: bytes
// over spans of two quarter round trips, the fastest span's rate kept.
// Half a round trip of ACKs is long enough that a chunk more or less
// moves the rate little (ACKs come a chunk at a time) and short enough to
// follow a window that doubles each round trip.
func (s *slowStartExit) deliver(now monotime.Time, bytes int64, rtt monotime.Duration) {
	if s.start == 0 {
		s.start, s.end = now, now.Add(rtt/4)
		return // an interval's first ACK only starts it
	}
	s.acked += bytes
	if now >= s.end {
		s.maxRate = max(s.maxRate, s.span.add(s.acked, now.Sub(s.start)))
		s.acked, s.start, s.end = 0, now, now.Add(rtt/4)
	}
}

// bdp is the delivery-rate filter's bandwidth-delay product for a
// round trip of rtt, bytes; 0 before a span has passed.
func (s *slowStartExit) bdp(rtt monotime.Duration) float64 { return s.maxRate * rtt.Seconds() }

// endSlowStart hands the window to the delay law at the BDP slow start
// measured at the exit's round trip (at most the window: a slow start
// that a noisy sample ended early keeps what it has; half of it before a
// span has passed) and starts the settling (slowStartExit).
func (n *NSCC) endSlowStart(now monotime.Time) {
	n.slowStart = false
	n.ss.exitWindow = n.cwnd
	n.ss.settleEnd = now.Add(2 * n.baseRTT)
	n.ss.exitRTT = n.baseRTT + min(n.queue, n.cfg.Target)
	if bdp := n.ss.bdp(n.ss.exitRTT); bdp > 0 {
		n.cwnd = min(n.cwnd, bdp)
	} else {
		n.cwnd /= 2
	}
	n.clamp()
	n.stats.Decreases++
}

// rateSpan is a delivery rate over the last two intervals: ACKs come a
// chunk at a time, so one short interval's bytes swing by a chunk.
type rateSpan struct {
	bytes [2]int64
	time  [2]monotime.Duration
	next  int
}

// add records an interval's bytes and length and returns the rate over
// the span, bytes per second (0 before any time has passed).
func (s *rateSpan) add(bytes int64, d monotime.Duration) float64 {
	s.bytes[s.next], s.time[s.next] = bytes, d
	s.next = (s.next + 1) % len(s.bytes)
	var sb int64
	var st monotime.Duration
	for i := range s.bytes {
		sb += s.bytes[i]
		st += s.time[i]
	}
	if st <= 0 {
		return 0
	}
	return float64(sb) / st.Seconds()
}
