package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// TestClosedFormMatchesMonteCarlo checks Predict against MonteCarlo (100k
// runs) of the same model over a grid of sizes, drop rates and schemes: the
// means agree within 2%, the predicted quantiles are quantiles of the sample
// (the sample CDF crosses the level there, within sampling error), and the
// fallback rate matches P_fallback. The grid runs under both retry models:
// under RetryPacket Monte Carlo draws every retried chunk's attempts by
// inversion (attempts) while Predict sweeps the exact CDF.
func TestClosedFormMatchesMonteCarlo(t *testing.T) {
	const runs = 100_000
	type link struct {
		name string
		rate float64
		rtt  monotime.Duration
	}
	links := []link{
		{"400G/25ms", 400e9, 25 * monotime.Millisecond},
		// 10 Gbit/s and 100 us: a 64 MiB message takes 54 ms to inject, so
		// retries of early chunks interleave with first copies of later ones.
		{"10G/100us", 10e9, 100 * monotime.Microsecond},
	}
	schemes := []struct {
		s Scheme
		d DecodeModel
	}{{SRRTO, DecodeChunk}, {SRNACK, DecodeChunk}, {ECMDS, DecodeChunk}, {ECXOR, DecodeChunk}, {ECMDS, DecodeStripe}, {ECXOR, DecodeStripe}}
	sizes := []int64{128 << 10, 4 << 20, 5<<20 + 12345, 64 << 20}
	var seed uint64
	for _, retry := range []RetryModel{RetryChunk, RetryPacket} {
		for _, l := range links {
			for _, size := range sizes {
				for _, p := range []float64{1e-6, 1e-4, 1e-2} {
					for _, sc := range schemes {
						if l.name != links[0].name && size != 64<<20 {
							continue
						}
						seed++
						params := Params{MessageBytes: size, RateBitsPerSec: l.rate, RTT: l.rtt, DropProb: p, Scheme: sc.s, Decode: sc.d, Retry: retry, Timers: TimersPaper}
						name := fmt.Sprintf("%v/%s/%s/p=%g/%v/%d", retry, l.name, sizeName(size), p, sc.s, sc.d)
						t.Run(name, func(t *testing.T) {
							t.Parallel()
							checkAgainstMC(t, params, runs, seed)
						})
					}
				}
			}
		}
	}
}

func checkAgainstMC(t *testing.T, params Params, runs int, seed uint64) {
	t.Helper()
	pr, err := Predict(params)
	if err != nil {
		t.Fatal(err)
	}
	mc := MonteCarlo(params, runs, seed)
	if mc.Err != nil {
		t.Fatal(mc.Err)
	}
	if !near(float64(pr.Mean), float64(mc.Mean), 0.02) {
		t.Errorf("mean: model %v, Monte Carlo %v", pr.Mean, mc.Mean)
	}
	// A quantile q of level l has CDF(q) >= l and CDF(just below q) < l;
	// the sample CDF estimates both within a few standard errors. (Sample
	// quantiles themselves can jump a whole retry period on a lattice.)
	const eps = 10 * monotime.Picosecond
	for _, c := range []struct {
		level float64
		q     monotime.Duration
	}{{0.5, pr.P50}, {0.99, pr.P99}, {0.999, pr.P999}} {
		tol := 5*math.Sqrt(c.level*(1-c.level)/float64(runs)) + 1e-4
		if f := mc.CDF(c.q + eps); f < c.level-tol {
			t.Errorf("p%v = %v: sample CDF there %.5f", c.level*100, c.q, f)
		}
		if f := mc.CDF(c.q - eps); f > c.level+tol {
			t.Errorf("p%v = %v: sample CDF just below %.5f", c.level*100, c.q, f)
		}
	}
	sd := math.Sqrt(pr.PFallback * (1 - pr.PFallback) / float64(runs))
	if math.Abs(mc.FallbackRate-pr.PFallback) > 5*sd+1e-5 {
		t.Errorf("fallback rate %.5f, model P_fallback %.5f", mc.FallbackRate, pr.PFallback)
	}
}

func TestMonteCarloReproducible(t *testing.T) {
	p := Params{MessageBytes: 16 << 20, RateBitsPerSec: 400e9, RTT: 25 * monotime.Millisecond, DropProb: 1e-2, Scheme: ECXOR}
	a, b := MonteCarlo(p, 1000, 42), MonteCarlo(p, 1000, 42)
	if a.Mean != b.Mean || a.P999 != b.P999 || a.FallbackRate != b.FallbackRate {
		t.Errorf("same seed, different samples: %+v vs %+v", a.Mean, b.Mean)
	}
	if c := MonteCarlo(p, 1000, 43); c.Mean == a.Mean {
		t.Errorf("different seeds, same mean %v", a.Mean)
	}
}

// TestAttemptsDistribution checks the inversion sampler against
// P(Y <= r) = (1 - q^r)^e, unconditioned and conditioned on Y >= 2
// (smax = 1 - (1-q)^e, as the sampler uses for chunks that needed a retry):
// every P(Y = r) with an expected count of at least 20 matches within five
// standard errors, and no draw falls outside the support.
func TestAttemptsDistribution(t *testing.T) {
	const draws = 400_000
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		q float64
		e int
	}{{0.5, 2}, {0.3, 3}, {0.01, 16}, {1e-4, 16}, {0.2, 1}} {
		cdf := func(r int) float64 { return math.Pow(1-math.Pow(c.q, float64(r)), float64(c.e)) }
		for _, cond := range []bool{false, true} {
			smax, y0 := 1.0, 1
			if cond {
				smax, y0 = chunkDrop(c.q, c.e), 2
			}
			counts := map[int64]int{}
			for range draws {
				y := attempts(rng, math.Log(c.q), c.e, smax)
				counts[max(y, int64(y0))]++
			}
			for y := range counts {
				if y < int64(y0) {
					t.Errorf("q=%g e=%d cond=%v: drew Y = %d", c.q, c.e, cond, y)
				}
			}
			for r := y0; r < y0+40; r++ {
				// P(Y = r | Y >= y0) = (F(r) - F(r-1)) / (1 - F(y0-1)).
				pr := (cdf(r) - cdf(r-1)) / (1 - cdf(y0-1))
				if pr*draws < 20 {
					continue
				}
				got := float64(counts[int64(r)]) / draws
				if sd := math.Sqrt(pr * (1 - pr) / draws); math.Abs(got-pr) > 5*sd {
					t.Errorf("q=%g e=%d cond=%v: P(Y=%d) sampled %.5f, want %.5f", c.q, c.e, cond, r, got, pr)
				}
			}
		}
	}
}
