package model

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// At 400 Gbit/s one byte takes 8/400e9 s = 20 ps, so
// T_INJ(64 KiB) = 65536*20 = 1,310,720 ps and T_INJ(4 KiB) = 81,920 ps.
const (
	rate400 = 400e9
	rtt25   = 25 * monotime.Millisecond // RTT/2 = 12,500,000,000 ps
)

func near(got, want, rel float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= rel*math.Max(math.Abs(got), math.Abs(want))
}

func TestSRHandComputed(t *testing.T) {
	const (
		tChunk = 1310720 // T_INJ of 64 KiB at 400 Gbit/s
		t4K    = 81920   // T_INJ of 4 KiB
		half   = 12_500_000_000
		o4K    = 75_000_000_000 + t4K // O = RTT + 2*RTT + T_INJ
		t8K    = 163840               // T_INJ of an 8 KiB chunk (2 packets)
		o8K    = 75_000_000_000 + t8K
		n8K    = 25_000_000_000 + t8K // SR-NACK: O = RTT + T_INJ
	)
	type want struct{ mean, p50, p99, p999 monotime.Duration }
	tests := []struct {
		name string
		p    Params
		want want
	}{
		{
			// p = 0: T = T_INJ + RTT/2 = 1,310,720 + 12,500,000,000.
			name: "1 chunk p=0",
			p:    Params{MessageBytes: 64 << 10, RateBitsPerSec: rate400, RTT: rtt25, Scheme: SRRTO},
			want: want{12_501_310_720, 12_501_310_720, 12_501_310_720, 12_501_310_720},
		},
		{
			// Headers: (65536 + 16*64)*20 = 1,331,200 ps of injection.
			name: "1 chunk p=0 headers",
			p:    Params{MessageBytes: 64 << 10, HeaderBytes: 64, RateBitsPerSec: rate400, RTT: rtt25, Scheme: SRRTO},
			want: want{12_501_331_200, 12_501_331_200, 12_501_331_200, 12_501_331_200},
		},
		{
			// The sender sees completion one RTT/2 later: 12,501,310,720 + 12,500,000,000.
			name: "1 chunk p=0 at sender",
			p:    Params{MessageBytes: 64 << 10, RateBitsPerSec: rate400, RTT: rtt25, Scheme: SRRTO, AtSender: true},
			want: want{25_001_310_720, 25_001_310_720, 25_001_310_720, 25_001_310_720},
		},
		{
			// 64 KiB + 4 KiB: a full chunk and a 1-packet chunk,
			// T = 1,310,720 + 81,920 + 12,500,000,000.
			name: "short last chunk p=0",
			p:    Params{MessageBytes: 68 << 10, RateBitsPerSec: rate400, RTT: rtt25, Scheme: SRRTO},
			want: want{12_501_392_640, 12_501_392_640, 12_501_392_640, 12_501_392_640},
		},
		{
			// One 1-packet chunk, p_chunk = p = 1/2: E[Y-1] = q/(1-q) = 1, so
			// E[T] = T_INJ + RTT/2 + O = 81,920 + 12.5e9 + 75,000,081,920.
			// P(Y-1 <= r) = 1 - 2^-(r+1): the median is r = 0; 2^-(r+1) <= 0.01
			// first at r = 6 and <= 0.001 first at r = 9.
			name: "1 chunk q=1/2",
			p:    Params{MessageBytes: 4096, ChunkBytes: 4096, RateBitsPerSec: rate400, RTT: rtt25, DropProb: 0.5, Scheme: SRRTO},
			want: want{
				mean: t4K + half + o4K,    // 87,500,163,840
				p50:  t4K + half,          // 12,500,081,920
				p99:  t4K + half + 6*o4K,  // 462,500,573,440
				p999: t4K + half + 9*o4K}, // 687,500,819,200
		},
		{
			// SR-NACK: O = RTT + T_INJ = 25,000,081,920; mean T_INJ + RTT/2 + O.
			name: "1 chunk q=1/2 NACK",
			p:    Params{MessageBytes: 4096, ChunkBytes: 4096, RateBitsPerSec: rate400, RTT: rtt25, DropProb: 0.5, Scheme: SRNACK},
			want: want{
				mean: t4K + half + 25_000_081_920, // 37,500,163,840
				p50:  t4K + half,
				p99:  t4K + half + 6*25_000_081_920,
				p999: t4K + half + 9*25_000_081_920},
		},
		{
			// Two chunks, q = 1/2, O >> T: M = max(T + O*R0, 2T + O*R1).
			// E[max(R0,R1)] = sum_r [1 - (1-2^-(r+1))^2] = 2 - 1/3 = 5/3, and
			// the later chunk is the max iff R1 >= R0, P = 1 - (1 - 1/3)/2 = 2/3,
			// so E[M] = 5/3*O + T + 2/3*T = 5/3*(O + T);
			// E[T] = 5/3*(75e9 + 163,840) + 12.5e9 = 137,500,273,066.67.
			// CDF: at 2T + r*O it is (1-2^-(r+1))^2, at T + r*O it is
			// (1-2^-(r+1))(1-2^-r): 0.25 (2T), 0.375 (T+O), 0.5625 (2T+O) -> p50;
			// 0.98831 (T+7O), 0.99219 (2T+7O) -> p99;
			// 0.998536 (T+10O), 0.999024 (2T+10O) -> p999.
			name: "2 chunks q=1/2",
			p:    Params{MessageBytes: 8192, ChunkBytes: 4096, RateBitsPerSec: rate400, RTT: rtt25, DropProb: 0.5, Scheme: SRRTO},
			want: want{
				mean: 137_500_273_067,
				p50:  2*t4K + o4K + half,     // 87,500,245,760
				p99:  2*t4K + 7*o4K + half,   // 537,500,737,280
				p999: 2*t4K + 10*o4K + half}, // 762,500,983,040
		},
		{
			// RTT = 0, so O = T and retries interleave with first copies:
			// M = max(T + T*R0, 2T + T*R1) = T*(1 + max(R0, 1+R1)).
			// P(max(R0,1+R1) <= r) = (1-2^-(r+1))(1-2^-r) for r >= 1 (0 for r = 0);
			// E = 1 + sum_{r>=1} [2^-(r+1) + 2^-r - 2^-(2r+1)] = 1 + 1/2 + 1 - 1/6 = 7/3,
			// E[M] = 10/3*T = 273,066.67 ps. CDF: r=2 0.65625 -> p50 = 3T;
			// r=7 0.98831, r=8 0.99414 -> p99 = 9T; r=10 0.998536, r=11 0.999268 -> p999 = 12T.
			name: "2 chunks q=1/2 RTT=0",
			p:    Params{MessageBytes: 8192, ChunkBytes: 4096, RateBitsPerSec: rate400, DropProb: 0.5, Scheme: SRRTO},
			want: want{mean: 273_067, p50: 3 * t4K, p99: 9 * t4K, p999: 12 * t4K},
		},
		{
			// RetryChunk, one chunk of N = 2 packets at p = 1/2: the chunk
			// arrives whole with probability 1/4, p_chunk = 3/4, so
			// E[Y-1] = q/(1-q) = 3 and E[T] = T + RTT/2 + 3*O8K =
			// 163,840 + 12.5e9 + 225,000,491,520. P(Y-1 <= r) = 1 - (3/4)^(r+1):
			// 0.4375 (r=1), 0.578 (r=2) -> p50; (3/4)^16 = 0.010023,
			// (3/4)^17 = 0.0075 -> p99 at r = 16; (3/4)^24 = 0.001003,
			// (3/4)^25 = 0.00075 -> p999 at r = 24.
			name: "1 chunk N=2 p=1/2 chunk retry",
			p:    Params{MessageBytes: 8192, ChunkBytes: 8192, RateBitsPerSec: rate400, RTT: rtt25, DropProb: 0.5, Scheme: SRRTO},
			want: want{
				mean: t8K + half + 3*o8K,   // 237,500,655,360
				p50:  t8K + half + 2*o8K,   // 162,500,491,520
				p99:  t8K + half + 16*o8K,  // 1,212,502,785,280
				p999: t8K + half + 24*o8K}, // 1,812,504,096,000
		},
		{
			// RetryPacket, the same chunk: each packet needs its own
			// Geometric(1/2) attempts and the bitmap keeps what arrived, so
			// P(Y <= r) = (1 - 2^-r)^2 and
			// E[Y] = sum_{r>=0} (1 - (1-2^-r)^2) = sum_{r>=0} (2*2^-r - 4^-r)
			//      = 2*2 - 4/3 = 8/3,
			// E[Y-1] = 5/3 (against 3 for RetryChunk). E[T] = T + RTT/2 +
			// 5/3*O8K = 163,840 + 12.5e9 + 125,000,273,066.67
			// = 137,500,436,906.67. CDF at Y = 1, 2, ...: 0.25, 0.5625 -> p50
			// at Y = 2; (127/128)^2 = 0.98444, (255/256)^2 = 0.99220 -> p99 at
			// Y = 8; (1023/1024)^2 = 0.998048, (2047/2048)^2 = 0.999024 ->
			// p999 at Y = 11.
			name: "1 chunk N=2 p=1/2 packet retry",
			p:    Params{MessageBytes: 8192, ChunkBytes: 8192, RateBitsPerSec: rate400, RTT: rtt25, DropProb: 0.5, Scheme: SRRTO, Retry: RetryPacket},
			want: want{
				mean: 137_500_436_907,
				p50:  t8K + half + o8K,     // 87,500,327,680
				p99:  t8K + half + 7*o8K,   // 537,501,310,720
				p999: t8K + half + 10*o8K}, // 762,501,802,240
		},
		{
			// The same with SR-NACK: O = RTT + T_INJ = 25,000,163,840;
			// E[T] = 163,840 + 12.5e9 + 5/3*25,000,163,840 = 54,167,103,573.33.
			name: "1 chunk N=2 p=1/2 packet retry NACK",
			p:    Params{MessageBytes: 8192, ChunkBytes: 8192, RateBitsPerSec: rate400, RTT: rtt25, DropProb: 0.5, Scheme: SRNACK, Retry: RetryPacket, Timers: TimersPaper},
			want: want{
				mean: 54_167_103_573,
				p50:  t8K + half + n8K,
				p99:  t8K + half + 7*n8K,
				p999: t8K + half + 10*n8K},
		},
		{
			// RetryPacket, 12 KiB in 8 KiB chunks: chunk 0 has 2 packets
			// (R0 = max of two Geometric(1/2) retry counts), chunk 1 one
			// packet (R1 Geometric(1/2)); O >> T, and
			// M = max(T + O*R0, T + T1 + O*R1), T1 = 81,920.
			// P(max(R0,R1) <= r) = (1 - 2^-(r+1))^3, so with x = 2^-(r+1)
			// E[max] = sum_r (3x - 3x^2 + x^3) = 3 - 1 + 1/7 = 15/7.
			// Chunk 1 is the max iff R1 >= R0: P(R0 = 0) = 1/4,
			// P(R0 = r) = 2^-r - 3*4^-(r+1) for r >= 1, P(R1 >= r) = 2^-r, so
			// P = 1/4 + sum_{r>=1} (4^-r - 3/4*8^-r) = 1/4 + 1/3 - 3/28 = 10/21.
			// E[M] = 15/7*O8K + T + 10/21*T1
			//      = 160,714,636,800 + 163,840 + 39,009.52; E[T] = E[M] + RTT/2.
			// CDF: at T + r*O it is (1-2^-(r+1))^2 (1-2^-r), at T + T1 + r*O
			// (1-2^-(r+1))^3: 0.125, 0.28125 (T+O), 0.421875, 0.57422 (T+2O)
			// -> p50 = T + 2O; 0.98833 (T+T1+7O), 0.99221 (T+8O) -> p99;
			// 0.998536 (T+T1+10O), 0.999024 (T+11O) -> p999.
			name: "short last chunk N=2,1 p=1/2 packet retry",
			p:    Params{MessageBytes: 12 << 10, ChunkBytes: 8192, RateBitsPerSec: rate400, RTT: rtt25, DropProb: 0.5, Scheme: SRRTO, Retry: RetryPacket},
			want: want{
				mean: 173_214_839_650,
				p50:  t8K + 2*o8K + half,   // 162,500,491,520
				p99:  t8K + 8*o8K + half,   // 612,501,474,560
				p999: t8K + 11*o8K + half}, // 837,501,966,080
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pr, err := Predict(tc.p)
			if err != nil {
				t.Fatal(err)
			}
			got := want{pr.Mean, pr.P50, pr.P99, pr.P999}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// bruteSR computes E[max_i X_i] and quantiles of an srModel by enumerating
// every retry vector (R_0, ..., R_{n-1}) up to negligible probability: an
// independent check of the sweep in stats. A chunk of e units has the
// distribution of R_i from unitsPMF, which enumerates its units' own retry
// counts, so a chunk of N packets under RetryPacket is checked against the
// max of N independent geometric packets, not against (1 - p^r)^N.
func bruteSR(m srModel, levels []float64) (float64, []float64) {
	type pt struct{ v, w float64 }
	e, eLast := m.units()
	pmfs := map[[2]float64][]float64{}
	pmf := func(q float64, e int) []float64 {
		k := [2]float64{q, float64(e)}
		if pmfs[k] == nil {
			pmfs[k] = unitsPMF(q, e)
		}
		return pmfs[k]
	}
	var pts []pt
	var rec func(i int, best, w float64)
	rec = func(i int, best, w float64) {
		if i == m.n {
			pts = append(pts, pt{best, w})
			return
		}
		q, a, u := m.q, float64(i+1)*m.t, e
		if i == m.n-1 {
			q, a, u = m.qLast, m.end(), eLast
		}
		for r, pr := range pmf(q, u) {
			rec(i+1, max(best, a+m.o*float64(r)), w*pr)
		}
	}
	rec(0, 0, 1)
	slices.SortFunc(pts, func(x, y pt) int { return cmpF(x.v, y.v) })
	mean, cum := 0.0, 0.0
	for _, p := range pts {
		mean += p.v * p.w
	}
	qs := make([]float64, len(levels))
	j := 0
	for i, p := range pts {
		cum += p.w
		if i+1 < len(pts) && pts[i+1].v == p.v {
			continue
		}
		for j < len(levels) && cum >= levels[j]-1e-12 {
			qs[j] = p.v
			j++
		}
	}
	return mean, qs
}

// unitsPMF returns P(R = r), r = 0, 1, ..., for R the max of e independent
// retry counts, each Geometric with P(R_j = r) = (1-q) q^r, by enumerating
// every e-tuple (R_1, ..., R_e) up to negligible probability.
func unitsPMF(q float64, e int) []float64 {
	rmax := 0
	if q > 0 {
		rmax = int(math.Ceil(math.Log(1e-22) / math.Log(q)))
	}
	out := make([]float64, rmax+1)
	var rec func(j, best int, w float64)
	rec = func(j, best int, w float64) {
		if j == e {
			out[best] += w
			return
		}
		for r := 0; r <= rmax; r++ {
			rec(j+1, max(best, r), w*(1-q)*math.Pow(q, float64(r)))
		}
	}
	rec(0, 0, 1)
	return out
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestSRSweepMatchesBruteForce(t *testing.T) {
	levels := []float64{0.1, 0.5, 0.9, 0.99, 0.999}
	tests := []srModel{
		{n: 1, t: 7, dLast: 7, q: 0.3, qLast: 0.3, o: 100},
		{n: 2, t: 5, dLast: 2, q: 0.6, qLast: 0.1, o: 3},     // interleaved, short last chunk
		{n: 3, t: 1, dLast: 0.5, q: 0.5, qLast: 0.3, o: 1.7}, // O < span of the message
		{n: 3, t: 10, dLast: 10, q: 0.2, qLast: 0.2, o: 1000},
		{n: 3, t: 2, dLast: 2, q: 0.05, qLast: 0.05, o: 2}, // O = T: phases coincide
		{n: 4, t: 1, dLast: 1, q: 0.25, qLast: 0.25, o: 2.5},
		// RetryPacket: chunks of e packets, each lost with probability q.
		{n: 1, t: 7, dLast: 7, q: 0.5, qLast: 0.5, e: 2, eLast: 2, o: 100},
		{n: 1, t: 7, dLast: 7, q: 0.3, qLast: 0.3, e: 3, eLast: 3, o: 100},
		{n: 2, t: 5, dLast: 2, q: 0.5, qLast: 0.5, e: 2, eLast: 1, o: 3}, // interleaved, short last chunk
		{n: 3, t: 1, dLast: 0.5, q: 0.4, qLast: 0.4, e: 3, eLast: 2, o: 1.7},
		{n: 3, t: 10, dLast: 10, q: 0.2, qLast: 0.2, e: 2, eLast: 2, o: 1000},
		{n: 4, t: 1, dLast: 1, q: 0.25, qLast: 0.25, e: 2, eLast: 2, o: 2.5},
	}
	for _, m := range tests {
		t.Run(fmt.Sprintf("%+v", m), func(t *testing.T) {
			mean, qs, err := m.stats(levels)
			if err != nil {
				t.Fatal(err)
			}
			bm, bq := bruteSR(m, levels)
			if !near(mean, bm, 1e-12) {
				t.Errorf("mean %.15g, brute force %.15g", mean, bm)
			}
			for i := range levels {
				if !near(qs[i], bq[i], 1e-12) {
					t.Errorf("quantile %v: %.15g, brute force %.15g", levels[i], qs[i], bq[i])
				}
			}
		})
	}
}

// exactFail computes, with rational arithmetic, the failure probability
// 1 - P_dec of a full (k,m) codeword at erasure probability q and
// E[D*1{fail}] (D = erased data shards), straight from the paper's formulas:
// MDS P_dec = sum_{i<=m} C(k+m,i) q^i (1-q)^(k+m-i), and
// E[D*1{fail}] = k/(k+m) * sum_{x>m} x*C(k+m,x) q^x (1-q)^(k+m-x);
// XOR P_dec = g^m with g = (1-q)^n + n q (1-q)^(n-1), n = k/m + 1, and
// E[D*1{fail}] = m*((n-1)q - (n-1)q(1-q)^(n-1) * g^(m-1)).
func exactFail(s Scheme, k, m int, q *big.Rat) (fail, eD float64) {
	one := big.NewRat(1, 1)
	nq := new(big.Rat).Sub(one, q)
	pow := func(x *big.Rat, e int) *big.Rat {
		r := big.NewRat(1, 1)
		for range e {
			r.Mul(r, x)
		}
		return r
	}
	binom := func(n, x int) *big.Rat {
		return new(big.Rat).SetInt(new(big.Int).Binomial(int64(n), int64(x)))
	}
	f, e := new(big.Rat), new(big.Rat)
	if s == ECMDS {
		n := k + m
		for x := m + 1; x <= n; x++ {
			pmf := new(big.Rat).Mul(binom(n, x), new(big.Rat).Mul(pow(q, x), pow(nq, n-x)))
			f.Add(f, pmf)
			e.Add(e, new(big.Rat).Mul(pmf, big.NewRat(int64(x*k), int64(n))))
		}
	} else {
		n := k/m + 1
		g := new(big.Rat).Add(pow(nq, n), new(big.Rat).Mul(big.NewRat(int64(n), 1), new(big.Rat).Mul(q, pow(nq, n-1))))
		f.Sub(one, pow(g, m))
		dq := new(big.Rat).Mul(big.NewRat(int64(n-1), 1), q)
		e.Sub(dq, new(big.Rat).Mul(dq, new(big.Rat).Mul(pow(nq, n-1), pow(g, m-1))))
		e.Mul(e, big.NewRat(int64(m), 1))
	}
	ff, _ := f.Float64()
	ef, _ := e.Float64()
	return ff, ef
}

func TestDecodeProbabilityExact(t *testing.T) {
	for _, s := range []Scheme{ECMDS, ECXOR} {
		for _, km := range [][2]int{{4, 2}, {32, 8}, {16, 4}} {
			for _, qd := range []int64{1_000_000, 1000, 100, 10, 4} {
				k, m := km[0], km[1]
				q := big.NewRat(1, qd)
				qf, _ := q.Float64()
				cw := codeword{data: repeat(qf, k), parity: repeat(qf, m)}
				cw.tol = m
				f, ed, eo := cw.fail(s)
				wf, we := exactFail(s, k, m, q)
				if !near(f, wf, 1e-10) || !near(ed, we, 1e-10) {
					t.Errorf("%v (%d,%d) q=1/%d: fail %.17g E[D;fail] %.17g, exact %.17g %.17g", s, k, m, qd, f, ed, wf, we)
				}
				// E[D] = k*q splits into the failed and decoded parts.
				if !near(ed+eo, float64(k)*qf, 1e-12) {
					t.Errorf("%v (%d,%d) q=1/%d: E[D;fail]+E[D;ok] = %g, want k*q = %g", s, k, m, qd, ed+eo, float64(k)*qf)
				}
			}
		}
	}
}

func TestDecodeHandComputed(t *testing.T) {
	// One-packet chunks (ChunkBytes = MTU) make p_chunk = p = 0.1.
	// MDS (4,2): P_dec = 0.9^6 + 6*0.1*0.9^5 + 15*0.01*0.9^4
	//                  = 0.531441 + 0.354294 + 0.098415 = 0.98415.
	// XOR (4,2): n = 3, g = 0.9^3 + 3*0.1*0.9^2 = 0.729 + 0.243 = 0.972,
	//            P_dec = 0.972^2 = 0.944784.
	// Stripe mode with 4-packet chunks: P_dec^4 = 0.938091470606245 (MDS),
	// 0.796764763524756 (XOR).
	// A short last sub-message of one data chunk (5 chunks, k = 4) gets
	// ceil(1*2/4) = 1 parity chunk (reliability.ParityFor): MDS and XOR
	// alike fail iff both its chunks are lost, 0.01.
	base := Params{RateBitsPerSec: rate400, RTT: rtt25, DropProb: 0.1, K: 4, M: 2, ChunkBytes: 4096}
	tests := []struct {
		name      string
		scheme    Scheme
		decode    DecodeModel
		bytes     int64
		chunk     int
		pDec, pFb float64
	}{
		{"MDS L=1", ECMDS, DecodeChunk, 4 * 4096, 4096, 0.98415, 0.01585},
		{"MDS L=2", ECMDS, DecodeChunk, 8 * 4096, 4096, 0.98415, 1 - 0.98415*0.98415},          // 0.0314487775
		{"MDS L=3", ECMDS, DecodeChunk, 12 * 4096, 4096, 0.98415, 1 - 0.98415*0.98415*0.98415}, // 0.04661395...
		{"MDS short last", ECMDS, DecodeChunk, 5 * 4096, 4096, 0.98415, 1 - 0.98415*0.99},      // 0.0256915
		{"XOR L=1", ECXOR, DecodeChunk, 4 * 4096, 4096, 0.944784, 0.055216},
		{"XOR L=2", ECXOR, DecodeChunk, 8 * 4096, 4096, 0.944784, 1 - 0.944784*0.944784},
		{"XOR short last", ECXOR, DecodeChunk, 5 * 4096, 4096, 0.944784, 1 - 0.944784*0.99}, // 0.06466384
		{"MDS stripe", ECMDS, DecodeStripe, 4 * 16384, 16384, 0.938091470606245, 1 - 0.938091470606245},
		{"XOR stripe", ECXOR, DecodeStripe, 4 * 16384, 16384, 0.796764763524756, 1 - 0.796764763524756},
		// In chunk mode the same 4-packet chunks have p_chunk = 1 - 0.9^4 = 0.3439.
		{"MDS chunk 4-packet", ECMDS, DecodeChunk, 4 * 16384, 16384, mdsDec(6, 2, 0.3439), 1 - mdsDec(6, 2, 0.3439)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := base
			p.Scheme, p.Decode, p.MessageBytes, p.ChunkBytes = tc.scheme, tc.decode, tc.bytes, tc.chunk
			pr, err := Predict(p)
			if err != nil {
				t.Fatal(err)
			}
			if !near(pr.PDecode, tc.pDec, 1e-12) || !near(pr.PFallback, tc.pFb, 1e-10) {
				t.Errorf("PDecode %.15g PFallback %.15g, want %.15g %.15g", pr.PDecode, pr.PFallback, tc.pDec, tc.pFb)
			}
		})
	}
}

// mdsDec is the paper's formula evaluated directly.
func mdsDec(n, m int, q float64) float64 {
	s := 0.0
	for i := 0; i <= m; i++ {
		s += float64(new(big.Int).Binomial(int64(n), int64(i)).Int64()) * math.Pow(q, float64(i)) * math.Pow(1-q, float64(n-i))
	}
	return s
}

func TestECMeanHandComputed(t *testing.T) {
	// MDS (4,2), one 1-packet chunk each, p = p_chunk = 0.1, 4 chunks (L = 1).
	// T_base = (4 + 2)*81,920 + 12.5e9 = 12,500,491,520 ps.
	// P_fallback = 0.01585 (above). E[D;fail] = 4/6 * sum_{x>=3} x*pmf(x)
	//   = 2/3 * (3*0.01458 + 4*0.001215 + 5*0.000054 + 6*0.000001)
	//   = 2/3 * 0.048876 = 0.032584, F = ceil(0.032584/0.01585) = ceil(2.0558) = 3.
	// E[T] = T_base + P_fb*((1+b)*RTT + E[T_SR(3)] - RTT/2), b = 1, with
	// E[T_SR(3)] from brute-force enumeration. Quantiles: P_dec = 0.98415 >= 0.5,
	// so p50 = T_base; p99 and p999 are the repair's quantiles at
	// (0.99-0.98415)/0.01585 and (0.999-0.98415)/0.01585, shifted by
	// T_base + (1+b)*RTT - RTT/2.
	p := Params{MessageBytes: 4 * 4096, ChunkBytes: 4096, RateBitsPerSec: rate400, RTT: rtt25,
		DropProb: 0.1, Scheme: ECMDS, K: 4, M: 2}
	pr, err := Predict(p)
	if err != nil {
		t.Fatal(err)
	}
	if pr.RepairChunks != 3 || pr.Injection != 491520 || pr.SubMessages != 1 {
		t.Fatalf("F = %d, injection %v, L = %d; want 3, 491520ps, 1", pr.RepairChunks, pr.Injection, pr.SubMessages)
	}
	const tInj, base, pfb = 81920.0, 12_500_491_520.0, 0.01585
	o := 75e9 + tInj
	lv := []float64{(0.99 - 0.98415) / pfb, (0.999 - 0.98415) / pfb}
	em, eq := bruteSR(srModel{n: 3, t: tInj, dLast: tInj, q: 0.1, qLast: 0.1, o: o}, lv)
	tsr := em + 12.5e9
	wantMean := base + pfb*(50e9+tsr-12.5e9)
	shift := base + 50e9 - 12.5e9 + 12.5e9
	if !near(float64(pr.Mean), wantMean, 1e-11) {
		t.Errorf("mean %v, want %.0f", pr.Mean, wantMean)
	}
	if pr.P50 != base || !near(float64(pr.P99), shift+eq[0], 1e-12) || !near(float64(pr.P999), shift+eq[1], 1e-12) {
		t.Errorf("quantiles %v %v %v, want %.0f %.0f %.0f", pr.P50, pr.P99, pr.P999, base, shift+eq[0], shift+eq[1])
	}
}

// TestECRepairPacketRetry checks the fallback repair under RetryPacket
// against formulas evaluated independently, for MDS (4,1) with 2-packet
// chunks (N = 2) and p = 0.15, L = 1 (4 data chunks):
//
//   - chunk mode: p_chunk = 1 - 0.85^2 = 0.2775 and F = ceil(E[D;fail]/P_fb)
//     (exactFail at q = 111/400: E[D;fail]/P_fb = 1.8999, F = 2); RetryChunk
//     re-sends F whole chunks (RepairPackets = 2F = 4), RetryPacket the
//     missing packets, whose expected number per lost chunk is
//     N*p/p_chunk = 0.3/0.2775 = 40/37, so F' = ceil(1.8999*40/37) = 3;
//   - stripe mode: D counts lost packets, so F' = F.
//
// The mean is T_base + P_fb*((1+b)*RTT + E[T_SR] - RTT/2) with E[T_SR]
// from bruteSR on the repair: F' packets packed two to a chunk, each packet
// retried until it arrives.
func TestECRepairPacketRetry(t *testing.T) {
	const tInj, half = 163840.0, 12.5e9
	o := 75e9 + tInj
	for _, d := range []DecodeModel{DecodeChunk, DecodeStripe} {
		base := Params{MessageBytes: 4 * 8192, ChunkBytes: 8192, RateBitsPerSec: rate400, RTT: rtt25,
			DropProb: 0.15, Scheme: ECMDS, K: 4, M: 1, Decode: d, Timers: TimersPaper}
		var pfb, ed float64
		if d == DecodeChunk {
			pfb, ed = exactFail(ECMDS, 4, 1, big.NewRat(111, 400))
		} else {
			// Two stripes, each a (4,1) codeword of packets.
			f1, e1 := exactFail(ECMDS, 4, 1, big.NewRat(15, 100))
			pfb, ed = 1-(1-f1)*(1-f1), 2*e1
		}
		f := int(math.Ceil(ed / pfb))
		fp := f
		if d == DecodeChunk {
			fp = int(math.Ceil(ed / pfb * 40 / 37))
			if f != 2 || fp != 3 {
				t.Fatalf("F = %d, F' = %d; the comment says 2, 3", f, fp)
			}
		}
		for _, r := range []RetryModel{RetryChunk, RetryPacket} {
			p := base
			p.Retry = r
			pr, err := Predict(p)
			if err != nil {
				t.Fatal(err)
			}
			wantPkts := 2 * f
			rm := srModel{n: f, t: tInj, dLast: tInj, q: 0.2775, qLast: 0.2775, o: o}
			if r == RetryPacket {
				wantPkts = fp
				n := (fp + 1) / 2
				rm = srModel{n: n, t: tInj, dLast: tInj * float64(fp-2*(n-1)) / 2, q: 0.15, qLast: 0.15, e: 2, eLast: fp - 2*(n-1), o: o}
			}
			if !near(pr.PFallback, pfb, 1e-12) || pr.RepairChunks != f || pr.RepairPackets != wantPkts {
				t.Errorf("%v/%v: P_fb %.15g F %d packets %d, want %.15g %d %d", d, r, pr.PFallback, pr.RepairChunks, pr.RepairPackets, pfb, f, wantPkts)
			}
			em, _ := bruteSR(rm, nil)
			tBase := 5*tInj + half // 4 data and 1 parity chunks
			// (1+b)*RTT - RTT/2 before the repair, and its own RTT/2 after.
			want := tBase + pfb*(50e9-half+em+half)
			if math.Abs(float64(pr.Mean)-want) > 1 { // Mean is rounded to the picosecond
				t.Errorf("%v/%v: mean %d ps, want %.1f", d, r, int64(pr.Mean), want)
			}
			t.Logf("%v/%v: P_fb %.6g, F = %d, packets %d, mean %v", d, r, pfb, f, wantPkts, pr.Mean)
		}
	}
}

// TestRetryModelsCoincideForOnePacketChunks: with ChunkBytes = MTU every
// chunk is one packet, (1 - p^r)^1 = 1 - p_chunk^r, and the repair's
// missing packets are its chunks, so both retry models give the same
// prediction and the same Monte Carlo samples, for every scheme.
func TestRetryModelsCoincideForOnePacketChunks(t *testing.T) {
	for _, size := range []int64{4096, 100_000, 4 << 20, 64<<20 + 777} {
		for _, p := range []float64{1e-6, 1e-3, 1e-2, 0.2} {
			for _, s := range []Scheme{SRRTO, SRNACK, ECMDS, ECXOR} {
				for _, d := range []DecodeModel{DecodeChunk, DecodeStripe} {
					base := Params{MessageBytes: size, ChunkBytes: 4096, HeaderBytes: 98, Timers: TimersPaper, RateBitsPerSec: rate400,
						RTT: rtt25, DropProb: p, Scheme: s, Decode: d}
					pk := base
					pk.Retry = RetryPacket
					a, err := Predict(base)
					if err != nil {
						t.Fatal(err)
					}
					b, err := Predict(pk)
					if err != nil {
						t.Fatal(err)
					}
					if a != b {
						t.Errorf("%d B p=%g %v/%v: RetryChunk %+v\nRetryPacket %+v", size, p, s, d, a, b)
					}
					ma, mb := MonteCarlo(base, 200, 7), MonteCarlo(pk, 200, 7)
					if !slices.Equal(ma.Times, mb.Times) {
						t.Errorf("%d B p=%g %v/%v: Monte Carlo samples differ", size, p, s, d)
					}
				}
			}
		}
	}
}

// TestRetryPacketNeverSlower: the bitmap keeping packets across attempts
// can only help, P(Y <= r) = (1-p^r)^N >= 1 - (1-(1-p)^N)^r, so the
// RetryPacket mean and quantiles never exceed the RetryChunk ones, and at
// small p, where a lost chunk almost always lost a single packet, they
// nearly agree.
func TestRetryPacketNeverSlower(t *testing.T) {
	for _, size := range []int64{128 << 10, 16 << 20, 1 << 30} {
		for _, p := range []float64{1e-6, 1e-4, 1e-3, 1e-2} {
			for _, s := range []Scheme{SRRTO, SRNACK, ECMDS, ECXOR} {
				base := Params{MessageBytes: size, RateBitsPerSec: rate400, RTT: rtt25, DropProb: p, Scheme: s, Decode: DecodeStripe, Timers: TimersPaper}
				pk := base
				pk.Retry = RetryPacket
				a, err := Predict(base)
				if err != nil {
					t.Fatal(err)
				}
				b, err := Predict(pk)
				if err != nil {
					t.Fatal(err)
				}
				if b.Mean > a.Mean || b.P50 > a.P50 || b.P99 > a.P99 || b.P999 > a.P999 {
					t.Errorf("%s p=%g %v: RetryPacket %v %v %v %v slower than RetryChunk %v %v %v %v", sizeName(size), p, s,
						b.Mean, b.P50, b.P99, b.P999, a.Mean, a.P50, a.P99, a.P999)
				}
				if p <= 1e-4 && !near(float64(a.Mean), float64(b.Mean), 0.03) {
					t.Errorf("%s p=%g %v: RetryPacket %v, RetryChunk %v: more than 3%% apart", sizeName(size), p, s, b.Mean, a.Mean)
				}
			}
		}
	}
}

func TestParamErrors(t *testing.T) {
	ok := Params{MessageBytes: 1 << 20, RateBitsPerSec: rate400, RTT: rtt25, DropProb: 1e-3, Scheme: ECXOR}
	if _, err := Predict(ok); err != nil {
		t.Fatalf("valid params: %v", err)
	}
	tests := []struct {
		field string
		edit  func(*Params)
	}{
		{"MessageBytes", func(p *Params) { p.MessageBytes = 0 }},
		{"MessageBytes", func(p *Params) { p.MessageBytes = 1 << 50 }},
		{"MTU", func(p *Params) { p.MTU = -1 }},
		{"ChunkBytes", func(p *Params) { p.ChunkBytes = 5000 }},
		{"HeaderBytes", func(p *Params) { p.HeaderBytes = -1 }},
		{"RateBitsPerSec", func(p *Params) { p.RateBitsPerSec = 0 }},
		{"RateBitsPerSec", func(p *Params) { p.RateBitsPerSec = math.Inf(1) }},
		{"RTT", func(p *Params) { p.RTT = -1 }},
		{"DropProb", func(p *Params) { p.DropProb = 1 }},
		{"DropProb", func(p *Params) { p.DropProb = math.NaN() }},
		{"DropProb", func(p *Params) { p.DropProb = 0.5 }}, // p_chunk = 1 - 2^-16 > 0.99
		{"RTOFactor", func(p *Params) { p.RTOFactor = -1 }},
		{"Slack", func(p *Params) { p.Slack = -0.5 }},
		{"Scheme", func(p *Params) { p.Scheme = 0 }},
		{"K", func(p *Params) { p.K, p.M = 30, 8 }}, // XOR needs M | K
		{"K", func(p *Params) { p.K, p.M = -1, 8 }},
		{"M", func(p *Params) { p.K, p.M = 32, 0 }},
		{"Decode", func(p *Params) { p.Decode = 7 }},
		{"Retry", func(p *Params) { p.Retry = 2 }},
		{"Retry", func(p *Params) { p.Retry = -1 }},
	}
	for _, tc := range tests {
		p := ok
		tc.edit(&p)
		_, err := Predict(p)
		if err == nil || !strings.Contains(err.Error(), "Params."+tc.field+" ") {
			t.Errorf("%+v: error %v, want one naming Params.%s", p, err, tc.field)
		}
		if s := MonteCarlo(p, 10, 1); s.Err == nil {
			t.Errorf("%+v: MonteCarlo accepted invalid params", p)
		}
	}
	if s := MonteCarlo(ok, 0, 1); s.Err == nil {
		t.Error("MonteCarlo accepted runs = 0")
	}
}

func TestRingAllReduce(t *testing.T) {
	tests := []struct {
		hosts int
		step  monotime.Duration
		want  monotime.Duration
	}{
		{1, monotime.Millisecond, 0},
		{2, monotime.Millisecond, 2 * monotime.Millisecond},
		{8, 3 * monotime.Millisecond, 42 * monotime.Millisecond}, // (16-2)*3 ms
	}
	for _, tc := range tests {
		got, err := RingAllReduce(tc.hosts, tc.step)
		if err != nil || got != tc.want {
			t.Errorf("RingAllReduce(%d, %v) = %v, %v; want %v", tc.hosts, tc.step, got, err, tc.want)
		}
	}
	if _, err := RingAllReduce(0, monotime.Millisecond); err == nil {
		t.Error("RingAllReduce accepted 0 hosts")
	}
}

// TestHeadlineScenario logs the paper's headline grid (400 Gbit/s, 25 ms
// RTT) and checks the model's qualitative claims on it: NACKs never hurt
// SR, and EC with the MDS (32,8) code beats SR-RTO at drop rates of 1e-4
// and above for every size.
func TestHeadlineScenario(t *testing.T) {
	schemes := []struct {
		name string
		s    Scheme
		d    DecodeModel
	}{
		{"SR-RTO", SRRTO, DecodeChunk}, {"SR-NACK", SRNACK, DecodeChunk},
		{"MDS", ECMDS, DecodeChunk}, {"XOR", ECXOR, DecodeChunk},
		{"MDS/stripe", ECMDS, DecodeStripe}, {"XOR/stripe", ECXOR, DecodeStripe},
	}
	head := fmt.Sprintf("%-9s %-7s", "size", "p")
	for _, s := range schemes {
		head += fmt.Sprintf(" %17s", s.name)
	}
	t.Log("mean (p99.9) completion time in ms:")
	t.Log(head)
	for _, size := range []int64{128 << 10, 16 << 20, 1 << 30} {
		for _, p := range []float64{1e-6, 1e-4, 1e-2} {
			line := fmt.Sprintf("%-9s %-7g", sizeName(size), p)
			means := map[string]float64{}
			for _, s := range schemes {
				pr, err := Predict(Params{MessageBytes: size, RateBitsPerSec: rate400, RTT: rtt25, DropProb: p, Scheme: s.s, Decode: s.d})
				if err != nil {
					t.Fatal(err)
				}
				means[s.name] = pr.Mean.Seconds() * 1e3
				line += fmt.Sprintf(" %8.2f (%6.1f)", means[s.name], pr.P999.Seconds()*1e3)
			}
			t.Log(line)
			if means["SR-NACK"] > means["SR-RTO"] {
				t.Errorf("%s p=%g: SR-NACK %.2f ms slower than SR-RTO %.2f ms", sizeName(size), p, means["SR-NACK"], means["SR-RTO"])
			}
			if p >= 1e-4 && means["MDS"] >= means["SR-RTO"] {
				t.Errorf("%s p=%g: EC MDS %.2f ms not faster than SR-RTO %.2f ms", sizeName(size), p, means["MDS"], means["SR-RTO"])
			}
		}
	}
}

// TestRetryPacketScenario logs the headline grid under RetryPacket with the
// simulator's framing (102-byte headers, RTT = 2*(12.5 ms + 2 us), stripe
// decoding) beside the paper's RetryChunk, and checks the same qualitative
// claims as TestHeadlineScenario.
func TestRetryPacketScenario(t *testing.T) {
	rtt := 2 * (12500*monotime.Microsecond + 2*monotime.Microsecond)
	schemes := []Scheme{SRRTO, SRNACK, ECMDS, ECXOR}
	t.Log("mean completion time in ms, RetryPacket (RetryChunk):")
	t.Logf("%-7s %-7s %17s %17s %17s %17s", "size", "p", "SR-RTO", "SR-NACK", "MDS", "XOR")
	for _, size := range []int64{128 << 10, 16 << 20, 1 << 30} {
		for _, p := range []float64{1e-6, 1e-4, 1e-2} {
			line := fmt.Sprintf("%-7s %-7g", sizeName(size), p)
			means := map[Scheme]float64{}
			for _, s := range schemes {
				var ms [2]float64
				for i, r := range []RetryModel{RetryPacket, RetryChunk} {
					pr, err := Predict(Params{MessageBytes: size, HeaderBytes: 102, RateBitsPerSec: rate400, RTT: rtt,
						DropProb: p, Scheme: s, Decode: DecodeStripe, Retry: r})
					if err != nil {
						t.Fatal(err)
					}
					ms[i] = pr.Mean.Seconds() * 1e3
				}
				means[s] = ms[0]
				line += fmt.Sprintf(" %8.2f (%6.2f)", ms[0], ms[1])
			}
			t.Log(line)
			if means[SRNACK] > means[SRRTO] {
				t.Errorf("%s p=%g: SR-NACK %.2f ms slower than SR-RTO %.2f ms", sizeName(size), p, means[SRNACK], means[SRRTO])
			}
			if p >= 1e-4 && means[ECMDS] >= means[SRRTO] {
				t.Errorf("%s p=%g: EC MDS %.2f ms not faster than SR-RTO %.2f ms", sizeName(size), p, means[ECMDS], means[SRRTO])
			}
		}
	}
}

func sizeName(b int64) string {
	switch {
	case b >= 1<<30 && b%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", b>>30)
	case b >= 1<<20 && b%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", b>>20)
	case b >= 1<<10 && b%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", b>>10)
	}
	return fmt.Sprintf("%dB", b)
}

// BenchmarkPredictSR1GiB measures the model's budget: a 1 GiB, p = 1e-2
// SR evaluation, which scheme auto runs per message, should stay well
// under 100 ms.
func BenchmarkPredictSR1GiB(b *testing.B) {
	p := Params{MessageBytes: 1 << 30, RateBitsPerSec: rate400, RTT: rtt25, DropProb: 1e-2, Scheme: SRRTO}
	for b.Loop() {
		if _, err := Predict(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPredictSR1GiBPacket(b *testing.B) {
	p := Params{MessageBytes: 1 << 30, RateBitsPerSec: rate400, RTT: rtt25, DropProb: 1e-2, Scheme: SRRTO, Retry: RetryPacket}
	for b.Loop() {
		if _, err := Predict(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPredictSR1GiBp01(b *testing.B) {
	p := Params{MessageBytes: 1 << 30, RateBitsPerSec: rate400, RTT: rtt25, DropProb: 1e-1, Scheme: SRRTO}
	for b.Loop() {
		if _, err := Predict(p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPredictECMDS1GiB(b *testing.B) {
	p := Params{MessageBytes: 1 << 30, RateBitsPerSec: rate400, RTT: rtt25, DropProb: 1e-2, Scheme: ECMDS}
	for b.Loop() {
		if _, err := Predict(p); err != nil {
			b.Fatal(err)
		}
	}
}
