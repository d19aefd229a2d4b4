package cc

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
)

// BBR is a model-based controller for wide-area paths, after the IETF
// CCWG BBR draft (draft-ietf-ccwg-bbr) and Linux's tcp_bbr. It does not
// read loss as the path's answer to its rate: it measures the path, the
// bottleneck's delivery rate (a max filter over ten round trips) and
// the round trip's floor (a min filter over ten seconds), paces at the
// rate times a gain that cycles to probe for more, and bounds what is in
// flight at twice their product. Startup doubles the rate each round
// trip until the delivery rate stops growing; a drain empties the queue
// startup left; ProbeRTT lowers the window for a moment every ten
// seconds so the floor stays true.
//
// # Loss
//
// The reference BBRv3 treats a round trip that loses more than 2% of its
// packets as congestion. SDR-RDMA's paths lose that much at random and
// its reliability schemes repair it, so loss alone is never congestion
// here. A loss counts only when it comes with a queue (the RTT samples
// of the last eighth to quarter of a round trip all above the floor by
// more than a host's noise: a queue stays, noise comes and goes) and the
// loss rate over two round trips exceeds twice the path's no-queue rate
// plus 3%. A congestion event, at most one per round trip, ends startup
// and caps what may be in flight (BBRv2's inflight_hi) at what was in
// flight when the lost data left; outside probing the window keeps a
// little headroom under the cap. A probe that fills the cap without
// congestion raises it by a step that doubles each round trip (BBRv2's
// probe_up); after one that met congestion the next waits about two
// seconds (BBRv3). Losses taken for random count in Stats.IgnoredLosses.
// ECN echoes are congestion whatever the delay.
//
// # Departures from the references
//
//   - The delivery rate is sampled per ACK over the last round trip of
//     ACKs, not per packet: the core acknowledges whole chunks and
//     reports no per-packet send state. It is the same round-trip
//     average that tcp_bbr's sample takes.
//   - Rounds are timed by the smoothed RTT rather than counted in
//     packets, and on a host last at least its noise.
//   - A sender that knows its line rate and base RTT (a simulated host;
//     Params.LearnLineRate false and BaseRTT given) starts in ProbeBW
//     from the model they make rather than in startup.
//   - ProbeRTT keeps half the BDP in flight (BBRv2) rather than four
//     packets, and the window never falls below two chunks: the core
//     admits whole chunks.
//   - The window has room for what the hosts hold: the ACK's host delay
//     times the rate, the most over the last two round trips (tcp_bbr's
//     extra_acked, for a host's scheduler instead of a NIC's ACK
//     aggregation).
//   - A pacer behind schedule keeps up to Params.HostNoise of lateness,
//     as a real driver wakes late; in simulation, none.
type BBR struct {
	p     Params
	mode  bbrMode
	phase bbrPhase
	// phaseRound is the round the probing phase began.
	phaseRound uint64

	// The path model.
	bw      float64 // bytes per second: the max filter's
	bwSlots [bbrBWRounds]float64
	// bwRound counts the rounds that gave the filter a sample: it ages
	// only with them, so a sender the application holds back keeps its
	// model (tcp_bbr's filter ages with accepted samples too).
	bwRound   uint64
	bwSampled bool
	// appLimitedUntil: ACKs until this many bytes are delivered measure
	// the application, not the path: their samples may raise the model,
	// never lower it.
	appLimitedUntil int64
	// appIdle: the core said the sender ran out of data (OnAppLimited)
	// since its last send.
	appIdle    bool
	windowFull bool // the last send left no room for another chunk
	minRTT     monotime.Duration
	minRTTAt   monotime.Time
	srtt       monotime.Duration
	// recent is the least RTT sample of this window and the last, each
	// an eighth of a round trip: a queue stays for both, a late sample
	// (a host's pause, a block a fallback completed) does not.
	recent      [2]monotime.Duration
	recentStart monotime.Time
	samples     int
	// hostDelay is the most the hosts held an ACK this round trip and
	// the last (cur, prev).
	hostDelay [2]monotime.Duration

	// The delivery-rate sampler: bytes acknowledged in all, and marks of
	// (time, delivered) at least a sixteenth of a round trip apart.
	delivered int64
	marks     markRing
	// sent is the bytes put on the wire in all, with marks: a sample's
	// rate is at most the rate its data left at (tcp_bbr's send_elapsed),
	// so chunks that a resend completes together do not read as a
	// faster path.
	sent      int64
	sentMarks markRing

	// Rounds.
	round    uint64
	roundEnd monotime.Time

	// Startup's exit: the delivery rate that last grew by a quarter, and
	// for how many rounds it has not since.
	fullBW       float64
	fullBWRounds int

	// Loss: this round's and the last round's sent and lost bytes, the
	// loss rate of rounds that never showed a queue, nor did the round
	// before them (losses are reported a round trip late; a moving
	// average), and whether this round and the last have shown one.
	sentRound, lost [2]int64
	baseLoss        float64
	roundQueued     [2]bool
	inflightHi      int64 // 0: no cap
	probeStep       int64
	congested       bool // this probing phase saw congestion
	probeCongested  bool // the last probe up met congestion
	cutOnce         bool

	// ProbeRTT.
	probeRTTEnd monotime.Time
	probeMin    monotime.Duration

	inflight int64
	cwnd     int64
	pacing   pacer
	stats    Stats
}

type bbrMode uint8

const (
	bbrStartup bbrMode = iota
	bbrDrain
	bbrProbeBW
	bbrProbeRTT
)

type bbrPhase uint8

const (
	bbrCruise bbrPhase = iota
	bbrUp
	bbrDown
)

// markRing holds (time, bytes so far) marks at least a sixteenth of a
// round trip apart, the newest last.
type markRing struct {
	at    [bbrMarks]monotime.Time
	bytes [bbrMarks]int64
	// inflight is what was in flight at the mark (delivery marks only).
	inflight [bbrMarks]int64
	next     int
	count    int
}

func (r *markRing) newest() (monotime.Time, int64) {
	i := (r.next + bbrMarks - 1) % bbrMarks
	return r.at[i], r.bytes[i]
}

// add marks bytes at now unless the newest mark is younger than gap.
func (r *markRing) add(now monotime.Time, bytes, inflight int64, gap monotime.Duration) {
	if r.count > 0 {
		if at, _ := r.newest(); now.Sub(at) < gap {
			return
		}
	}
	r.at[r.next], r.bytes[r.next], r.inflight[r.next] = now, bytes, inflight
	r.next = (r.next + 1) % bbrMarks
	r.count = min(r.count+1, bbrMarks)
}

// before returns the newest mark at or before t, or the oldest mark if
// none is that old; ok is false when there are no marks.
func (r *markRing) before(t monotime.Time) (at monotime.Time, bytes int64, ok bool) {
	if j := r.index(t); j >= 0 {
		return r.at[j], r.bytes[j], true
	}
	return 0, 0, false
}

// index is before's mark's index, -1 if none.
func (r *markRing) index(t monotime.Time) int {
	j := -1
	for i := 1; i <= r.count; i++ {
		j = (r.next + bbrMarks - i) % bbrMarks
		if r.at[j] <= t {
			break
		}
	}
	return j
}

// BBR's constants: the draft's gains and filter lengths, and ours.
const (
	bbrStartupGain     = 2.885 // 2/ln 2: the rate doubles each round trip
	bbrCwndGain        = 2.0
	bbrUpGain          = 1.25
	bbrDownGain        = 0.75
	bbrBWRounds        = 10
	bbrMinRTTWindow    = 10 * monotime.Second
	bbrProbeRTTTime    = 200 * monotime.Millisecond
	bbrCruiseRounds    = 6
	bbrUpRounds        = 8 // the longest probe up, for a sender that cannot fill its window
	bbrMaxCruiseRounds = 63
	bbrProbeWait       = 2 * monotime.Second
	bbrFullBWGrowth    = 1.25
	bbrFullBWRounds    = 3
	bbrMarks           = 64 // marks a sixteenth of a round trip apart: four round trips
	bbrRecentSamples   = 4
	// bbrBeta is the least an inflight cap keeps of the BDP (BBRv2's
	// beta, 0.7).
	bbrBeta = 0.7
	// bbrHeadroom is the share of the inflight cap left free outside
	// probing, for other flows (BBRv2: 0.15; less keeps a lone sender's
	// shallow bottleneck fuller).
	bbrHeadroom = 0.05
	// bbrExcessLoss is the loss rate beyond twice the no-queue rate
	// that makes a queued round trip's loss congestion.
	bbrExcessLoss = 0.03
	// bbrPacingMargin paces a little under the model's rate (tcp_bbr's
	// pacing_margin_percent), so a rate read a little high by ACKs that
	// came together builds no standing queue.
	bbrPacingMargin = 0.99
	bbrInitChunks   = 4 // the initial window, in quanta
	bbrMinChunks    = 2 // the least window, in quanta
)

func init() { register("bbr", func(p Params) Controller { return NewBBR(p) }) }

// NewBBR returns a BBR controller for a path described by p (its zero
// fields filled with defaults).
func NewBBR(p Params) *BBR {
	p = p.WithDefaults()
	if p.Quantum <= 0 {
		p.Quantum = p.MSS
	}
	b := &BBR{p: p, probeStep: int64(p.Quantum)}
	b.cwnd = bbrInitChunks * int64(p.Quantum)
	if !p.baseRTTGuessed {
		b.srtt = p.BaseRTT
	}
	if !p.LearnLineRate && !p.baseRTTGuessed {
		// The line rate and the round trip are the path's, not guesses
		// (a simulated host): start from the model they make, as a
		// sender that already measured them.
		b.bw = p.LineRate / 8
		b.bwSlots[0] = b.bw
		b.mode = bbrProbeBW
		b.cwnd = max(int64(bbrCwndGain*b.bw*p.BaseRTT.Seconds()), b.cwnd)
	}
	b.stats.Window = b.cwnd
	return b
}

// OnSend paces the next packet after this one.
func (b *BBR) OnSend(now monotime.Time, bytes int) {
	rate := b.pacingRate()
	if b.appIdle || b.pacing.next > 0 && !b.windowFull &&
		now.Sub(b.pacing.next) > b.p.HostNoise+monotime.TransmitTime(b.p.Quantum, rate) {
		// Neither the pacer nor the window held this packet back: the
		// sender was idle. Samples restart with this burst's ACKs, none
		// reaching back across the gap, and for its first BDP (whose
		// ACKs a repair may hold back a round trip) they may only raise
		// the model.
		b.appLimitedUntil = b.delivered + max(b.inflight+int64(bytes), int64(b.bdp()))
		b.marks.count, b.sentMarks.count = 0, 0
		b.appIdle = false
	}
	b.sent += int64(bytes)
	b.inflight += int64(bytes) // until the next ACK says
	// The core admits a chunk only whole: no room for one more holds the
	// sender until an ACK makes some.
	b.windowFull = b.inflight+int64(b.p.Quantum) > b.cwnd
	b.sentRound[0] += int64(bytes)
	b.sentMarks.add(now, b.sent, 0, b.span()/16)
	b.pacing.sent(now, monotime.TransmitTime(bytes, rate), b.p.HostNoise)
}

// pacingRate is the rate in bits per second: the gain times the
// bottleneck's rate, or before a sample the initial window per round trip.
func (b *BBR) pacingRate() float64 {
	bw := b.bw
	if bw == 0 {
		rtt := b.srtt
		if rtt == 0 {
			rtt = b.p.BaseRTT
		}
		bw = float64(b.cwnd) / rtt.Seconds()
	}
	return b.gain() * bw * 8 * bbrPacingMargin
}

func (b *BBR) gain() float64 {
	switch b.mode {
	case bbrStartup:
		if b.queueNow() {
			// Already above the bottleneck's rate: faster only queues.
			return 1
		}
		return bbrStartupGain
	case bbrDrain:
		return 1 / bbrStartupGain
	case bbrProbeBW:
		switch b.phase {
		case bbrUp:
			return bbrUpGain
		case bbrDown:
			return bbrDownGain
		}
	}
	return 1
}

// OnAck updates the model, the mode and the window.
func (b *BBR) OnAck(now monotime.Time, a Ack) {
	b.inflight = a.InFlight
	if a.RTT > 0 {
		b.rttSample(now, a.RTT)
		b.hostDelay[0] = max(b.hostDelay[0], a.HostDelay)
	}
	if a.Bytes > 0 {
		b.delivered += a.Bytes
		b.sampleRate(now)
	}
	if now >= b.roundEnd {
		b.startRound(now)
	}
	if a.ECN {
		b.congestion(now)
	}
	b.advance(now)
	b.raiseCap(a.Bytes)
	b.setWindow(a.Bytes)
}

// rttSample feeds the round trip's filters.
func (b *BBR) rttSample(now monotime.Time, rtt monotime.Duration) {
	if b.srtt == 0 {
		b.srtt = rtt
	} else {
		b.srtt += (rtt - b.srtt) / 8
	}
	if b.minRTT == 0 || rtt <= b.minRTT {
		b.minRTT, b.minRTTAt = rtt, now
	}
	if b.mode == bbrProbeRTT && (b.probeMin == 0 || rtt < b.probeMin) {
		b.probeMin = rtt
	}
	if w := b.span() / 8; b.samples == 0 || now.Sub(b.recentStart) >= w {
		b.recent[1], b.recent[0], b.recentStart = b.recent[0], rtt, now
	} else {
		b.recent[0] = min(b.recent[0], rtt)
	}
	b.samples++
	if b.queueNow() {
		b.roundQueued[0] = true
	}
}

// queueNow reports whether the RTT samples of the last eighth to
// quarter of a round trip all show a queue: above the floor by more than
// a host's noise, a hundredth of the floor (a simulated path's samples
// are exact), and two quanta at the bottleneck's rate (where a chunk's
// own packets queue).
func (b *BBR) queueNow() bool {
	return b.queue() > b.queueThreshold()
}

// queue is the least delay over the floor of the recent samples.
func (b *BBR) queue() monotime.Duration {
	if b.samples < bbrRecentSamples || b.minRTT == 0 {
		return 0
	}
	return max(min(b.recent[0], b.recent[1])-b.minRTT, 0)
}

func (b *BBR) queueThreshold() monotime.Duration {
	t := max(b.p.HostNoise, b.minRTT/100)
	if b.bw > 0 {
		t = max(t, monotime.Duration(2*float64(b.p.Quantum)/b.bw*float64(monotime.Second)))
	}
	return t
}

// span is the round trip the rate is sampled over, and a round's length.
// On a host it is at least the host's noise: over loopback a round trip
// is tens of microseconds, a scheduler's pause a millisecond, and a max
// filter ten such round trips long forgot the rate in every pause.
func (b *BBR) span() monotime.Duration {
	if b.srtt == 0 {
		return max(b.p.BaseRTT, b.p.HostNoise)
	}
	return max(b.srtt, b.p.HostNoise)
}

// sampleRate takes a delivery-rate sample: the bytes acknowledged since
// the newest mark at least a round trip old, over the time since, and
// at most the rate the same span's data left at a round trip before.
// A sample of less than a quantum may only raise the model: ACKs come a
// chunk at a time and a message's last chunk may hold a few bytes, so
// after a pause in the ACKs such a chunk acknowledged alone measures
// where a message ended, not the path.
func (b *BBR) sampleRate(now monotime.Time) {
	span := b.span()
	if b.marks.count > 0 {
		// Idle: a sample across it measures the application. A gap the
		// pacer made (two quanta at its rate) is not idle: taken for one,
		// no sample would ever come at a low rate to raise it.
		idle := 2 * max(span, monotime.TransmitTime(b.p.Quantum, b.pacingRate()))
		if at, _ := b.marks.newest(); now.Sub(at) > idle {
			b.marks.count = 0
		}
	}
	if at, d, ok := b.marks.before(now.Add(-span)); ok && now.Sub(at) >= span/2 {
		el := now.Sub(at)
		rate := float64(b.delivered-d) / el.Seconds()
		if sAt, s, ok := b.sentMarks.before(at.Add(-span)); ok {
			if eAt, e, ok := b.sentMarks.before(now.Add(-span)); ok && eAt > sAt {
				rate = min(rate, float64(e-s)/max(eAt.Sub(sAt), el).Seconds())
			}
		}
		if b.delivered > b.appLimitedUntil && b.delivered-d >= int64(b.p.Quantum) || rate > b.bw {
			slot := &b.bwSlots[b.bwRound%bbrBWRounds]
			*slot = max(*slot, rate)
			b.bw = max(b.bw, rate)
			b.bwSampled = true
		}
	}
	b.marks.add(now, b.delivered, b.inflight, span/16)
}

// startRound ends a round trip: the filters age, the loss counters
// shift, startup checks whether the pipe is full.
func (b *BBR) startRound(now monotime.Time) {
	rtt := b.span()
	if sent := b.sentRound[0]; !b.roundQueued[0] && !b.roundQueued[1] && sent > 0 {
		b.baseLoss += (min(float64(b.lost[0])/float64(sent), 1) - b.baseLoss) / 8
	}
	b.sentRound[1], b.lost[1], b.sentRound[0], b.lost[0] = b.sentRound[0], b.lost[0], 0, 0
	b.roundQueued[1], b.roundQueued[0] = b.roundQueued[0], false
	b.hostDelay[1], b.hostDelay[0] = b.hostDelay[0], 0
	b.round++
	b.roundEnd = now.Add(rtt)
	sampled := b.bwSampled
	if sampled {
		b.bwRound++
		b.bwSlots[b.bwRound%bbrBWRounds] = 0
		b.bw = 0
		for _, s := range b.bwSlots {
			b.bw = max(b.bw, s)
		}
		b.bwSampled = false
	}
	b.cutOnce = false
	if b.mode == bbrProbeBW && b.phase == bbrUp && b.round > b.phaseRound+1 {
		b.probeStep *= 2
	}
	if b.mode == bbrStartup && b.bw > 0 && sampled {
		if b.bw >= b.fullBW*bbrFullBWGrowth {
			b.fullBW, b.fullBWRounds = b.bw, 0
		} else if b.fullBWRounds++; b.fullBWRounds >= bbrFullBWRounds || b.queueNow() {
			// Three round trips without growth, or one that ended with
			// a queue: the pipe is full.
			b.mode = bbrDrain
		}
	}
}

// advance moves between modes and probing phases.
func (b *BBR) advance(now monotime.Time) {
	bdp := b.bdp()
	switch b.mode {
	case bbrDrain:
		if float64(b.inflight) <= bdp {
			b.enterProbeBW(bbrCruise)
		}
	case bbrProbeBW:
		b.cycle(bdp)
	case bbrProbeRTT:
		if b.probeRTTEnd == 0 && float64(b.inflight) <= b.probeRTTWindow() {
			rtt := max(b.srtt, b.minRTT)
			b.probeRTTEnd = now.Add(max(bbrProbeRTTTime, rtt))
		}
		if b.probeRTTEnd != 0 && now >= b.probeRTTEnd {
			if b.probeMin > 0 {
				b.minRTT = b.probeMin
			}
			b.minRTTAt = now
			b.enterProbeBW(bbrDown)
		}
		return
	}
	if b.minRTT > 0 && now.Sub(b.minRTTAt) > bbrMinRTTWindow && b.mode != bbrStartup {
		b.mode, b.probeRTTEnd, b.probeMin = bbrProbeRTT, 0, 0
	}
}

func (b *BBR) enterProbeBW(p bbrPhase) {
	b.mode = bbrProbeBW
	b.setPhase(p)
}

func (b *BBR) setPhase(p bbrPhase) {
	b.phase, b.phaseRound = p, b.round
	b.congested = false
}

// cycle runs ProbeBW's phases: up for at least a round trip, until
// what is in flight reaches the gain's share of the BDP or congestion
// ends it; down until the queue it built drains (a round trip at most);
// cruise for six.
func (b *BBR) cycle(bdp float64) {
	rounds := b.round - b.phaseRound
	switch b.phase {
	case bbrUp:
		if b.congested || rounds >= 1 && (float64(b.inflight) >= bbrUpGain*bdp || rounds >= bbrUpRounds) {
			b.probeCongested = b.congested
			b.setPhase(bbrDown)
		}
	case bbrDown:
		if rounds >= 1 || float64(b.inflight) <= bdp {
			b.setPhase(bbrCruise)
		}
	case bbrCruise:
		if rounds >= b.cruiseRounds() {
			b.setPhase(bbrUp)
			b.probeStep = int64(b.p.Quantum)
		}
	}
}

// cruiseRounds is how long ProbeBW cruises: six round trips, or after a
// probe that met congestion about two seconds (BBRv3's wait between
// probes, for loss-based flows beside it and for the drops each probe
// into a full queue costs), 63 round trips at most.
func (b *BBR) cruiseRounds() uint64 {
	if !b.probeCongested {
		return bbrCruiseRounds
	}
	rtt := max(b.span(), monotime.Microsecond)
	return max(bbrCruiseRounds, min(bbrMaxCruiseRounds, uint64(bbrProbeWait/rtt)))
}

// raiseCap grows the inflight cap while probing up finds it the limit:
// by probeStep per round trip, a step that doubles each round
// (BBRv2's probe_up_cnt).
func (b *BBR) raiseCap(acked int64) {
	if b.mode != bbrProbeBW || b.phase != bbrUp || b.inflightHi == 0 ||
		b.inflight+2*int64(b.p.Quantum) < b.inflightHi {
		return
	}
	b.inflightHi += max(b.probeStep*acked/b.inflightHi, 1)
}

// bdp is the model's bandwidth-delay product, bytes.
func (b *BBR) bdp() float64 { return b.bw * b.minRTT.Seconds() }

func (b *BBR) probeRTTWindow() float64 {
	return max(b.bdp()/2, float64(bbrMinChunks*b.p.Quantum))
}

// setWindow sizes the window: in startup it grows by what was acked;
// then twice the BDP, room for the hosts' hold and a quantum, within the
// inflight cap.
func (b *BBR) setWindow(acked int64) {
	q := int64(b.p.Quantum)
	hostRoom := int64(b.bw * max(b.hostDelay[0], b.hostDelay[1]).Seconds())
	target := int64(bbrCwndGain*b.bdp()) + hostRoom + q
	switch {
	case b.mode == bbrProbeRTT:
		target = int64(b.probeRTTWindow())
		b.cwnd = target
	case b.mode == bbrStartup:
		if b.cwnd < target || b.bw == 0 {
			b.cwnd += acked
		}
	default:
		b.cwnd = min(b.cwnd+acked, target)
	}
	if b.inflightHi > 0 {
		hi := b.inflightHi
		if b.mode != bbrProbeBW || b.phase != bbrUp {
			hi -= max(int64(bbrHeadroom*float64(hi)), q) // room for others
		}
		b.cwnd = min(b.cwnd, hi+hostRoom)
	}
	b.cwnd = max(b.cwnd, bbrMinChunks*q)
	b.stats.Window = b.cwnd
	b.stats.Rate = b.pacingRate()
	b.stats.Queue = b.queue()
}

// OnLoss takes a loss for congestion when it comes with a queue and a
// loss rate above the path's no-queue rate; otherwise it ignores it.
func (b *BBR) OnLoss(now monotime.Time, l Loss) {
	b.lost[0] += l.Bytes
	if !b.queueNow() || b.lossRate() <= 2*b.baseLoss+bbrExcessLoss {
		b.stats.IgnoredLosses++
		return
	}
	b.congestion(now)
	b.setWindow(0)
}

// lossRate is the bytes lost over the bytes sent, this round trip and
// the last.
func (b *BBR) lossRate() float64 {
	sent := b.sentRound[0] + b.sentRound[1]
	if sent == 0 {
		return 0
	}
	return min(float64(b.lost[0]+b.lost[1])/float64(sent), 1)
}

// congestion answers a congestion event, at most once per round trip:
// startup ends, and what may be in flight is capped.
func (b *BBR) congestion(now monotime.Time) {
	b.stats.Congestions++
	if b.cutOnce {
		return
	}
	b.cutOnce = true
	b.stats.Decreases++
	if b.mode == bbrStartup {
		b.mode = bbrDrain
	}
	// What was in flight when the lost data left, a round trip ago
	// (BBRv2's tx_in_flight), at least beta of the BDP.
	hi := b.inflight
	if j := b.marks.index(now.Add(-b.span())); j >= 0 {
		hi = b.marks.inflight[j]
	}
	if b.inflightHi > 0 {
		hi = min(hi, b.inflightHi)
	}
	b.inflightHi = max(hi, int64(bbrBeta*b.bdp()), bbrMinChunks*int64(b.p.Quantum))
	b.congested = true
	if b.mode == bbrProbeBW && b.phase == bbrUp {
		b.probeCongested = true
		b.setPhase(bbrDown)
	}
}

// OnAppLimited: what is in flight now measures the application, and the
// next send starts after an idle, however short.
func (b *BBR) OnAppLimited(monotime.Time) {
	b.appLimitedUntil = max(b.appLimitedUntil, b.delivered+b.inflight)
	b.appIdle = true
}

// OnTimer does nothing: BBR's clocks are its ACKs.
func (b *BBR) OnTimer(monotime.Time) {}

// NextTimer is Never.
func (b *BBR) NextTimer() monotime.Time { return monotime.Never }

// Window is the congestion window.
func (b *BBR) Window() int64 { return b.cwnd }

// NextSend is the pacer's next departure.
func (b *BBR) NextSend() monotime.Time { return b.pacing.next }

// Stats describes the controller.
func (b *BBR) Stats() Stats { return b.stats }
