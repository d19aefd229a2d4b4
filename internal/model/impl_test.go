package model

import (
	"fmt"
	"math"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// The implementation-timer closed forms (impl.go) against the Monte Carlo
// that plays the same rules packet by packet (impl_mc.go). The SR-NACK
// closed form groups first-loss positions into bins and NACK batches into
// equal sizes, so it is held to 3% of the mean.
func TestImplMatchesMonteCarlo(t *testing.T) {
	const runs = 20_000
	cases := []struct {
		s    Scheme
		d    DecodeModel
		size int64
		p    float64
	}{
		{SRNACK, DecodeStripe, 128 << 10, 1e-2},
		{SRNACK, DecodeStripe, 1 << 20, 1e-2},
		{SRNACK, DecodeStripe, 16 << 20, 1e-2},
		{SRNACK, DecodeStripe, 16 << 20, 1e-3},
		{SRNACK, DecodeStripe, 128 << 20, 1e-4},
		{ECXOR, DecodeStripe, 128 << 10, 1e-2},
		{ECXOR, DecodeStripe, 1 << 20, 1e-2},
		{ECXOR, DecodeStripe, 4<<20 + 12345, 1e-2},
		{ECMDS, DecodeStripe, 128 << 10, 1e-2},
		{ECMDS, DecodeStripe, 4 << 20, 5e-2},
		{ECXOR, DecodeChunk, 4 << 20, 1e-3},
		{ECMDS, DecodeChunk, 4 << 20, 1e-2},
	}
	for i, c := range cases {
		for _, sender := range []bool{false, true} {
			params := Params{MessageBytes: c.size, RateBitsPerSec: 400e9, RTT: 25 * monotime.Millisecond,
				HeaderBytes: 102, DropProb: c.p, Scheme: c.s, Decode: c.d, Retry: RetryPacket, AtSender: sender}
			name := fmt.Sprintf("%v/%v/%s/p=%g/sender=%v", c.s, c.d, sizeName(c.size), c.p, sender)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				pr, err := Predict(params)
				if err != nil {
					t.Fatal(err)
				}
				mc := MonteCarlo(params, runs, uint64(1000+i))
				if mc.Err != nil {
					t.Fatal(mc.Err)
				}
				// The sample mean's standard error, from the sample.
				var ss float64
				for _, x := range mc.Times {
					d := float64(x - mc.Mean)
					ss += d * d
				}
				se := math.Sqrt(ss/float64(runs-1)) / math.Sqrt(runs)
				tol := 0.03 * float64(pr.Mean)
				if c.s != SRNACK {
					tol = 1e-3 * float64(pr.Mean) // exact up to rounding
				}
				if d := math.Abs(float64(pr.Mean - mc.Mean)); d > tol+4*se {
					t.Errorf("mean: model %v, Monte Carlo %v (standard error %v)", pr.Mean, mc.Mean, monotime.Duration(se))
				}
			})
		}
	}
}

// Parity in proportion (reliability.ParityFor): a sub-message of n data
// chunks gets ceil(n*m/k) parity chunks, at least 1; the injection time
// charges exactly those, in both modes, so the parity over a message is
// the paper's ceil(C*m/k).
func TestShortParity(t *testing.T) {
	const chunk = 64 << 10
	cases := []struct {
		chunks, k, m int
		want         int // parity chunks of the message
	}{
		{1, 32, 8, 1},
		{2, 32, 8, 1},
		{4, 32, 8, 1},
		{5, 32, 8, 2},
		{32, 32, 8, 8},
		{33, 32, 8, 9},
		{40, 32, 8, 10},
		{64, 32, 8, 16},
		{3, 4, 3, 3},
		{1, 4, 3, 1},
		{2, 4, 3, 2},
	}
	for _, c := range cases {
		for _, d := range []DecodeModel{DecodeChunk, DecodeStripe} {
			for _, s := range []Scheme{ECMDS, ECXOR} {
				if s == ECXOR && c.k%c.m != 0 {
					continue
				}
				p := Params{MessageBytes: int64(c.chunks) * chunk, RateBitsPerSec: 400e9,
					RTT: monotime.Millisecond, Scheme: s, K: c.k, M: c.m, Decode: d}
				g, err := resolve(p)
				if err != nil {
					t.Fatal(err)
				}
				e := g.ec()
				parity := (e.subs-1)*c.m + e.mLast
				if parity != c.want || parity != (c.chunks*c.m+c.k-1)/c.k {
					t.Errorf("%d chunks (%d,%d): %d parity chunks, want %d", c.chunks, c.k, c.m, parity, c.want)
				}
				if want := float64(c.chunks+c.want) * g.tInj; math.Abs(e.injection-want) > 1 {
					t.Errorf("%d chunks (%d,%d) %v: injection %v ps, want %v", c.chunks, c.k, c.m, d, e.injection, want)
				}
				// The last sub-message's codewords carry its own parity.
				for _, cw := range e.last {
					if cw.tol != e.mLast || len(cw.parity) != e.mLast {
						t.Errorf("%d chunks (%d,%d): last codeword has %d parity, tolerance %d, want %d",
							c.chunks, c.k, c.m, len(cw.parity), cw.tol, e.mLast)
					}
				}
			}
		}
	}
}

// A shortened code with one parity chunk: two data chunks and one parity
// (128 KiB under (32,8)) decode iff at most one of the three shards of a
// stripe is lost, for MDS and XOR alike.
func TestShortParityDecode(t *testing.T) {
	const p = 1e-2
	for _, s := range []Scheme{ECMDS, ECXOR} {
		pr, err := Predict(Params{MessageBytes: 128 << 10, RateBitsPerSec: 400e9, RTT: monotime.Millisecond,
			DropProb: p, Scheme: s, Decode: DecodeStripe})
		if err != nil {
			t.Fatal(err)
		}
		stripeOK := math.Pow(1-p, 3) + 3*p*math.Pow(1-p, 2)
		want := 1 - math.Pow(stripeOK, 16)
		if math.Abs(pr.PFallback-want) > 1e-12 {
			t.Errorf("%v: P_fallback %.10g, want %.10g", s, pr.PFallback, want)
		}
	}
}

// The repair rounds: P(R <= r) = prod (1 - fail with data erasure p^(r+1)).
// One stripe of 2 data + 1 parity (a 2-packet message in 2 chunks of one
// packet, (32,8) shortened to 1 parity): it fails after r rounds iff both
// data packets are still missing, or one is and the parity was lost.
func TestRepairRoundsHandComputed(t *testing.T) {
	const p = 0.1
	params := Params{MessageBytes: 2 * 4096, ChunkBytes: 4096, RateBitsPerSec: 400e9, RTT: monotime.Millisecond,
		DropProb: p, Scheme: ECMDS, Decode: DecodeStripe, Retry: RetryPacket}
	g, err := resolve(params)
	if err != nil {
		t.Fatal(err)
	}
	e := g.ec()
	for r := range 5 {
		q := math.Pow(p, float64(r+1))
		fail := q*q + 2*q*(1-q)*p
		if got := g.ecRounds(e, r); math.Abs(got-(1-fail)) > 1e-15 {
			t.Errorf("round %d: P = %.15g, want %.15g", r, got, 1-fail)
		}
	}
}
