package model

import (
	"math"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// The erasure-coding half of the model: a message's sub-messages as
// codewords, the chance each fails to decode, the fallback repair and
// the completion time's mixture.

// ecModel is the resolved EC model of a message.
//
// Sub-message s < L-1 holds k full data chunks and m full parity chunks.
// The last sub-message holds k' = C - (L-1)*k data chunks (the last maybe
// short) and, as in the implementation (reliability.ParityFor,
// Codec.Short), m' = ceil(k'*m/k) parity chunks, at least 1: a shortened
// code, RS(k, m') with the absent data shards as known zeros (any m'
// erasures), or XOR grouping data chunk j with parity j mod m'. In stripe
// mode its parity chunks have S packets each, S = min(N, packets of the
// message from the sub-message's start). In total the message carries
// (L-1)*m + m' = ceil(C/R) parity chunks, the paper's count.
type ecModel struct {
	injection   float64 // data + parity injection time (ps)
	pDecodeFull float64 // P_dec of a full sub-message
	pFallback   float64 // 1 - prod_s P_dec(s)
	repair      float64 // expected data chunks to repair, given fallback
	subs        int     // L
	mLast       int     // parity chunks of the last sub-message
	// The codewords: fullCount copies of full, then one of each of last.
	// Per-codeword failure probabilities, for MonteCarlo: the first
	// fullCount codewords fail with fullFail each, then one each of
	// lastFail.
	full      codeword
	last      []codeword
	fullCount int64
	fullFail  float64
	lastFail  []float64
}

// codeword describes one erasure codeword: the erasure probabilities of its
// real data shards and of its parity shards (absent shards, past the end of
// the message, are known zeros and never erased).
type codeword struct {
	data, parity []float64
	tol          int // the code's parity count: MDS tolerates tol erasures, XOR has tol groups
	// units is the packets per data shard (1 in stripe mode, N in chunk
	// mode; lastUnits, if nonzero, for the last data shard): the
	// implementation repair model resends them (see ecRounds).
	units, lastUnits int
}

// fail returns, for code kind s with m parities, the probability that cw
// cannot be decoded, and E[D*1{fail}] and E[D*1{ok}] where D is the number
// of erased data shards.
//
// MDS: the codeword decodes iff at most m of its shards are erased; with
// n = k+m i.i.d. shards of erasure probability q this is the paper's
//
//	P_dec = sum_{i<=m} C(n,i) q^i (1-q)^(n-i).
//
// XOR: parity i covers the data shards j with j mod m = i, so the codeword
// decodes iff every such group (its data shards plus its parity) loses at
// most one shard; with k/m data shards per group, n = k/m + 1,
//
//	P_dec = [(1-q)^n + n q (1-q)^(n-1)]^m.
//
// Both are computed by a dynamic program over the shards (so shards may
// differ in q, as the last sub-message's do) that keeps the failure mass
// in its own bucket, so a tiny failure probability (1e-40 at p = 1e-6) is
// accurate to float64 precision rather than lost to 1 - P_dec.
func (cw codeword) fail(s Scheme) (pFail, eDFail, eDOK float64) {
	m := cw.tol
	if s == ECMDS {
		return tolerate(cw.data, cw.parity, m)
	}
	// XOR: independent groups; the codeword fails iff some group fails.
	groups := make([]codeword, m)
	for j, q := range cw.data {
		groups[j%m].data = append(groups[j%m].data, q)
	}
	type res struct{ f, ef, eo float64 }
	rs := make([]res, 0, m)
	logOK := 0.0
	for i := range groups {
		if len(groups[i].data) == 0 {
			continue // parity of known zeros: nothing to recover
		}
		f, ef, eo := tolerate(groups[i].data, cw.parity[i:i+1], 1)
		rs = append(rs, res{f, ef, eo})
		logOK += math.Log1p(-f)
	}
	pFail = -math.Expm1(logOK)
	for _, r := range rs {
		// E[D_g 1{fail}] = E[D_g 1{g fails}] + E[D_g 1{g ok}] * P(another group fails).
		others := -math.Expm1(logOK - math.Log1p(-r.f))
		eDFail += r.ef + r.eo*others
		eDOK += r.eo * (1 - others)
	}
	return pFail, eDFail, eDOK
}

// tolerate is the dynamic program for a codeword that survives up to tol
// erasures: it returns P(more than tol erasures) and E[D*1{fail}],
// E[D*1{ok}] for D the number of erased data shards.
func tolerate(data, parity []float64, tol int) (pFail, eDFail, eDOK float64) {
	pc := make([]float64, tol+1) // P(count = c), c <= tol
	ec := make([]float64, tol+1) // E[D * 1{count = c}]
	pc[0] = 1
	var pt, et float64 // the tail bucket, count > tol
	step := func(q float64, isData float64) {
		et += pt * q * isData
		for c := tol; c >= 0; c-- {
			mp, me := pc[c]*q, (ec[c]+pc[c]*isData)*q
			if c == tol {
				pt += mp
				et += me
			} else {
				pc[c+1] += mp
				ec[c+1] += me
			}
			pc[c] *= 1 - q
			ec[c] *= 1 - q
		}
	}
	for _, q := range data {
		step(q, 1)
	}
	for _, q := range parity {
		step(q, 0)
	}
	for c := range pc {
		eDOK += ec[c]
	}
	return pt, et, eDOK
}

func repeat(q float64, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = q
	}
	return s
}

// ec builds the EC model. Sub-messages fail independently, so
//
//	P_fallback = 1 - prod_s P_dec(s)   (= 1 - P_dec^L for equal sub-messages).
//
// Chunk mode: sub-message s is one codeword of its k_s data and m parity
// chunks with erasure probability p_chunk (of each chunk's own size).
// Stripe mode: sub-message s is S_s codewords, stripe j over packet j of
// every chunk, erased with probability p; stripe j has as data shards the
// data chunks that have a packet j. P_dec(s) = prod_j P_dec(stripe j),
// which for full sub-messages is P_dec(q=p)^N.
//
// Repair size (an approximation): F = E[erased data shards in failed
// codewords | fallback] = sum_codewords E[D*1{fail}] / P_fallback, rounded
// up, at least 1 and at most C. In chunk mode this is exactly the expected
// number of lost data chunks of the undecodable sub-messages given that the
// fallback fires. In stripe mode a chunk whose packets are lost in two
// failed stripes is counted twice (rare: failures are rare and mostly
// single), and chunks whose lost packets fall in stripes that did decode
// are not counted (they are recovered). Parity chunks are never repaired.
func (g *geometry) ec() ecModel {
	k, m := g.k, g.m
	l := (g.c + k - 1) / k
	kLast := g.c - (l-1)*k
	// Over the message, (L-1)*m + ceil(kLast*m/k) = ceil(C*m/k) = ceil(C/R),
	// the paper's parity count, in both modes.
	mLast := reliability.ParityFor(k, m, kLast)
	firstPkt := int64(l-1) * int64(k) * int64(g.n)
	sLast := int(min(int64(g.n), g.npkts-firstPkt)) // stripes of the last sub-message
	e := ecModel{subs: l, mLast: mLast}
	// Injection: data, then m parity chunks per full sub-message and
	// mLast = ParityFor(k') for the last one: whole chunks in chunk mode
	// (the paper's ceil(C/R) parity chunks of T_INJ), chunks of S packets
	// in stripe mode (the implementation's).
	lastParity := g.tInj
	if g.p.Decode == DecodeStripe {
		lastParity = g.inject(int64(sLast)*int64(g.mtu), sLast)
	}
	e.injection = float64(g.c-1)*g.tInj + g.dLast +
		float64(l-1)*float64(m)*g.tInj + float64(mLast)*lastParity

	p := g.p.DropProb
	if g.p.Decode == DecodeChunk {
		e.full = codeword{data: repeat(g.q, k), parity: repeat(g.q, m), tol: m, units: g.n}
		e.fullCount = int64(l - 1)
		last := codeword{data: repeat(g.q, kLast), parity: repeat(g.q, mLast), tol: mLast, units: g.n}
		last.data[kLast-1] = g.qLast
		if g.nLast != g.n {
			last.lastUnits = g.nLast
		}
		e.last = []codeword{last}
	} else {
		e.full = codeword{data: repeat(p, k), parity: repeat(p, m), tol: m, units: 1}
		e.fullCount = int64(l-1) * int64(g.n)
		// Stripe j of the last sub-message has k'-1 data shards plus one
		// if the message's last chunk has a packet j.
		a := codeword{data: repeat(p, kLast), parity: repeat(p, mLast), tol: mLast, units: 1}
		b := codeword{data: repeat(p, kLast-1), parity: repeat(p, mLast), tol: mLast, units: 1}
		for j := range sLast {
			if j < g.nLast {
				e.last = append(e.last, a)
			} else {
				e.last = append(e.last, b)
			}
		}
	}
	scheme := g.p.Scheme
	fullF, fullED, _ := e.full.fail(scheme)
	e.fullFail = fullF
	var lastED float64
	for _, cw := range e.last {
		f, ed, _ := cw.fail(scheme)
		e.lastFail = append(e.lastFail, f)
		lastED += ed
	}
	perFull := float64(g.n)
	if g.p.Decode == DecodeChunk {
		perFull = 1
	}
	// P_dec of a full sub-message: one codeword, or N stripes.
	e.pDecodeFull = math.Exp(perFull * math.Log1p(-fullF))
	logOK := 0.0
	if e.fullCount > 0 {
		logOK = float64(e.fullCount) * math.Log1p(-fullF)
	}
	for _, f := range e.lastFail {
		logOK += math.Log1p(-f)
	}
	e.pFallback = -math.Expm1(logOK)
	if e.pFallback > 0 {
		total := float64(e.fullCount)*fullED + lastED
		e.repair = total / e.pFallback
	}
	return e
}

// repairSize rounds the expected repair size to what the model re-sends:
// F chunks, F = ceil(e.repair) in [1, C], and the packets re-sent.
//
// RetryChunk (the paper's): the repair re-sends F whole chunks, F*N
// packets.
//
// RetryPacket: the receiver NACKs, and the sender re-sends, only the
// missing data packets of the codewords that failed, F' = ceil(E[erased
// data packets in failed codewords | fallback]) in [1, packets of the
// message]. In stripe mode the shards are packets, so F' = F. In chunk
// mode a lost chunk has on average N*p/p_chunk lost packets (>= 1; the
// per-chunk count is independent of which codewords fail), so
// F' = ceil(e.repair * N*p/p_chunk). Parity packets are not re-sent, nor
// are lost packets that the code recovers (those of codewords that decode).
func (g *geometry) repairSize(e ecModel) (chunks, pkts int) {
	if e.pFallback == 0 {
		return 0, 0
	}
	f := math.Ceil(e.repair - 1e-9)
	chunks = int(min(max(f, 1), float64(g.c)))
	if g.p.Retry == RetryChunk {
		return chunks, chunks * g.n
	}
	x := e.repair
	if g.p.Decode == DecodeChunk && g.n > 1 {
		x *= float64(g.n) * g.p.DropProb / g.q
	}
	fp := math.Ceil(x - 1e-9)
	return chunks, int(min(max(fp, 1), float64(g.npkts)))
}

// repairSR is the SR model of the fallback repair, re-sent back to back
// with SR-RTO's retry period (the receiver NACKs what it could not decode;
// a lost repair is retried after the RTO).
//
// RetryChunk: F full chunks, each of them retried whole until one attempt
// delivers all its packets.
//
// RetryPacket: the F' missing packets, each retried until it arrives. For
// timing they are packed N to a chunk, ceil(F'/N) chunks (the last holds
// the rest), back to back; a group completes when its last packet has
// arrived, P(Y <= r) = (1 - p^r)^(packets in the group), which is the max
// over its packets whichever chunks they belong to: grouping only rounds
// each packet's first injection up to its group's end (< T_INJ). It also
// keeps the sweep at most C chunks long.
func (g *geometry) repairSR(chunks, pkts int) srModel {
	o := g.retryPeriod(SRRTO)
	if g.p.Retry == RetryChunk {
		return srModel{n: chunks, t: g.tInj, dLast: g.tInj, q: g.q, qLast: g.q, o: o}
	}
	n := (pkts + g.n - 1) / g.n
	last := pkts - (n-1)*g.n
	p := g.p.DropProb
	return srModel{n: n, t: g.tInj, dLast: g.inject(int64(last)*int64(g.mtu), last),
		q: p, qLast: p, e: g.n, eLast: last, o: o}
}

// predictEC:
//
//	T_EC = T_base                                      without fallback,
//	T_EC = T_base + (1+b)*RTT - RTT/2 + T_SR(F)        with fallback,
//
// where T_base = (C + C/R)*T_INJ + RTT/2 is when the last parity arrives
// (precisely: the injection of the data and of m parity chunks per
// sub-message, as built in ec, plus RTT/2), and the fallback term is: the
// fallback timeout fires b*RTT after the injection ends at the receiver,
// its NACK takes RTT/2 to the sender, and the repair completes T_SR(F)
// later (which includes its own RTT/2). The repair is F whole chunks under
// RetryChunk and the F' missing packets under RetryPacket (repairSize,
// repairSR).
// Hence
//
//	E[T_EC] = T_base + P_fallback*((1+b)*RTT + E[T_SR(F)] - RTT/2).
//
// Quantiles come from the exact mixture CDF: T_base with probability
// 1 - P_fallback, else the shifted T_SR(F) (whose quantiles srModel gives).
func (g *geometry) predictEC(pr *Prediction) error {
	e := g.ec()
	base := e.injection + g.rtt/2 + g.extra
	pr.SubMessages = e.subs
	pr.PDecode = e.pDecodeFull
	pr.PFallback = e.pFallback
	pr.Injection = dur(e.injection)
	pr.RetryPeriod = dur(g.retryPeriod(SRRTO))
	pr.Mean, pr.P50, pr.P99, pr.P999 = dur(base), dur(base), dur(base), dur(base)
	if e.pFallback == 0 {
		return nil
	}
	chunks, pkts := g.repairSize(e)
	pr.RepairChunks, pr.RepairPackets = chunks, pkts
	if g.impl {
		return g.predictECImpl(pr, e, base, pkts)
	}
	shift := base + (1+g.b)*g.rtt - g.rtt/2
	pDec := 1 - e.pFallback
	var levels []float64
	var which []int
	for i, l := range quantileLevels {
		if l > pDec {
			// P(T <= t) = 1 - P_fb + P_fb*P(repair <= t - shift) for t >= T_base.
			levels = append(levels, min((l-pDec)/e.pFallback, math.Nextafter(1, 0)))
			which = append(which, i)
		}
	}
	sr := g.repairSR(chunks, pkts)
	mean, qs, err := sr.stats(levels)
	if err != nil {
		return err
	}
	tsr := mean + g.rtt/2
	pr.Mean = dur(base + e.pFallback*((1+g.b)*g.rtt+tsr-g.rtt/2))
	outs := []*monotime.Duration{&pr.P50, &pr.P99, &pr.P999}
	for j, i := range which {
		*outs[i] = dur(shift + qs[j] + g.rtt/2)
	}
	return nil
}
