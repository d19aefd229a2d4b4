package model

import (
	"errors"
	"math"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// Timers selects whose loss-recovery timing the model follows for SR-NACK
// and for EC's fallback repair. SR-RTO is the same under both: a chunk is
// resent RTO = RTT + a*RTT after it was (re)sent.
type Timers int

const (
	// TimersAuto is TimersImpl under RetryPacket and TimersPaper under
	// RetryChunk, so that the paper's mode (RetryChunk, DecodeChunk) stays
	// the paper's equations and this repository's mode (RetryPacket,
	// DecodeStripe) models the implementation.
	TimersAuto Timers = iota
	// TimersPaper: SR-NACK retries a lost chunk every O = RTT + T_INJ;
	// EC's repair is SR-RTO over the expected lost data (srModel).
	TimersPaper
	// TimersImpl: the timers of internal/core (see the package
	// documentation in doc.go): SR-NACK's reordering wait, NACK batching,
	// periodic re-NACKs and the sender's RTO for tail losses; EC's repair
	// in re-NACK rounds in which a codeword needs only enough of its
	// resent shards to decode.
	TimersImpl
)

// DefaultRenackRTTs is the fixed part of the receiver's re-NACK period in
// RTTs: internal/core's renackDelay is RTT + RTT/2 + missing*T_pkt.
const DefaultRenackRTTs = 1.5

// resolveTimers derives the implementation timers' constants.
func (g *geometry) resolveTimers() {
	p := g.p
	g.impl = p.Timers == TimersImpl || (p.Timers == TimersAuto && p.Retry == RetryPacket)
	g.tPkt = g.inject(int64(g.mtu), 1)
	// The receiver times packets by the configured rate and the parity
	// header (internal/core packetTime), not the header actually sent.
	g.tRx = float64(g.mtu+wire.ParityLen) * g.psPerByte
	sr := reliability.SelectiveRepeat{NACK: true, NackFraction: p.NackFraction}
	g.nackDelay = float64(sr.NackDelay(p.RTT))
	r := p.RenackRTTs
	if r == 0 {
		r = DefaultRenackRTTs
	}
	g.renack = r * g.rtt
}

// nackModel is the implementation model of SR-NACK (see doc.go). Times
// are in ps at the receiver, from the first packet's injection.
type nackModel struct {
	n      int64   // packets
	p      float64 // drop probability
	tp     float64 // T_pkt
	half   float64 // RTT/2
	rtt    float64
	d      float64 // NACK delay
	inj    float64 // end of the first pass's injection
	e      float64 // E = inj + RTT/2: the first pass is in
	rto    float64 // sender's RTO
	renack float64 // fixed part of the re-NACK period
	tRx    float64 // receiver's per-packet time
	pNone  float64 // P(no loss among packets 0..n-2)
	bins   []nackBin
	// A NACKed packet arrives only if the NACK and the resend both do: an
	// attempt fails with q = 1 - (1-p)(1-p_ack).
	q, pAck float64
	la, lb  []float64
	sender  bool // times at the sender (Params.AtSender) // la[k] = log(1 - p q^k), lb[k] = log(1 - q^k)
}

// nackBin is a first-loss position i0 with its probability mass.
type nackBin struct {
	w        float64
	i0       int64
	t0       float64 // when the loss is revealed
	nFirst   float64 // its NACK: the first of the message
	tau1, o2 float64 // first re-NACK, and the period of the later ones
}

// maxNackBins bounds the first-loss positions evaluated exactly; beyond it
// they are grouped in bins of equal probability.
const maxNackBins = 512

func (g *geometry) nack() *nackModel {
	p := g.p.DropProb
	nm := &nackModel{n: g.npkts, p: p, tp: g.tPkt, half: g.rtt / 2, rtt: g.rtt, d: g.nackDelay,
		inj: g.sr(SRNACK).end(), rto: (1 + g.a) * g.rtt, renack: g.renack, tRx: g.tRx}
	nm.e = nm.inj + nm.half
	if !g.p.LosslessAcks {
		nm.pAck = p
	}
	nm.sender = g.p.AtSender
	nm.q = 1 - (1-p)*(1-nm.pAck)
	nt := nm.n - 1 // packets that a later packet can reveal
	nm.pNone = math.Exp(float64(nt) * math.Log1p(-p))
	if p == 0 || nt == 0 {
		return nm
	}
	add := func(w float64, i0 int64) {
		b := nackBin{w: w, i0: i0}
		b.t0 = min(float64(i0+2)*nm.tp+nm.half, nm.e)
		b.nFirst = b.t0 + nm.d
		// The re-NACK period counts every packet not yet in, the rest of
		// the first pass included: tau1 = nFirst + 1.5 RTT + missing*T_rx.
		arrived := math.Floor((b.nFirst - nm.half) / nm.tp)
		arrived = min(max(arrived, 0), float64(nm.n)) * (1 - p)
		b.tau1 = b.nFirst + nm.renack + (float64(nm.n)-arrived)*nm.tRx
		// Later re-NACKs: only the double losses (about n p^2) remain.
		b.o2 = nm.renack + float64(nm.n)*p*p*nm.tRx
		nm.bins = append(nm.bins, b)
	}
	lp := math.Log1p(-p)
	if nt <= maxNackBins {
		for i := range nt {
			add(p*math.Exp(float64(i)*lp), i)
		}
	} else {
		// Equal-mass bins of i0 ~ Geometric(p) on [0, nt): the position
		// at the middle of each bin's mass stands for it.
		mass := -math.Expm1(float64(nt) * lp)
		for b := range maxNackBins {
			u := (float64(b) + 0.5) / maxNackBins * mass
			i := int64(math.Ceil(math.Log1p(-u)/lp)) - 1
			add(mass/maxNackBins, min(max(i, 0), nt-1))
		}
	}
	return nm
}

// logA returns log(1 - p q^k) (a packet that may have been lost, k
// attempts since) and logB returns log(1 - q^k) (one that was lost), from
// growing tables.
func (nm *nackModel) logA(k int) float64 { nm.grow(k); return nm.la[k] }
func (nm *nackModel) logB(k int) float64 { nm.grow(k); return nm.lb[k] }

func (nm *nackModel) grow(k int) {
	for j := len(nm.la); j <= k; j++ {
		qk := math.Pow(nm.q, float64(j))
		nm.la = append(nm.la, math.Log1p(-nm.p*qk))
		nm.lb = append(nm.lb, math.Log1p(-qk))
	}
}

// cdfSender returns P(T <= t) at the sender: the final ACK takes RTT/2,
// and if it is lost (p_ack) the sender hears of completion only when its
// RTO resends the last chunk and the receiver answers it (one more RTO;
// a second loss, p_ack^2, is neglected).
func (nm *nackModel) cdfSender(t float64) float64 {
	f := (1 - nm.pAck) * nm.cdf(t-nm.half)
	if nm.pAck > 0 {
		f += nm.pAck * nm.cdf(t-nm.half-nm.rto)
	}
	return f
}

// cdf returns P(T <= t) for the completion time T at the receiver.
func (nm *nackModel) cdf(t float64) float64 {
	if t < nm.e {
		return 0
	}
	// The last packet, if lost, is revealed by nothing: the sender's RTO
	// resends it, k times by inj + k*RTO + RTT/2.
	tail := 1.0
	if nm.p > 0 {
		k := int(math.Floor((t - nm.inj - nm.half) / nm.rto))
		tail = -math.Expm1(float64(k+1) * math.Log(nm.p))
	}
	sum := nm.pNone
	nt := nm.n - 1
	for i := range nm.bins {
		b := &nm.bins[i]
		x := t - nm.rtt - nm.tp // a NACK sent by x is answered by t
		if x < b.nFirst {
			continue
		}
		c := 0 // re-NACK rounds answered by t
		if y := t - b.tau1 - nm.rtt - nm.tp; y >= 0 {
			c = 1 + int(y/b.o2)
		}
		// Losses revealed after t0 are NACKed in batches: those revealed
		// in (t0 + (j-1)d, t0 + jd] at t0 + (j+1)d.
		var cnt int64
		if bd := math.Floor((x-b.t0)/nm.d) - 1; bd >= 1 {
			cnt = min(int64(bd*nm.d/nm.tp), nt-1-b.i0)
		}
		rest := nt - 1 - b.i0 - cnt
		l := nm.logB(1+c) + float64(cnt)*nm.logA(1+c) + float64(rest)*nm.logA(0)
		sum += b.w * math.Exp(l)
	}
	return min(sum, 1) * tail
}

// stats integrates the CDF on a grid of step h from E: the mean
// E + integral (1 - F), and the quantiles at levels (to within h).
func (nm *nackModel) stats(levels []float64) (mean float64, qs []float64, err error) {
	qs = make([]float64, len(levels))
	h := min(nm.d, nm.rtt) / 256
	if !(h > 0) {
		h = nm.tp
	}
	t, cdf := nm.e, nm.cdf
	if nm.sender {
		t, cdf = nm.e+nm.half, nm.cdfSender
	}
	start := t
	f := cdf(t)
	found := 0
	for found < len(levels) && f >= levels[found] {
		qs[found] = t
		found++
	}
	integral := 0.0
	const maxSteps = 1 << 22
	for step := 0; ; step++ {
		if step == maxSteps {
			return 0, nil, errors.New("model: SR-NACK integration did not converge")
		}
		if found == len(levels) && 1-f < 1e-13 {
			break
		}
		t2 := t + h
		f2 := cdf(t2)
		integral += h * ((1 - f) + (1 - f2)) / 2
		t, f = t2, f2
		for found < len(levels) && f >= levels[found] {
			qs[found] = t
			found++
		}
	}
	return start + integral, qs, nil
}

// predictNACKImpl is predictSR under the implementation's SR-NACK timers.
func (g *geometry) predictNACKImpl(pr *Prediction) error {
	nm := g.nack()
	mean, qs, err := nm.stats(quantileLevels)
	if err != nil {
		return err
	}
	pr.Mean = dur(mean)
	pr.P50, pr.P99, pr.P999 = dur(qs[0]), dur(qs[1]), dur(qs[2])
	pr.RetryPeriod = dur(g.renack)
	pr.Injection = dur(nm.inj)
	return nil
}

// ecRounds is the implementation model of EC's fallback repair: the
// probability that every codeword has decoded (or needed no repair) once
// r repair rounds were answered, for r = 0, 1, ...
//
// A data shard is still missing after r rounds iff its first copy and its
// r resends were all lost: q_r = p^(r+1) per packet (a chunk-mode shard of
// N packets: 1 - (1 - p^(r+1))^N, or p_chunk^(r+1) under RetryChunk).
// Parity is never resent. A codeword has decoded by round r iff the
// erasures it still has are within its tolerance, so
//
//	P(R <= r) = prod_codewords (1 - fail(codeword with data erasure q_r)),
//
// exact for independent drops; r = 0 is P(no fallback).
func (g *geometry) ecRounds(e ecModel, r int) float64 {
	p := g.p.DropProb
	pw := math.Pow(p, float64(r+1))
	shard := func(units int) float64 {
		switch {
		case units <= 1:
			return pw
		case g.p.Retry == RetryChunk:
			return math.Pow(chunkDrop(p, units), float64(r+1))
		}
		return chunkDrop(pw, units)
	}
	scheme := g.p.Scheme
	with := func(cw codeword) float64 {
		c := cw
		c.data = repeat(shard(cw.units), len(cw.data))
		if cw.lastUnits > 0 {
			c.data[len(c.data)-1] = shard(cw.lastUnits)
		}
		f, _, _ := c.fail(scheme)
		return f
	}
	logOK := 0.0
	if e.fullCount > 0 {
		logOK = float64(e.fullCount) * math.Log1p(-with(e.full))
	}
	for _, cw := range e.last {
		logOK += math.Log1p(-with(cw))
	}
	return math.Exp(logOK)
}

// predictECImpl is predictEC's fallback under the implementation timers:
//
//	T_0 = T_base,  T_r = T_base + b*RTT + RTT + F'*T_pkt + (r-1)*O_r,
//	O_r = 1.5 RTT + F'*T_rx,
//
// with P(T <= T_r) from ecRounds: the fallback NACK leaves at the fallback
// timeout, the F' resent packets arrive an RTT (and their injection) later,
// and the receiver re-NACKs what is still missing every O_r.
func (g *geometry) predictECImpl(pr *Prediction, e ecModel, base float64, pkts int) error {
	f := float64(pkts)
	first := base + g.b*g.rtt + g.rtt + f*g.tPkt
	o := g.renack + f*g.tRx
	pr.RetryPeriod = dur(o)
	at := func(r int) float64 {
		if r == 0 {
			return base
		}
		return first + float64(r-1)*o
	}
	outs := []*monotime.Duration{&pr.P50, &pr.P99, &pr.P999}
	found := 0
	mean := base
	const maxRounds = 1 << 12
	for r := 0; ; r++ {
		if r == maxRounds {
			return errors.New("model: EC repair rounds did not converge")
		}
		cdf := g.ecRounds(e, r)
		for found < len(quantileLevels) && cdf >= quantileLevels[found]-1e-12 {
			*outs[found] = dur(at(r))
			found++
		}
		surv := 1 - cdf
		if found == len(quantileLevels) && surv < 1e-15 {
			break
		}
		mean += surv * (at(r+1) - at(r))
	}
	pr.Mean = dur(mean)
	return nil
}
