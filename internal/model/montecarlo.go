package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// Sample is the result of MonteCarlo.
type Sample struct {
	// Runs is the number of simulated messages.
	Runs int
	// Mean is the sample mean of T; P50, P99, P999 are nearest-rank
	// sample quantiles (the smallest sampled t with at least that fraction
	// of samples <= t).
	Mean, P50, P99, P999 monotime.Duration
	// StdDev is the sample standard deviation of T: the spread that a
	// mean over n messages, if the model is right, shows as StdDev/sqrt(n).
	StdDev monotime.Duration
	// FallbackRate is the fraction of runs in which EC fell back to SR.
	FallbackRate float64
	// Times holds every sampled completion time, ascending.
	Times []monotime.Duration
	// Err is set, and the rest zero, when the parameters are invalid
	// (the same errors as Predict) or runs < 1.
	Err error
}

// CDF returns the fraction of samples <= t.
func (s Sample) CDF(t monotime.Duration) float64 {
	if len(s.Times) == 0 {
		return 0
	}
	i, _ := slices.BinarySearch(s.Times, t+1)
	return float64(i) / float64(len(s.Times))
}

// MonteCarlo simulates runs messages under the same model Predict
// evaluates, drawing its random variables instead of integrating them
// (under the implementation timers it plays the rules of impl.go packet by
// packet and shard by shard, so it checks their closed forms):
//
//   - SR: for every chunk i its attempts Y_i, and T = max_i(s_i + d_i +
//     O*(Y_i-1)) + RTT/2. Under RetryChunk Y_i - 1 ~ Geometric(1 - p_chunk)
//     on {0,1,...}; under RetryPacket Y_i is drawn by inverting its CDF
//     P(Y_i <= r) = (1 - p^r)^N_i (the max of N_i per-packet geometric
//     attempt counts).
//   - EC: for every codeword (chunk mode: every sub-message; stripe mode:
//     every stripe of every sub-message) whether it fails to decode, with
//     that codeword's failure probability; if any fails,
//     T = T_base + (1+b)*RTT - RTT/2 + T_SR(F) with T_SR(F) drawn as above
//     for the model's repair (F chunks, or F' packets under RetryPacket);
//     else T = T_base.
//
// Independent Bernoulli trials with a common probability are drawn by
// geometric skipping (the gap to the next success is geometric), which is
// exact and makes a 1 GiB message cost O(expected losses) per run.
// The random source is a PCG seeded with seed; results are reproducible.
func MonteCarlo(p Params, runs int, seed uint64) Sample {
	g, err := resolve(p)
	if err != nil {
		return Sample{Err: err}
	}
	if runs < 1 {
		return Sample{Err: fmt.Errorf("model: MonteCarlo runs = %d: want >= 1", runs)}
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	times := make([]float64, runs)
	fallbacks := 0
	switch {
	case g.impl && p.Scheme == SRNACK:
		nm := g.nack()
		for i := range times {
			times[i] = nm.draw(rng)
		}
	case g.impl && p.Scheme != SRRTO:
		e := g.ec()
		base := e.injection + g.rtt/2 + g.extra
		_, pkts := g.repairSize(e)
		first := base + g.b*g.rtt + g.rtt + float64(pkts)*g.tPkt
		o := g.renack + float64(pkts)*g.tRx
		for i := range times {
			r := g.drawRounds(rng, e)
			times[i] = base
			if r > 0 {
				fallbacks++
				times[i] = first + float64(r-1)*o
			}
		}
	case p.Scheme == SRRTO || p.Scheme == SRNACK:
		sm := newSampler(g.sr(p.Scheme))
		shift := g.rtt/2 + g.extra
		for i := range times {
			times[i] = sm.draw(rng) + shift
		}
	default:
		e := g.ec()
		base := e.injection + g.rtt/2 + g.extra
		var sm *sampler
		var shift float64
		if e.pFallback > 0 {
			sm = newSampler(g.repairSR(g.repairSize(e)))
			// T_base + (1+b)*RTT - RTT/2, plus the repair's own RTT/2.
			shift = base + (1+g.b)*g.rtt
		}
		lf := math.Log1p(-e.fullFail)
		for i := range times {
			fail := e.fullFail > 0 && skip(rng, lf, e.fullCount) < e.fullCount
			for _, f := range e.lastFail {
				if !fail && f > 0 && rng.Float64() < f {
					fail = true
				}
			}
			if fail {
				fallbacks++
				times[i] = shift + sm.draw(rng)
			} else {
				times[i] = base
			}
		}
	}
	slices.Sort(times)
	s := Sample{Runs: runs, FallbackRate: float64(fallbacks) / float64(runs), Times: make([]monotime.Duration, runs)}
	sum := 0.0
	for i, t := range times {
		sum += t
		s.Times[i] = dur(t)
	}
	mean := sum / float64(runs)
	s.Mean = dur(mean)
	if runs > 1 {
		ss := 0.0
		for _, t := range times {
			ss += (t - mean) * (t - mean)
		}
		s.StdDev = dur(math.Sqrt(ss / float64(runs-1)))
	}
	rank := func(level float64) monotime.Duration {
		i := int(math.Ceil(level*float64(runs))) - 1
		return s.Times[min(max(i, 0), runs-1)]
	}
	s.P50, s.P99, s.P999 = rank(0.5), rank(0.99), rank(0.999)
	return s
}

// sampler draws max_i X_i of an srModel.
type sampler struct {
	m       srModel
	a       float64
	e, eL   int     // units per full and last chunk
	lr      float64 // log(1 - P(a full chunk needs a retry)) = e*log(1-q)
	pr      float64 // P(a full chunk needs a retry) = 1 - (1-q)^e
	lnq     float64 // log q
	lnqL    float64 // log qLast
	hasFull bool
	hasLast bool
}

func newSampler(m srModel) *sampler {
	e, eL := m.units()
	return &sampler{
		m:       m,
		a:       m.end(),
		e:       e,
		eL:      eL,
		lr:      float64(e) * math.Log1p(-m.q),
		pr:      chunkDrop(m.q, e),
		lnq:     math.Log(m.q),
		lnqL:    math.Log(m.qLast),
		hasFull: m.q > 0 && m.n > 1,
		hasLast: m.qLast > 0,
	}
}

// draw returns one sample of max_i X_i. Only chunks that needed a retry can
// exceed A (every X_i of a chunk sent once is at most A), so it visits just
// those, found by geometric skipping over the first n-1 chunks.
func (s *sampler) draw(rng *rand.Rand) float64 {
	best := s.a
	if s.hasFull {
		n := int64(s.m.n - 1)
		for i := skip(rng, s.lr, n); i < n; i += 1 + skip(rng, s.lr, n) {
			var r int64
			if s.e == 1 {
				r = 1 + geometric(rng, s.lnq) // retried: R = 1 + Geometric by memorylessness
			} else {
				r = max(attempts(rng, s.lnq, s.e, s.pr)-1, 1)
			}
			best = max(best, float64(i+1)*s.m.t+s.m.o*float64(r))
		}
	}
	if s.hasLast {
		var r int64
		if s.eL == 1 {
			r = geometric(rng, s.lnqL)
		} else {
			r = max(attempts(rng, s.lnqL, s.eL, 1)-1, 0)
		}
		best = max(best, s.a+s.m.o*float64(r))
	}
	return best
}

// attempts draws Y with P(Y <= r) = (1 - q^r)^e, conditioned on
// P(Y > Y0) = smax for the Y0 with S(Y0) = smax (smax = 1: unconditioned;
// smax = 1 - (1-q)^e: Y >= 2), by inversion: with survival S(r) = P(Y > r)
// and s uniform on (0, smax], Y = min{r : S(r) <= s}, and
//
//	S(r) <= s  <=>  q^r <= 1 - (1-s)^(1/e)  <=>  r >= log(1 - (1-s)^(1/e)) / log q,
//
// so P(Y > r) = P(s < S(r)) = S(r)/smax for S(r) <= smax. lnq = log q.
// The caller clamps Y to the support it conditioned on (rounding can land
// a hair below it).
func attempts(rng *rand.Rand, lnq float64, e int, smax float64) int64 {
	sv := smax * (1 - rng.Float64()) // in (0, smax]
	x := -math.Expm1(math.Log1p(-sv) / float64(e))
	y := math.Ceil(math.Log(x) / lnq)
	if y > 1<<40 {
		return 1 << 40
	}
	return int64(y)
}

// skip returns the number of failures before the next success in
// Bernoulli trials whose failure probability has logarithm lq (= log(1-q)
// for success probability q), capped at limit.
func skip(rng *rand.Rand, lq float64, limit int64) int64 {
	if lq == 0 {
		return limit
	}
	g := math.Floor(math.Log(1-rng.Float64()) / lq)
	if g >= float64(limit) {
		return limit
	}
	return int64(g)
}

// geometric returns R >= 0 with P(R >= r) = q^r, where lnq = log q.
func geometric(rng *rand.Rand, lnq float64) int64 {
	g := math.Floor(math.Log(1-rng.Float64()) / lnq)
	if g > 1<<40 {
		return 1 << 40
	}
	return int64(g)
}
