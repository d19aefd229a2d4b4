package cc

import (
	"math"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// DCQCN here is the sender (reaction point) of ns-3 HPCC's "Mellanox"
// DCQCN (rdma-hw.cc, cc_mode 1) with the DCQCN paper's byte counter
// (Zhu et al., SIGCOMM'15). Where the two differ the choice is noted at
// the code that makes it; in short:
//
//   - increase phases follow the paper's rule over both the timer and
//     the byte counter (ns-3 counts the timer alone);
//   - a cut takes the target to the rate before it every time (ns-3's
//     CLAMP_TARGET_RATE=1, the paper);
//   - a CNP cuts at once when the decrease interval allows, else when
//     it ends (ns-3 checks on a free-running decrease timer);
//   - alpha's timer is replayed when alpha is read, not run (same values).
//
// Loss: DCQCN takes ECN as its only congestion signal and ignores loss
// (OnLoss does nothing). It was designed for lossless (PFC) fabrics, and
// on the long-haul paths SDR also runs over, random loss is not congestion:
// reacting to it would throttle a flow that has the link to itself.

func init() {
	register("dcqcn", func(p Params) Controller { return NewDCQCN(DCQCNNS3(p)) })
	register("dcqcn-paper", func(p Params) Controller { return NewDCQCN(DCQCNPaper(p)) })
}

// DCQCNConfig is every parameter of a DCQCN sender. DCQCNNS3 and DCQCNPaper
// return the two presets; scenarios may start from one and change fields.
type DCQCNConfig struct {
	// LineRate (bit/s) is where the rate starts and the cap of rate and
	// target. Source: Params.LineRate.
	LineRate float64
	// MinRate (bit/s) is the floor of a decrease, at most LineRate.
	// ns-3 HPCC: 1 Gbit/s.
	MinRate float64
	// G (dimensionless) is alpha's EWMA gain. ns-3 HPCC and paper: 1/256.
	G float64
	// AlphaInterval is the alpha update period. ns-3 HPCC: 1 us; paper's
	// K: 55 us.
	AlphaInterval monotime.Duration
	// DecreaseInterval is the least time between two rate cuts. ns-3
	// HPCC: 4 us; paper: 50 us.
	DecreaseInterval monotime.Duration
	// IncreaseInterval is the rate increase timer's period, restarted by
	// every cut. ns-3 HPCC: 300 us; paper: 55 us.
	IncreaseInterval monotime.Duration
	// ByteCounter (bytes) sent advance the byte stage; 0 disables it and
	// the timer alone picks the increase phase, as in ns-3 HPCC. Paper:
	// 10 MB.
	ByteCounter int64
	// RAI (bit/s) is the additive increase of the target per step.
	// ns-3 HPCC: 5 Mbit/s x LineRate/25G; paper: 40 Mbit/s at 40G,
	// scaled as LineRate/40G.
	RAI float64
	// RHAI (bit/s) is the hyper increase of the target per step.
	// ns-3 HPCC: 50 Mbit/s x LineRate/25G; paper: 10 x RAI.
	RHAI float64
	// F is the number of fast recovery steps after a cut. ns-3 HPCC: 1;
	// paper: 5.
	F int
	// CNPInterval is the receiver's CNP rate limit, modelled at the
	// sender: ECN echoes closer than it to the last one taken are one
	// notification. Paper: 50 us. 0: every echo is a notification, as
	// in ns-3 HPCC, which flags each ACK (its decrease interval then
	// limits the cuts).
	CNPInterval monotime.Duration
}

// DCQCNNS3 returns the ns-3 HPCC preset ("dcqcn") for p.
func DCQCNNS3(p Params) DCQCNConfig {
	p = p.WithDefaults()
	return DCQCNConfig{
		LineRate:         p.LineRate,
		MinRate:          min(1e9, p.LineRate),
		G:                1.0 / 256,
		AlphaInterval:    1 * monotime.Microsecond,
		DecreaseInterval: 4 * monotime.Microsecond,
		IncreaseInterval: 300 * monotime.Microsecond,
		ByteCounter:      10_000_000,
		RAI:              5e6 * p.LineRate / 25e9,
		RHAI:             50e6 * p.LineRate / 25e9,
		F:                1,
		CNPInterval:      0,
	}
}

// DCQCNPaper returns the DCQCN paper's preset ("dcqcn-paper") for p, its
// 40G increases scaled to p's line rate.
func DCQCNPaper(p Params) DCQCNConfig {
	p = p.WithDefaults()
	rai := 40e6 * p.LineRate / 40e9
	return DCQCNConfig{
		LineRate:         p.LineRate,
		MinRate:          min(1e9, p.LineRate),
		G:                1.0 / 256,
		AlphaInterval:    55 * monotime.Microsecond,
		DecreaseInterval: 50 * monotime.Microsecond,
		IncreaseInterval: 55 * monotime.Microsecond,
		ByteCounter:      10_000_000,
		RAI:              rai,
		RHAI:             10 * rai,
		F:                5,
		CNPInterval:      50 * monotime.Microsecond,
	}
}

// DCQCN is a rate-based DCQCN sender; see DCQCNConfig. It has no window.
type DCQCN struct {
	cfg DCQCNConfig

	rate   float64 // current rate (bit/s)
	target float64 // rate recovery heads for (bit/s)

	// alpha is evaluated lazily: the field holds it as of the tick at
	// alphaTick, and catchUp applies the ticks since. ns-3 runs a 1 us
	// timer for it forever after the first CNP; alpha is only read at a
	// cut, so replaying the ticks there gives the same value with no
	// timer events, and NextTimer can say Never while nothing else waits.
	alpha     float64
	alphaTick monotime.Time
	cnpInTick bool // a CNP arrived since alphaTick
	started   bool // a first CNP was seen (it sets alpha to 1)

	cnpTaken bool
	lastCNP  monotime.Time

	cutDone      bool
	lastCut      monotime.Time
	pendingCut   bool          // a CNP waits for the decrease interval
	nextIncrease monotime.Time // Never while the rate is at line rate
	timerStage   int           // increase timer expiries since the cut
	byteStage    int           // byte counter expiries since the cut
	bytes        int64         // bytes sent towards the next byte stage

	pacing    pacer
	lastBytes int // the last packet's size, to re-time the pacer on a rate change

	stats Stats
}

// NewDCQCN returns a DCQCN sender at line rate.
func NewDCQCN(cfg DCQCNConfig) *DCQCN {
	cfg.MinRate = min(cfg.MinRate, cfg.LineRate)
	d := &DCQCN{cfg: cfg, rate: cfg.LineRate, target: cfg.LineRate, nextIncrease: monotime.Never}
	d.stats.Rate = d.rate
	return d
}

// Config returns the parameters d runs with.
func (d *DCQCN) Config() DCQCNConfig { return d.cfg }

// OnSend paces the next packet and runs the byte counter.
func (d *DCQCN) OnSend(now monotime.Time, bytes int) {
	// A packet that leaves late may make up for one packet's worth of
	// the delay, no more: an idle flow must not return with a burst.
	tx := monotime.TransmitTime(bytes, d.rate)
	d.pacing.sent(now, tx, tx)
	d.lastBytes = bytes

	if d.nextIncrease == monotime.Never || d.cfg.ByteCounter <= 0 {
		return
	}
	d.bytes += int64(bytes)
	for d.bytes >= d.cfg.ByteCounter && d.nextIncrease != monotime.Never {
		d.bytes -= d.cfg.ByteCounter
		d.byteStage++
		d.increase()
	}
}

// OnAck takes an ECN echo as a congestion notification.
func (d *DCQCN) OnAck(now monotime.Time, a Ack) {
	if !a.ECN {
		return
	}
	if d.cnpTaken && now.Sub(d.lastCNP) < d.cfg.CNPInterval {
		return
	}
	d.cnpTaken, d.lastCNP = true, now
	d.stats.Congestions++
	if !d.started {
		// ns-3: the first CNP sets alpha to 1 and starts its timer
		// without counting as a CNP of that interval.
		d.started, d.alpha, d.alphaTick = true, 1, now
	} else {
		d.catchUp(now)
		d.cnpInTick = true
	}
	// ns-3 checks for a CNP every DecreaseInterval on a timer started by
	// the first one; cutting at once, or as soon as the interval since
	// the last cut allows, keeps its spacing without the phase.
	if !d.cutDone || now.Sub(d.lastCut) >= d.cfg.DecreaseInterval {
		d.cut(now)
	} else {
		d.pendingCut = true
	}
}

// OnLoss does nothing: DCQCN reacts to ECN only (see the file comment).
func (d *DCQCN) OnLoss(monotime.Time, Loss) {}

// OnTimer applies a cut deferred by the decrease interval and the rate
// increase timer's expiries.
func (d *DCQCN) OnTimer(now monotime.Time) {
	if d.pendingCut && now.Sub(d.lastCut) >= d.cfg.DecreaseInterval {
		d.cut(now)
	}
	for d.nextIncrease != monotime.Never && now >= d.nextIncrease {
		d.nextIncrease = d.nextIncrease.Add(d.cfg.IncreaseInterval)
		d.timerStage++
		d.increase()
	}
}

// NextTimer is the earlier of a deferred cut and the next increase; Never
// at line rate with no cut waiting.
func (d *DCQCN) NextTimer() monotime.Time {
	t := d.nextIncrease
	if d.pendingCut {
		t = min(t, d.lastCut.Add(d.cfg.DecreaseInterval))
	}
	return t
}

// Window is 0: DCQCN limits the rate, not the bytes in flight.
func (d *DCQCN) Window() int64 { return 0 }

// NextSend is when the paced next packet may leave.
func (d *DCQCN) NextSend() monotime.Time { return d.pacing.next }

// Stats reports the rate and the cuts.
func (d *DCQCN) Stats() Stats { return d.stats }

// Rate returns the current rate in bits per second.
func (d *DCQCN) Rate() float64 { return d.rate }

// Target returns the rate recovery heads for, in bits per second.
func (d *DCQCN) Target() float64 { return d.target }

// catchUp applies the alpha ticks due by now. Only the first can have
// seen a CNP: every CNP calls catchUp before it sets cnpInTick.
func (d *DCQCN) catchUp(now monotime.Time) {
	if !d.started || d.cfg.AlphaInterval <= 0 {
		return
	}
	n := int64(now.Sub(d.alphaTick) / d.cfg.AlphaInterval)
	if n <= 0 {
		return
	}
	d.alpha *= 1 - d.cfg.G
	if d.cnpInTick {
		d.alpha += d.cfg.G
	}
	if n > 1 {
		d.alpha *= math.Pow(1-d.cfg.G, float64(n-1))
	}
	d.cnpInTick = false
	d.alphaTick = d.alphaTick.Add(monotime.Duration(n) * d.cfg.AlphaInterval)
}

// cut is the rate decrease. The target always takes the rate before the
// cut, as in the paper (ns-3 HPCC's CLAMP_TARGET_RATE=1); with it off,
// ns-3 keeps the old target for a cut before any increase step.
func (d *DCQCN) cut(now monotime.Time) {
	d.catchUp(now)
	d.target = d.rate
	d.setRate(max(d.cfg.MinRate, d.rate*(1-d.alpha/2)))
	d.cutDone, d.lastCut, d.pendingCut = true, now, false
	d.timerStage, d.byteStage, d.bytes = 0, 0, 0
	d.nextIncrease = now.Add(d.cfg.IncreaseInterval)
	d.stats.Decreases++
}

// increase is one step of recovery after a stage counter advanced: as in
// the paper (after QCN), fast recovery while both counters are within F,
// hyper increase once both are past it, additive in between. ns-3 HPCC
// counts the timer alone (ByteCounter 0 here), so the "dcqcn" preset's
// 10 MB byte counter delays its hyper increase past ns-3's.
func (d *DCQCN) increase() {
	t, b := d.timerStage, d.byteStage
	if d.cfg.ByteCounter <= 0 {
		b = t
	}
	switch {
	case max(t, b) <= d.cfg.F:
		// fast recovery: halve the distance to the target
	case min(t, b) > d.cfg.F:
		d.target += d.cfg.RHAI
	default:
		d.target += d.cfg.RAI
	}
	d.target = min(d.target, d.cfg.LineRate)
	r := (d.rate + d.target) / 2
	// Halving the gap never closes it in floating point; within a
	// billionth of line rate is line rate, and the increase timer stops.
	if d.cfg.LineRate-r <= d.cfg.LineRate*1e-9 {
		r, d.target = d.cfg.LineRate, d.cfg.LineRate
		d.nextIncrease, d.bytes = monotime.Never, 0
	}
	d.setRate(r)
}

// setRate changes the rate and re-times the next departure for it, as
// ns-3's ChangeRate does: the last packet's gap is redone at the new rate.
func (d *DCQCN) setRate(r float64) {
	if d.lastBytes > 0 {
		old := monotime.TransmitTime(d.lastBytes, d.rate)
		d.pacing.retime(monotime.TransmitTime(d.lastBytes, r) - old)
	}
	d.rate = r
	d.stats.Rate = r
}
