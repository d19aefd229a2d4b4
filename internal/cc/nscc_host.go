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
// While the driver's timers woke a millisecond late, headroom made up for
// part of it: through linkem (1 Gbit/s, 20 ms, 256 KiB) a lone connection
// reached 889-941 Mbit/s at 1.1, 819-856 at 1.0 and 1.25. With the loop's
// waits timed finely, 1.1 gave 886-902 and 1.25 844-880, 1.0 928-934;
// with sdr's endpoint timing only the pacers' waits finely (fineWaker)
// and 1.0, 948-949, and two connections used 0.93-0.95 of the link where
// they had used 0.78-0.80 (the old notebook docs/benchmarks.md, in git history, "Pacers on time").
func hostPacing(p Params) float64 {
	if p.HostNoise > 0 {
		return 1.0
	}
	return 0
}

// hostTarget is the least target on a real host for a base RTT of rtt:
// a twentieth of it, so 1 ms (HostNoise) up to a 20 ms path, where the
// shallow-bottleneck, fairness and loopback figures were measured, and
// more beyond. A host's noise does not shrink with the path: on a 2-vCPU
// AMD EPYC VM, through linkem's lossy long haul (1 Gbit/s, 50 ms, 1%
// random loss, no queue the sender could fill), RTT samples ran 0.88 ms
// over the base at the median and 1.9 ms at p90 (11,331 samples), so a
// 1 ms target left the law no room: it held the window where the host's
// own delay read 1 ms, and the least delay touched the target often
// enough that random losses took 0.7 cuts, each regrown over seconds
// at 50 ms. SR-NACK ran at 472-671 Mbit/s (ten runs) against a goal of
// 891 and none's 900; with --target-delay 2.5ms, 903
// (the old notebook docs/benchmarks.md, in git history, "A host's noise and the long haul"). The queue
// a twentieth of the RTT keeps costs the same share of the round trip at
// every RTT. What reads the target grows with it: the competitive mode's
// thresholds, slow start's exit and the pacer's allowance for lateness.
// The dialing end takes the base RTT from its handshake, a listener from
// its first RTT sample (learnBaseRTT).
func hostTarget(rtt monotime.Duration) monotime.Duration { return rtt / 20 }

// learnBaseRTT rederives the configuration from a first RTT sample rtt
// (LearnBaseRTT). The default base RTT, 12 us, is a datacenter's: a
// listener sending over a 20 ms path kept it, since a later sample only
// ever lowers it, read the whole round trip as queue and held the
// window at its two-chunk floor: 32 MiB through linkem (1 Gbit/s, 20 ms,
// 256 KiB) took 9.2 s where the dialer sent it in 0.47 s. Everything
// NSCCDefaults derives from the base RTT (the maximum window, the target,
// quick adapt's threshold, the adjustment period) follows the sample; the
// window and slow start go on as they were.
func (n *NSCC) learnBaseRTT(rtt monotime.Duration) {
	p := n.cfg.params
	p.BaseRTT, p.baseRTTGuessed = rtt, false
	p.LineRate = n.cfg.LineRate // as learned by now, if ACKs without a sample came first
	n.cfg = NSCCDefaults(p)
	n.setBaseRTT(rtt)
}

// pace spaces data packets at PacingGain x the window per round trip
// (base RTT + standing queue). UET's NIC paces at its line rate; a host's
// socket is not the path's bottleneck, and unpaced, a window released by
// an ACK leaves at loopback speed: a burst of a few chunks overflows a
// shallow queue that the window itself fits (through linkem, 1 Gbit/s,
// 20 ms, 256 KiB: 5% of packets dropped with the standing queue a tenth of
// the target). A pacer behind schedule keeps up to half the target of its
// lateness (a real driver wakes late): a round trip's tenth, 2 ms, let the
// window out 537-707 KB in 4 ms where the link drains 500. The
// competitive mode paces at its bandwidth estimate and keeps a round
// trip's tenth: with the small allowance there NSCC got 0.01 of the link
// beside kernel BBR in four runs of four (likely the pacer's lateness,
// never made up, lowering the delivery the estimate is taken from, and
// the estimate then the rate).
func (n *NSCC) pace(now monotime.Time, bytes int) {
	rate, catchUp := n.pacingRate()
	n.nextSend = max(n.nextSend, now.Add(-catchUp)).Add(monotime.TransmitTime(bytes, rate))
}

// pacingRate is pace's rate in bits per second and the lateness it
// keeps.
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
	// into any window, and pacing a 64 KiB chunk at a one-packet window's
	// rate took a second per chunk when a competing flow (kernel TCP's
	// BBR) held the window at its floor.
	return gain * max(n.cwnd, n.leastPaced(rtt)) * 8 / rtt.Seconds(), n.cfg.Target / 2
}

// leastPaced is the least the pacer sends per round trip of rtt: a
// quantum, except in the listen before the competitive mode starts,
// which must drain NSCC's own queue: there half a round trip of what the
// path delivered (the mode's bandwidth filter), at least paceChunk's
// floor. A chunk per round trip (25 Mbit/s at 20 ms) overran a lone
// 20 Mbit/s path, so the listen found NSCC's own queue and the mode
// started.
func (n *NSCC) leastPaced(rtt monotime.Duration) float64 {
	if n.comp.listening == 0 || n.comp.active {
		return n.cfg.Quantum
	}
	return max(min(n.cfg.Quantum, n.comp.maxBW*rtt.Seconds()/2), n.cfg.Quantum*chunkPaceFloor)
}

// ackRoom is what a paced window admits beyond itself on a real host:
// what the pacer sends while the hosts hold ACKs (Ack.HostDelay: the
// receiver's reported delay and this end's wait to read the ACK), and a
// chunk for the core's whole-chunk admission (it admits a chunk only if
// all of it fits), so the pacer, not the window, sets the rate. Pacing
// assumes a round trip of base RTT + standing queue; an ACK a host holds
// keeps its bytes in flight longer, and a window of exactly cwnd then
// stopped a pacer the law thought was sending at cwnd per round trip.
// Only the hosts' own hold, not the samples' spread over the standing
// queue: a queue that swings also spreads them, and room for it let the
// pacer, paced by the lagging least delay, overfill a 256 KiB queue in
// the core's harness with no noise at all (the link 0.87 full past slow
// start, against 1.00; TestNSCCShallowBottleneck).
// Through linkem on a noisy VM, room for the hosts' hold alone did as
// well as or better than room for the spread (the old notebook docs/benchmarks.md, in git history).
// The hold is its average and four times its mean deviation, as TCP's
// RTO covers the RTT's swings (RFC 6298): a host that stalls holds a
// bunch of ACKs for a millisecond or more, and room for the average
// alone let the window stop the pacer through each stall. Through linkem
// (1 Gbit/s, 20 ms, 256 KiB) on a 2-vCPU AMD EPYC VM the window held a
// lone connection 0.85-0.90 s of a 5 s run with the average, 0.56-0.62 s
// with the deviation; the connection ran at 0.89 of the link against
// 0.86 (means of eight alternated runs; the old notebook docs/benchmarks.md, in git history, "Where a
// sender's time goes"). Zero in simulation, in slow start (its window is
// the measure of the path), in the competitive mode (its window
// already has room) and in a listen before it (which must drain the
// queue).
func (n *NSCC) ackRoom() float64 {
	if !n.cfg.AckRoom || n.cfg.PacingGain <= 0 || n.slowStart || n.comp.active || n.comp.listening > 0 {
		return 0
	}
	return n.cwnd*(n.hostDelay+4*n.hostDelayDev)/float64(n.baseRTT+n.queue) + n.cfg.Quantum
}

// paceChunk spreads a chunk the window cannot hold back. The core admits
// one whole chunk into any window (the receiver acknowledges whole
// chunks), so a window below a chunk limits nothing: in incast-buffers,
// 31 senders of 64 KiB chunks kept at least a chunk each in flight
// towards a 256 KiB switch buffer whatever their windows, and NSCC
// resent only 5.7-9.6x fewer bytes than no control at all. Below a
// chunk, NSCC paces at its
// window per round trip at the target delay, the rate the window would
// give if the core could enforce it, but never below chunkPaceFloor of a
// chunk per round trip. Ours: UET acknowledges packets, and its window
// never goes below an MTU.
func (n *NSCC) paceChunk(now monotime.Time, bytes int) {
	w := max(n.cwnd, n.cfg.Quantum*chunkPaceFloor)
	rate := w * 8 / (n.baseRTT + n.cfg.Target).Seconds() // bits per second
	n.nextSend = max(n.nextSend, now).Add(monotime.TransmitTime(bytes, rate))
}

// chunkPaceFloor bounds how long paceChunk stretches a chunk: to eight
// round trips. NSCC hears of its path once per chunk, and a window that
// quick adapt had cut to about an MSS paced a 64 KiB chunk over 233 us,
// 14 round trips, before its ACK could raise the window again: a 7-to-1
// incast (sim's TestCCIncast) ended 1.24x later than without control,
// against 1.18x with the floor. A floor of a quarter chunk made it 1.00x
// but left incast-buffers' resends only 10.6x below none's (12.1x with
// an eighth).
const chunkPaceFloor = 1.0 / 8

// learn runs line-rate learning on an ACK. A period ends every base RTT
// + target; one in which every ACK found the window full (in flight
// within one MSS of it, at the maximum) and the path clear (no mark, the
// fast delay average below the target, no loss) doubles the line rate.
// On a real host (StandingWindow set) the window counts as full in a
// period in which a send filled it (learnFilled, from OnSend): a host's
// driver reads ACKs in batches and sends after the batch, so the third ACK
// of a batch found the window two chunks short however full the sender
// kept it, and on loopback the window stayed at 0.5 MB, 0.70-0.82 of
// none's goodput (the old notebook docs/benchmarks.md, in git history).
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
// the window times HostLossBeta, at most once per round trip (as TCP
// cuts once per loss episode). uec.cpp's answers, the lost bytes off the
// window per NACK and a quick adapt to the bytes acked in the period,
// assume ACKs flow every period; erasure coding acknowledges a decoded
// sub-message at a time, so a period of NACKs without an ACK read as a
// path that delivers nothing and cut the window to one packet (16 paths,
// 1% loss, one dead). A NACK proves the receiver is receiving.
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

// shallowBuffer reads losses too many for chance that come with a
// standing queue under the target, but a queue (at least a quarter of
// the host's noise), as a bottleneck's buffer that holds less than the
// target (lossShare). From then on heavy loss is congestion in itself
// (congested), and the target comes down to three quarters of the mean
// delay the buffer overflowed at, at least the host's noise, if that is
// under seven eighths of the target. The loss reading alone was not
// enough: the standing queue, the least delay, read
// 0.55-1.07 ms there while the buffer overflowed (linkem's mean wait
// 1.25 ms, its most 2.1), so with the loss judged by it alone, 0.98-10.4%
// of the data was still resent in three runs. Random loss comes with no
// queue: on the lossy long haul (1% random loss, 50 ms) a burst of NACKs
// read as heavy once in a run, the standing queue at 0.1 ms, and a 1 ms
// target there costs a third of the throughput (hostTarget). Where the
// target is near the host's noise already (paths up to 22 ms) it stays,
// and only the loss reading changes: through a 64 KiB queue at 1 Gbit/s,
// 20 ms (0.52 ms, under the 1 ms target) 5.29% of the data was resent
// without it, 0.69% with it (linkem; in the core's model 152% and 1.0%
// of what the link carried). Beside kernel CUBIC (256 KiB, kernel queue)
// the competitive mode started in 2 of 7 runs with it, 0 of 7 without,
// TCP keeping 0.29-0.49 (the old notebook docs/benchmarks.md, in git history): not shown to be its doing.
//
// The target comes down once per connection: after it, the law holds
// the mean near the new target, and the next burst of heavy loss, read
// the same way, took it down by another quarter each time (a review
// found the ratchet); from then on heavy loss is congestion, which the
// loss decrease answers, so a second lowering adds nothing. It does not
// come back up: a path's buffer does not grow, and finding it again
// costs an overflow. The competitive mode and its listens (whose windows
// are not the law's) are left alone. A target the user set stays, but
// heavy loss becomes congestion all the same: left out, a set 2.5 ms
// target let the window flood a 128 KiB buffer at 1 Gbit/s, 50 ms
// (77.9% of the packets after slow start lost, in a review's model).
//
// Tried first: heavy loss as congestion on every path. Alone (3% as
// the bound) the law settled just under it, with 1.3% of the bytes lost
// (TestNSCCBufferUnderTarget); with the lowering too, at 20 ms
// (kernel-queue, MTU 9000, three rounds) TCP's share beside kernel CUBIC
// rose to 0.56-0.67 and beside BBR TCP kept 0.80 in one run.
func (n *NSCC) shallowBuffer() {
	if n.shallow || n.comp.active || n.comp.listening > 0 ||
		n.queue >= n.cfg.Target || n.queue < n.cfg.params.HostNoise/4 || !n.losses.heavy(n.cfg.MSS) {
		return
	}
	n.shallow = true
	if t := max(n.meanDelay()*3/4, n.cfg.params.HostNoise, nsccMinQDly); t < n.cfg.Target*7/8 && n.cfg.params.Target <= 0 {
		n.cfg.Target = t
	}
}

// hostLossBeta is what a congested loss leaves of a real host's window:
// CUBIC's 0.7.
const hostLossBeta = 0.7

// hostYield is YieldGain and YieldRounds on a real host: for 100 base
// RTTs after a NACK on a congested path, the delay law sheds six times as
// fast the part of a queue above 1.25 x the target. Beside kernel TCP's
// CUBIC (TUN mode, MTU 9000, 1 Gbit/s, 20 ms, a 256 KiB queue: a path
// where the emulator has CPU to spare) NSCC held its mean delay at the
// 1 ms target, closing half the gap per round trip; when CUBIC's window
// grew, the queue rose from 1 to 2 ms in four round trips and overflowed
// before NSCC gave way. Both cut their windows to 0.7 about every
// 0.5-1.0 s; NSCC regrew its cut within 0.25-0.4 s, CUBIC by 0.53 of a
// segment per round trip, and TCP kept 0.15-0.19 of the link. Yielding
// alone lifted TCP to 0.26-0.29; with DelayEta capped (nsccMaxDelayEta)
// too, to 0.26-0.51 over sixteen runs; the cap alone, 0.24-0.26
// (the old notebook docs/benchmarks.md, in git history, "Giving way to kernel TCP with jumbo frames").
// The band up to 1.25 x the target keeps two NSCC connections fair: their
// shared queue settles just above the target, and six times the gain
// there for the one that happened to see a loss (losses in a shared queue
// fall on one flow or the other) made it give way to the other: 427
// against 697 Mbit/s, Jain's index 0.945-0.975 where it is 0.997-0.999.
// Only a NACK on a congested path arms it, so a lone connection (whose
// queue, held at the target, does not overflow past slow start) and
// random loss (no standing queue) keep the law as it was. CUBIC's losses
// came every 25-50 round trips at 20 ms, so each renews the yield well
// before it ends. 0 in simulation.
//
// Giving way (target, YieldTarget): a loss episode that comes while the
// yield an earlier one armed still runs is a loss-based flow's sawtooth,
// and for YieldRounds base RTTs the law steers to half the target. A
// CUBIC flow's share is set by how often it overflows the buffer (it
// regrows its 0.3 cut at its own pace, whatever room there is); NSCC
// holding the queue at the 1 ms target left it half of a 2 ms buffer,
// and beside kernel CUBIC (kernel queue, MTU 9000, 1 Gbit/s, 20 ms,
// 256 KiB) TCP kept 0.23-0.42 of the link over 27 runs, under a quarter
// in 2 and at most 0.26 in 6. Steering to half the target after every
// congested loss episode lifted it to 0.31-0.66 (nine runs), the
// competitive mode starting in 3 (NSCC at its floor beside CUBIC's
// plateau), and a lone connection's own overflow gave way too. After a
// recurring episode only, TCP kept 0.32-0.61 over 17 runs (the mode
// started in 6, TCP keeping 0.48-0.61 there); beside BBR TCP's
// share, a lone connection's rate and the lossy long haul did not move,
// and two connections' Jain index was 0.987-0.999 against 0.995-0.999
// (the old notebook docs/benchmarks.md, in git history, "Giving way to CUBIC's sawtooth"). A lone
// connection or two NSCC connections hold the queue at the target and
// rarely overflow it twice within 100 round trips.
func hostYield(p Params) (gain float64, rounds int, target float64) {
	if p.HostNoise > 0 {
		return 6, 100, 0.5
	}
	return 0, 0, 0
}

// nsccMaxDelayEta caps DelayEta at its value for the default 4 KiB
// datagrams, where two connections' sharing was measured: it is a
// push of bytes per round trip, and a jumbo datagram is no reason to
// push harder. At 2 x 8 KiB (MTU 9000) it was 3.4 times the 4.7 KB a
// kernel CUBIC flow adds per round trip there (RFC 9438's Reno-friendly
// 0.53 x its 8,948-byte MSS), and in AIMD the shares follow the
// additive steps: beside CUBIC through TUN at MTU 9000 (1 Gbit/s,
// 20 ms, 256 KiB) TCP kept 0.15-0.19 of the link. Beside BBR it held
// the window where the law's decrease against BBR's 2 ms queue balances
// it, 750 KB, above the two-chunk floor at which the competitive mode
// starts, so the mode never started and BBR kept 0.91-0.92
// (the old notebook docs/benchmarks.md, in git history, "Giving way to kernel TCP with jumbo frames").
const nsccMaxDelayEta = 8 << 10

// hostFloor is the least window on a real host (PacingGain set): two
// chunks. The core admits whole chunks, and a window of one runs
// stop-and-wait, a chunk's loss stalling everything for an RTO (over an
// in-memory network at 2 Gbit/s, 1.5 BDP was under one MSS, and 16 MiB
// over SR took 1.0 s; 0.6 s with two chunks, one run each). 0 in
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
// The delay law steers by it, not by the least: beside kernel TCP's CUBIC
// in a 256 KiB, 1 Gbit/s queue the least delay read 0.65-0.8 ms, the
// troughs of CUBIC's sawtooth, under the 1 ms target, so NSCC kept
// growing into the queue CUBIC's halvings gave up and left TCP 0.03-0.20
// of the link; steered by the mean it left TCP 0.27-0.59. The mean also
// carries the host's noise (0.3-0.36 ms over the least), which costs a
// lone connection a slower climb after slow start; slow start and the
// loss judgment keep the least, which noise does not raise
// (the old notebook docs/benchmarks.md, in git history, "NSCC beside CUBIC").
func (n *NSCC) meanDelay() monotime.Duration {
	if n.standN+n.standNPrev == 0 {
		return 0 // no sample yet
	}
	return monotime.Duration((n.standSum + n.standSumPrev) / (n.standN + n.standNPrev))
}

// delayLaw steers the window by a queue delay q alone (filtered
// delay-only mode, q the mean delay): each ACK moves it by DelayGain x
// bytes x (target - q) / (base RTT + q), so over a round trip it moves by
// DelayGain x (target - q) x the delivery rate: toward the window that
// holds the target's queue, closing that share of the gap per round trip,
// whatever the line rate (a guess on a real host). uec.cpp's
// multiplicative decrease, at most once per base RTT, cut 27-60% per
// episode when the filter's lag held a queue above the target for two
// windows, and its proportional increase, scaled by the line rate, grew
// the window ten times too fast on a 1 Gbit/s path guessed at 10. Slow
// start reads the standing queue (the least delay), which noise does not
// raise: read by the mean, it ended at 134 Mbit/s on a 1 Gbit/s path.
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

// slowStartExit is slow start's measure of the path and its settling
// after it. The queue or the loss that ends slow start reports on a
// window a round trip old, so uec.cpp and TCP halve the window; through
// a 1 Gbit/s, 20 ms path with a 256 KiB queue that left 1.5 MB of a
// 2.5 MB BDP (the delivery of the last whole round trip, the other floor
// tried, 0.8-1.0 MB), the loss decrease then cut the slow start's own
// overshoot once more (to 1.1 MB), and the delay law's climb back took
// one to two seconds of a four-second transfer (the old notebook docs/benchmarks.md, in git history). So
// the window is set to the BDP as delivered: the fastest delivery over
// half a round trip, times the base RTT plus the standing delay at the
// exit, at most the target (exitRTT). The delay law steers to the target
// anyway, and on a host much of that delay is the host's own: over
// loopback (a 129-228 us base RTT, samples of 1.0-1.4 ms with 1.5 MB in
// flight) the base RTT alone cut a 3.5 MB window to 199-257 KB, which
// the delay law took about 8 ms to regrow; alternated, 64 MiB transfers
// ran at 0.90-0.93 of no control, 0.94-0.96 with the delay counted
// (the old notebook docs/benchmarks.md, in git history, "A chunk's slack"). The measure runs on for two
// round trips after the exit, in case the overshoot's packets are
// acknowledged faster (as BBR's bandwidth filter learns from its
// startup's last round), and the window follows it up to its size at the
// exit; meanwhile the delay law waits and the overshoot's losses cut
// nothing more. Through that path the measure read 0.66-0.9 of the BDP
// and did not rise after the exit: the doubling window, paced at twice
// its rate, overflows the 256 KiB queue before it reaches the BDP, and a
// chunk that lost a packet is acknowledged only after its resend.
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
