package model

import (
	"errors"
	"math"
	"slices"

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
	// A NACK is lost with pAck; it carries a whole batch of gaps, so its
	// loss fails all of their resends at once.
	pAck   float64
	lq     []float64 // log(1 - p^k)
	full   []float64 // full[l] = batch(d/T_pkt, l)
	sender bool      // times at the sender (Params.AtSender) // la[k] = log(1 - p q^k), lb[k] = log(1 - q^k)
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
const maxNackBins = 64

func (g *geometry) nack() *nackModel {
	p := g.p.DropProb
	nm := &nackModel{n: g.npkts, p: p, tp: g.tPkt, half: g.rtt / 2, rtt: g.rtt, d: g.nackDelay,
		inj: g.sr(SRNACK).end(), rto: (1 + g.a) * g.rtt, renack: g.renack, tRx: g.tRx}
	nm.e = nm.inj + nm.half
	if !g.p.LosslessAcks {
		nm.pAck = p
	}
	nm.sender = g.p.AtSender
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

// logOK returns log(1 - p^k) for k >= 0 (-Inf for k = 0), from a
// growing table.
func (nm *nackModel) logOK(k int) float64 {
	for j := len(nm.lq); j <= k; j++ {
		nm.lq = append(nm.lq, math.Log1p(-math.Pow(nm.p, float64(j))))
	}
	return nm.lq[k]
}

// batch returns the log of the probability that all s packets of one
// NACK batch are in, given that l re-NACKs were answered: the batch's own
// NACK arrives (1 - p_ack) or not, and a packet lost in the first pass
// arrives iff one of its resends does.
func (nm *nackModel) batch(s float64, l int) float64 {
	if s <= 0 {
		return 0
	}
	ok := s * nm.logOK(2+l)
	if nm.pAck == 0 {
		return ok
	}
	lost := s * nm.logOK(1+l)
	return math.Log((1-nm.pAck)*math.Exp(ok) + nm.pAck*math.Exp(lost))
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
		// Condition on how many of the c re-NACKs arrived (Binomial).
		w := nm.d / nm.tp // packets revealed per batch
		nb := math.Ceil(float64(cnt) / w)
		lastB := float64(cnt) - (nb-1)*w
		base := float64(rest) * nm.logOK(1)
		g := 0.0
		for l := 0; l <= c; l++ {
			wl := 1.0
			if nm.pAck > 0 {
				wl = binom(c, l) * math.Pow(1-nm.pAck, float64(l)) * math.Pow(nm.pAck, float64(c-l))
			} else if l < c {
				continue
			}
			// The first loss is its batch of one: in with 1 - p^(1+l) if
			// its NACK arrived, 1 - p^l if not.
			first := (1 - nm.pAck) * math.Exp(nm.logOK(1+l))
			if l > 0 {
				first += nm.pAck * math.Exp(nm.logOK(l))
			}
			if first <= 0 {
				continue
			}
			for len(nm.full) <= l {
				nm.full = append(nm.full, nm.batch(w, len(nm.full)))
			}
			lg := base + math.Log(first)
			if nb >= 1 { // (nb-1) full batches and a last one of lastB packets
				if nb > 1 {
					lg += (nb - 1) * nm.full[l]
				}
				lg += nm.batch(lastB, l)
			}
			g += wl * math.Exp(lg)
		}
		sum += b.w * g
	}
	return min(sum, 1) * tail
}

// breaks returns the times (at the receiver) where the CDF can step,
// with rounds re-NACK rounds and tail RTOs: the first pass's end, every
// NACK batch's answer, every re-NACK round's answer, every tail resend.
// Between them the CDF is constant.
func (nm *nackModel) breaks(rounds int) []float64 {
	pts := []float64{nm.e}
	for i := range nm.bins {
		b := &nm.bins[i]
		ans := nm.rtt + nm.tp
		for k := 0; b.t0+float64(k-1)*nm.d <= nm.e+nm.d; k++ {
			pts = append(pts, b.t0+float64(k+1)*nm.d+ans)
		}
		for j := range rounds {
			pts = append(pts, b.tau1+ans+float64(j)*b.o2)
		}
	}
	for j := 1; j <= rounds; j++ {
		pts = append(pts, nm.inj+nm.half+float64(j)*nm.rto)
	}
	return pts
}

// stats returns the mean and the quantiles at levels of the completion
// time: the CDF is a step function, so the integral E[T] = start +
// integral (1 - F) is exact over its steps (breaks). The rounds double
// until the survival beyond the last step is below 1e-13.
func (nm *nackModel) stats(levels []float64) (mean float64, qs []float64, err error) {
	cdf, start := nm.cdf, nm.e
	if nm.sender {
		cdf, start = nm.cdfSender, nm.e+nm.half
	}
	for rounds := 8; rounds <= 1<<12; rounds *= 2 {
		pts := nm.breaks(rounds)
		if nm.sender {
			n := len(pts)
			for i := range n {
				pts[i] += nm.half
				if nm.pAck > 0 {
					pts = append(pts, pts[i]+nm.rto)
				}
			}
		}
		slices.Sort(pts)
		qs = make([]float64, len(levels))
		found := 0
		integral := 0.0
		prev, f := start, 0.0
		for _, t := range pts {
			if t < start {
				continue
			}
			integral += (1 - f) * (t - prev)
			// A hair past the step, so that rounding cannot put t before it.
			prev, f = t, cdf(t+0.5)
			for found < len(levels) && f >= levels[found] {
				qs[found] = t
				found++
			}
		}
		if found == len(levels) && 1-f < 1e-13 {
			return start + integral, qs, nil
		}
	}
	return 0, nil, errors.New("model: SR-NACK model did not converge")
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

// binom returns C(n, k) as a float64.
func binom(n, k int) float64 {
	r := 1.0
	for i := range k {
		r = r * float64(n-i) / float64(i+1)
	}
	return r
}
