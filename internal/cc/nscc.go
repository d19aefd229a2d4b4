package cc

import (
	"math"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// NSCC is Ultra Ethernet's network-signalled congestion control, the
// window law of uet-htsim's uec.cpp (updateCwndOnAck_NSCC and the
// functions it calls). In simulation it is window-only while its window
// holds at least a chunk: NextSend never holds a packet back, as in UET,
// where the NIC's line rate paces. Below a chunk it paces (the core
// admits whole chunks; see the deviation on chunks). On a real host
// (Params.HostNoise set) it paces always; see the last deviation.
//
// Deviations from uec.cpp, each for a reason given where it is made:
//
//   - Random loss is not congestion: SDR's long-haul links lose packets
//     without a queue, where uec.cpp's cut and quick adapt on every NACK
//     cost window for nothing. A loss acts only on a congested path
//     (congested; TestNSCCLoss, TestNSCCRandomLoss), else it is counted
//     in IgnoredLosses; LossNeedsCongestion false restores uec.cpp's way.
//   - A NACK is not fed to the delay average as base RTT + network RTT:
//     uec.cpp's NACKs are trims at a full queue; ours are losses the
//     receiver detected, which say nothing of delay.
//   - A quick-adapt trigger is judged once, against the period it came
//     in; uec.cpp keeps it armed until a quick adapt fires, so a NACK long
//     past could collapse the window of a flow that later idles.
//   - Quick adapt never raises the window (uec.cpp prints a warning when
//     its achieved bytes exceed the window and raises it anyway).
//   - A timeout arms quick adapt only; uec.cpp also takes a packet off
//     the window when it queues the retransmission.
//   - An ACK without a clean RTT sample counts its bytes (quick adapt,
//     fulfill) but skips the delay quadrants; uec.cpp substitutes the
//     average delay.
//   - The line rate may be learned (LearnLineRate): UET knows its NIC's
//     rate, but a host sending over UDP does not know its path's, and a
//     guess too low caps the window below the BDP for ever. A clear
//     period with the window full at its maximum doubles it (learn).
//   - The target is capped (MaxTarget, default 1 ms, where L4S aims):
//     uec.cpp's one base RTT suits a 12 us datacenter, but on a long path
//     it is a queue deeper than a shallow buffer, which overflows before
//     the law sees its target. On a real host it is at least hostTarget.
//   - The proportional gain is bounded (MaxGain): a round trip of ACKs
//     closes at most MaxGain x the gap to the target, where uec.cpp's
//     gain grows with the square of the RTT and overshoots on long paths.
//     In a datacenter the bound is slack; fastScale bounds fast increase.
//   - A window below a chunk (Quantum, the core's admission unit) is
//     paced: the core admits one whole chunk into any window, so such a
//     window limits nothing (paceChunk). UET acknowledges packets and has
//     no such case.
//   - The maximum window is uec.cpp's 1.5 BDP plus a chunk less an MSS
//     (the start and quick adapt's gate keep 1.5 BDP): a chunk's bytes
//     stay in flight until its last packet lands, so whole chunks in
//     1.5 BDP can leave the link idle between them (sim's TestCCLoneFlow).
//   - Delay alone may signal congestion until the first ECN echo
//     (DelayWithoutECN): uec.cpp ignores an unmarked delay because its
//     switches mark, but loopback, the kernel and most WAN paths never
//     do, and NSCC would fill a drop-tail queue until it overflows.
//   - On a real host (Params.HostNoise) RTT samples carry scheduling
//     noise, the line rate is often a guess and the host's socket is not
//     the bottleneck. There the target is at least hostTarget and the
//     queue is read through a filter noise does not raise (StandingWindow).
//   - A real host also, until the first ECN echo, steers by the filtered
//     mean delay (delayLaw); paces (pace); starts in slow start when the
//     line rate is a guess (SlowStart); and lets the window admit what
//     late ACKs hold in flight (ackRoom). None of this is on in simulation.

func init() {
	register("nscc", func(p Params) Controller { return NewNSCC(NSCCDefaults(p)) })
}

// NSCCOptions are NSCC's own settings, which a driver gives when it
// builds the algorithm (NSCCWith); zero fields keep the defaults.
type NSCCOptions struct {
	// Target replaces the default target queueing delay and every floor
	// on it. A lower target leaves more of a shallow shared queue to
	// loss-based TCP beside it; a higher one keeps a lone sender's link
	// fuller, where its own chunk bursts read as queue.
	Target monotime.Duration
	// MaxTarget caps the default target (1 ms); on a real host the
	// floors HostNoise and hostTarget come after the cap.
	MaxTarget monotime.Duration
}

// NSCCWith is NSCC with options o, for Config's CC.
func NSCCWith(o NSCCOptions) Algorithm {
	return Algorithm{name: "nscc", make: func(p Params) Controller { return NewNSCC(NSCCDefaultsWith(p, o)) }}
}

// NSCC's constants (uec.cpp's initNsccParams) and the reference network
// its gains are scaled to.
const (
	nsccRefRate = 100e9                     // bit/s
	nsccRefRTT  = 12 * monotime.Microsecond // round trip
	nsccRefBDP  = nsccRefRate / 8 * 12e-6   // bytes
	nsccMinQDly = 1 * monotime.Microsecond  // floor of the default target
	nsccFastDly = 1 * monotime.Microsecond  // uec.cpp's fast increase delay
	nsccMaxBDPs = 1.5                       // maximum window in BDPs
	nsccAdjMSS  = 8                         // fulfill every 8 MSS acked
	nsccQAGate  = 3                         // quick adapt below maxwnd>>3
	nsccLossEW  = 1.0 / 8                   // weight of the loss-judging delay EWMA
	nsccHoldEW  = 1.0 / 8                   // weight of a sample in the hosts' hold average and its deviation (ackRoom)
	nsccMaxRate = 1e12                      // bit/s, the most a learned line rate reaches
	// nsccMaxTarget caps the default target: a shallow WAN queue
	// (256 KiB at 1 Gbit/s is 2.1 ms) holds it with room for a host's
	// scheduling noise, and a datacenter's (12 us) is far below it.
	nsccMaxTarget = 1 * monotime.Millisecond
	nsccMaxGain   = 1.0 // proportional gain bound, in gaps per round trip
	// nsccDelayGain is the filtered delay-only law's gain: under 1, so a
	// feedback one to two round trips late (the filter's window) damps
	// instead of oscillating.
	nsccDelayGain = 0.5
)

// NSCCConfig is every parameter of an NSCC sender; NSCCDefaults derives
// them from Params as uec.cpp's initNsccParams does.
type NSCCConfig struct {
	LineRate float64           // bit/s; with the base RTT sizes the maximum window (Params.LineRate)
	BaseRTT  monotime.Duration // the unloaded RTT it starts with; lower samples replace it (Params.BaseRTT)
	MSS      int               // bytes; the least window (Params.MSS; uec.cpp: MTU)

	// Target is the queueing delay the law steers to: uec.cpp's one base
	// RTT (SDR does not trim), at least 1 us so the fast increase region
	// (delay < 1 us) does not swallow the proportional one, at most
	// MaxTarget; on a real host at least Params.HostNoise and hostTarget.
	// NSCCOptions.Target, when set, replaces all of these.
	Target monotime.Duration
	// MaxTarget caps the default target (see the file comment): 1 ms, or
	// NSCCOptions.MaxTarget; on a real host the floors HostNoise and hostTarget
	// come after it and may exceed it. Ours.
	MaxTarget monotime.Duration
	A         float64 // scaling a = BDP / (100 Gbit/s x 12 us), dimensionless
	B         float64 // scaling b = Target / 12 us, dimensionless
	// Alpha is the proportional increase gain, 4 x MSS x a x b / Target,
	// in bytes per picosecond: an ACK adds Alpha x acked x (Target - delay)
	// to the increase. Ours: at most MaxGain x LineRate / 8 bytes per
	// picosecond, so a round trip of ACKs closes at most MaxGain x the gap.
	Alpha float64
	// MaxGain bounds Alpha; 1 by default, 0 for uec.cpp's unbounded gain.
	MaxGain float64
	FI      float64 // fair increase, 5 x MSS x a bytes per RTT of ACKs at or above the target
	Eta     float64 // bytes added once per AdjustPeriod, 0.15 x MSS x a
	Gamma   float64 // multiplicative decrease gain, 0.8; a cut keeps at least half

	DelayWeight float64 // weight of a sample in the average delay, 0.0125 per ACK

	// QAThreshold: a delay above it arms quick adapt: 4 x the uncapped
	// target (4 base RTTs), so a host stall of a few ms on a long path is
	// not taken for a collapse.
	QAThreshold monotime.Duration
	QAGate      uint // quick adapt acts if the bytes acked in a period < maxwnd >> QAGate: 3

	MaxWindowBDPs     float64           // maximum window in BDPs: 1.5 (and a chunk less an MSS, ours); the initial window
	AdjustBytes       int64             // fulfill after this many bytes acked: 8 x MSS
	AdjustPeriod      monotime.Duration // or after this long, adding Eta: BaseRTT
	FastIncreaseDelay monotime.Duration // delays below it for a window of ACKs grow fast: 1 us
	FastIncreaseScale float64           // window growth per byte acked then: 0.25 x a

	// LearnLineRate doubles LineRate while the window is the only limit
	// and the path shows no queue (see the file comment). Ours; false
	// unless Params.LearnLineRate.
	LearnLineRate bool
	// MaxLineRate bounds what learning reaches: 1 Tbit/s.
	MaxLineRate float64
	// Quantum is the core's admission unit, a chunk (Params.Quantum, at
	// least an MSS): a window-limited sender sits up to one below its
	// window, so learning counts the window full within it, and pacing
	// allows at least one per round trip.
	Quantum float64

	// LossNeedsCongestion makes losses act only on a congested path (see
	// the file comment). Ours; true by default.
	LossNeedsCongestion bool
	LossDelayWeight     float64 // weight of a sample in the loss-judging delay: 1/8
	// A loss-judging delay above LossDelayThreshold is congestion: one
	// base RTT (the uncapped target). Not the capped target: a host's
	// scheduling noise reaches a millisecond, and random loss read as
	// congestion on a long path collapses the window.
	LossDelayThreshold monotime.Duration

	// DelayWithoutECN makes an unmarked delay at or above the target a
	// congestion signal until the connection's first ECN echo (see the
	// file comment). Ours; on with HostNoise, where the standing filter
	// keeps scheduling noise from reading as a queue and cutting the
	// window; off in simulation.
	DelayWithoutECN bool
	// StandingWindow, when set, makes the delay-only mode and the loss
	// judgment read the queue as the least delay over the last one to two
	// windows of max(StandingWindow, base RTT / 2): noise delays some
	// samples, a standing queue all (Copa and BBR filter alike). Ours;
	// 4 x Params.HostNoise, zero (raw samples) in simulation.
	StandingWindow monotime.Duration
	// DelayGain is the share of the gap between the standing queue and
	// the target that the filtered delay-only law closes per round trip
	// (delayLaw): 0.5. Ours.
	DelayGain float64
	// YieldGain multiplies DelayGain for the part of the mean delay above
	// 1.25 x the target, for YieldRounds base RTTs after a NACK (not a
	// timeout) on a congested path (hostLossDecrease), so NSCC gives way
	// before a loss-based flow overflows the queue again (hostYield).
	// Ours; 6 and 100 on a real host, 0 in simulation.
	YieldGain   float64
	YieldRounds int
	// YieldTarget is the share of the target the delay law steers to
	// while NSCC gives way to a loss-based flow: for YieldRounds base
	// RTTs after a congested loss episode that came while the yield an
	// earlier one armed still ran (hostLossDecrease). Ours; 0.5 on a
	// real host, 0 (off) in simulation.
	YieldTarget float64
	// DelayEta is what fulfill adds per AdjustPeriod under the filtered
	// delay-only law instead of Eta: 2 x MSS, at most nsccMaxDelayEta. A
	// constant, not scaled by a line rate that may be a guess, so flows
	// sharing a queue converge to equal windows (at equilibrium DelayGain x
	// w x (queue - target) / RTT = DelayEta for each). Ours.
	DelayEta float64
	// PacingGain, when set, paces data at this multiple of the window per
	// round trip (pace). Ours; 1.0 on a real host (HostNoise set), 0 in
	// simulation, where the NIC's line rate paces as in UET.
	PacingGain float64
	// SlowStart, with PacingGain, starts the window at InitialWindow and
	// grows it by the bytes acked until the standing queue reaches half the
	// target or a loss shows congestion, then sets it to the BDP the path
	// delivered (slowStartExit). Ours; only where the line rate is a guess,
	// as a 1.5-BDP burst at a guess floods a slower path.
	SlowStart     bool
	InitialWindow float64 // bytes: 16 x MSS
	// Compete, in the filtered delay-only mode, meets a competitor that
	// holds the queue whatever NSCC does by competing as BBR does
	// (nscc_compete.go). Ours; on a real host (HostNoise set).
	Compete bool
	// AckRoom lets a paced window admit the bytes the host's ACK
	// lateness holds in flight (ackRoom). Ours; on a real host.
	AckRoom bool
	// LearnBaseRTT, on a real host whose base RTT nobody measured (a
	// listener: only the dialer times the handshake), rederives this
	// configuration from the first RTT sample, above the default or not
	// (learnBaseRTT). Ours.
	LearnBaseRTT bool
	// params and options are what NSCCDefaultsWith derived this from,
	// for LearnBaseRTT.
	params  Params
	options NSCCOptions
}

// NSCCDefaults returns uec.cpp's parameters for p.
func NSCCDefaults(p Params) NSCCConfig { return NSCCDefaultsWith(p, NSCCOptions{}) }

// NSCCDefaultsWith returns uec.cpp's parameters for p, with options o.
func NSCCDefaultsWith(p Params, o NSCCOptions) NSCCConfig {
	p = p.WithDefaults()
	maxTarget := o.MaxTarget
	if maxTarget <= 0 {
		maxTarget = nsccMaxTarget
	}
	// A set target replaces the default and the host-noise floor, but
	// not the least queueing delay the law can steer to.
	target := max(o.Target, nsccMinQDly)
	if o.Target <= 0 {
		target = min(max(p.BaseRTT, nsccMinQDly), max(maxTarget, nsccMinQDly))
		if p.HostNoise > 0 {
			// A target within a real host's noise would read the noise
			// as a queue (hostTarget).
			target = max(target, p.HostNoise, hostTarget(p.BaseRTT))
		}
	}
	mss := float64(p.MSS)
	a := float64(p.BDP()) / nsccRefBDP
	b := float64(target) / float64(nsccRefRTT)
	alpha := 4 * mss * a * b / float64(target)
	alpha = min(alpha, nsccMaxGain*p.LineRate/8/1e12)
	yieldGain, yieldRounds, yieldTarget := hostYield(p)
	return NSCCConfig{
		LineRate:            p.LineRate,
		BaseRTT:             p.BaseRTT,
		MSS:                 p.MSS,
		Target:              target,
		MaxTarget:           maxTarget,
		A:                   a,
		B:                   b,
		Alpha:               alpha,
		MaxGain:             nsccMaxGain,
		FI:                  5 * mss * a,
		Eta:                 0.15 * mss * a,
		Gamma:               0.8,
		DelayWeight:         0.0125,
		QAThreshold:         4 * max(p.BaseRTT, nsccMinQDly),
		QAGate:              nsccQAGate,
		MaxWindowBDPs:       nsccMaxBDPs,
		AdjustBytes:         nsccAdjMSS * int64(p.MSS),
		AdjustPeriod:        p.BaseRTT,
		FastIncreaseDelay:   nsccFastDly,
		FastIncreaseScale:   0.25 * a,
		LearnLineRate:       p.LearnLineRate,
		MaxLineRate:         nsccMaxRate,
		Quantum:             float64(max(p.MSS, p.Quantum)),
		LossNeedsCongestion: true,
		LossDelayWeight:     nsccLossEW,
		LossDelayThreshold:  max(p.BaseRTT, nsccMinQDly),
		DelayWithoutECN:     p.HostNoise > 0,
		StandingWindow:      4 * p.HostNoise,
		DelayGain:           nsccDelayGain,
		DelayEta:            min(2*mss, nsccMaxDelayEta),
		YieldGain:           yieldGain,
		YieldRounds:         yieldRounds,
		YieldTarget:         yieldTarget,
		PacingGain:          hostPacing(p),
		SlowStart:           p.HostNoise > 0 && p.LearnLineRate,
		InitialWindow:       16 * mss,
		Compete:             p.HostNoise > 0,
		AckRoom:             p.HostNoise > 0,
		LearnBaseRTT:        p.HostNoise > 0 && p.baseRTTGuessed,
		params:              p,
		options:             o,
	}
}

// NSCC is one connection's NSCC window; see NSCCConfig.
type NSCC struct {
	cfg NSCCConfig

	cwnd, minWnd, maxWnd float64 // bytes
	baseRTT              monotime.Duration

	avgDelay  float64 // picoseconds, uec.cpp's average (drives the decrease)
	lossDelay float64 // picoseconds, fast average of raw delays (judges losses)
	// The standing queue (StandingWindow): the least delay of the current
	// window and of the one before, the current one's end, and their
	// minimum as of the last sample.
	standCur, standPrev monotime.Duration
	standEnd            monotime.Time
	queue               monotime.Duration
	// ... and the mean delay over the same windows: sums and counts of
	// the current window's samples and the one before's (delayLaw).
	standSum, standSumPrev  float64 // picoseconds
	standN, standNPrev      float64
	hostDelay, hostDelayDev float64       // picoseconds: a moving average of Ack.HostDelay and of its deviation (ackRoom)
	pacing                  pacer         // PacingGain, or a window under a chunk: when the next packet may leave
	slowStart               bool          // SlowStart: still growing from the initial window
	ss                      slowStartExit // SlowStart: its measure of the path, and the settling after it
	sawECN                  bool
	lastECN                 monotime.Time
	lastMarked              bool // the latest ACK echoed a mark, data still in flight (congested)

	inc        float64 // pending increase, bytes x bytes (fulfill divides by cwnd)
	received   int64   // bytes acked since the last fulfill
	lastAdjust monotime.Time
	fiCount    int64 // bytes acked in a row at a delay below FastIncreaseDelay
	fastInc    bool
	mdDone     bool
	lastMD     monotime.Time

	qaStarted     bool
	qaEnd         monotime.Time // end of the current quick adapt period
	achieved      int64         // bytes acked in the current period
	triggerQA     bool
	bytesToIgnore int64 // marked ACKs are ignored until this many bytes after a quick adapt
	bytesIgnored  int64
	inFlight      int64

	// Line-rate learning (LearnLineRate): whether it runs, the end of
	// its period, and whether the period kept the window full
	// and the path clear.
	learning  bool
	learnEnd  monotime.Time
	learnFull bool
	// learnFilled: a send in the period filled the window at its
	// maximum (on a real host; see learn).
	learnFilled bool
	learnOK     bool

	comp compete // the competitive mode (Compete)
	// yieldUntil is when the faster decrease after a congested NACK
	// ends (YieldGain).
	yieldUntil monotime.Time
	// giveWayUntil is when the lower target after a second congested
	// loss episode within the yield ends (YieldTarget).
	giveWayUntil monotime.Time
	push         pushStop // DelayEta's stop (delayPush)
	losses       lossShare
	shallow      bool // the path's buffer holds less than the target (shallowBuffer)

	ignoredLosses uint64
	stats         Stats
}

// NewNSCC returns an NSCC sender at uec.cpp's maximum window, where UET
// starts (on a real host at least hostFloor).
func NewNSCC(cfg NSCCConfig) *NSCC {
	n := &NSCC{cfg: cfg, minWnd: float64(max(cfg.MSS, 1)), learning: cfg.LearnLineRate,
		standCur: noDelay, standPrev: noDelay}
	n.setBaseRTT(cfg.BaseRTT)
	n.cwnd = max(n.bdpWindow(), n.hostFloor())
	n.clamp()
	if cfg.SlowStart {
		n.slowStart = true
		n.cwnd = min(max(cfg.InitialWindow, n.minWnd), n.maxWnd)
	}
	return n
}

// LineRate is the line rate n sizes its maximum window with: the
// configured one, or what learning has raised it to.
func (n *NSCC) LineRate() float64 { return n.cfg.LineRate }

// Config returns the parameters n runs with.
func (n *NSCC) Config() NSCCConfig { return n.cfg }

// OnSend counts the bytes in flight, for quick adapt's ignore span.
func (n *NSCC) OnSend(now monotime.Time, bytes int) {
	n.inFlight += int64(bytes)
	if n.learning && n.cwnd >= n.maxWnd && float64(n.inFlight)+n.cfg.Quantum >= n.cwnd {
		n.learnFilled = true
	}
	switch {
	case n.cfg.PacingGain > 0:
		n.pace(now, bytes)
	case n.cwnd < n.cfg.Quantum:
		n.paceChunk(now, bytes)
	}
}

// OnAck runs the delay x ECN quadrants, quick adapt and fulfill.
func (n *NSCC) OnAck(now monotime.Time, a Ack) {
	n.inFlight = a.InFlight
	marked := a.ECN
	n.lastMarked = marked && a.InFlight > 0 // see congested
	if marked {
		n.stats.Congestions++
		n.sawECN, n.lastECN = true, now
	}
	n.achieved += a.Bytes
	n.received += a.Bytes
	n.bytesIgnored += a.Bytes

	var delay, queue monotime.Duration
	sample := a.RTT > 0
	if sample {
		if n.cfg.LearnBaseRTT {
			n.learnBaseRTT(a.RTT)
		} else if a.RTT < n.baseRTT {
			n.setBaseRTT(a.RTT)
		}
		delay = a.RTT - n.baseRTT
		n.updateDelay(delay, marked)
		n.hostDelayDev += nsccHoldEW * (math.Abs(float64(a.HostDelay)-n.hostDelay) - n.hostDelayDev)
		n.hostDelay += nsccHoldEW * (float64(a.HostDelay) - n.hostDelay)
		queue = n.standingDelay(now, delay)
	}
	if n.cfg.StandingWindow > 0 {
		n.losses.count(now, n.baseRTT+n.queue, a.Bytes, 0)
	}
	if n.learning {
		n.learn(now, a, marked)
	}
	if n.competeAck(now, a.Bytes, queue, sample) {
		return
	}
	if n.quickAdapt(now, false, marked, delay) {
		return
	}
	if sample {
		switch target := n.cfg.Target; {
		case !marked && n.delayOnly() && n.cfg.StandingWindow > 0:
			n.delayLaw(now, a.Bytes, n.meanDelay())
		case !marked && delay >= target && n.delayOnly():
			n.multiplicativeDecrease(now, n.lossDelay)
		case !marked && delay >= target:
			n.inc += n.cfg.FI * float64(a.Bytes)
		case !marked:
			n.proportionalIncrease(a.Bytes, delay)
		case delay >= target:
			n.multiplicativeDecrease(now, n.avgDelay)
		default:
			// Marked below the target: another hop's queue; UET
			// only changes path, which is the core's business.
		}
		n.clamp()
	}
	if n.received > n.cfg.AdjustBytes || now.Sub(n.lastAdjust) > n.cfg.AdjustPeriod {
		n.fulfill(now)
	}
}

// Window is the congestion window in bytes, between one MSS and the
// maximum window; on a real host, past slow start, with room for ACKs
// the host delays (ackRoom).
func (n *NSCC) Window() int64 { return int64(min(n.cwnd+n.ackRoom(), n.maxWnd)) }

// NextSend is when the next data packet may leave: 0 unless PacingGain
// is set (real hosts) or the window fell below a quantum (paceChunk).
func (n *NSCC) NextSend() monotime.Time { return n.pacing.next }

// Stats reports the window and the cuts.
func (n *NSCC) Stats() Stats {
	s := n.stats
	s.Window = n.Window()
	s.IgnoredLosses = n.ignoredLosses
	s.Queue = n.queue
	if n.cfg.PacingGain > 0 {
		s.Rate, _ = n.pacingRate()
	}
	return s
}

// Detail is NSCC's own figures: how often it took up the competitive
// mode, and whether it is in it now (1) or not (0).
func (n *NSCC) Detail() []Figure {
	competing := 0.0
	if n.comp.active {
		competing = 1
	}
	return []Figure{{Name: "competitive spells", Value: float64(n.comp.entries)}, {Name: "competing", Value: competing}}
}

// IgnoredLosses is how many loss reports came on an uncongested path and
// left the window alone.
func (n *NSCC) IgnoredLosses() uint64 { return n.ignoredLosses }

// MaxWindow is the window's ceiling in bytes: MaxWindowBDPs x the BDP at
// the base RTT, plus a chunk less an MSS (see the file comment).
func (n *NSCC) MaxWindow() int64 { return int64(n.maxWnd) }

// bdpWindow is uec.cpp's maximum window, MaxWindowBDPs x the BDP at the
// base RTT (at least an MSS), and where NSCC starts.
func (n *NSCC) bdpWindow() float64 {
	return max(n.cfg.MaxWindowBDPs*n.cfg.LineRate/8*n.baseRTT.Seconds(), n.minWnd)
}

// setBaseRTT resizes the maximum window for a new base RTT, as uec.cpp's
// update_base_rtt does; the scaled constants keep the configured RTT.
func (n *NSCC) setBaseRTT(rtt monotime.Duration) {
	n.baseRTT = rtt
	n.maxWnd = max(n.bdpWindow()+max(n.cfg.Quantum-float64(n.cfg.MSS), 0), n.hostFloor())
	n.clamp()
}

func (n *NSCC) clamp() { n.cwnd = min(max(n.cwnd, n.minWnd), n.maxWnd) }
