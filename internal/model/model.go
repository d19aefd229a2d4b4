package model

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// Scheme is the reliability scheme a prediction is for.
type Scheme int

// Schemes.
const (
	// SRRTO is selective repeat with a per-chunk timer RTO = RTT + a*RTT.
	SRRTO Scheme = iota + 1
	// SRNACK is selective repeat where the receiver NACKs gaps: a lost
	// chunk is resent about one RTT after it was first sent.
	SRNACK
	// ECMDS is erasure coding with an MDS (Reed-Solomon) code: a
	// sub-message of k+m chunks decodes from any k of them.
	ECMDS
	// ECXOR is erasure coding with m XOR parities: parity i covers the
	// data chunks j with j mod m = i, so each group of k/m+1 chunks
	// tolerates one loss.
	ECXOR
)

// String returns the scheme's name as the CLI spells it.
func (s Scheme) String() string {
	switch s {
	case SRRTO:
		return "sr-rto"
	case SRNACK:
		return "sr-nack"
	case ECMDS:
		return "ec"
	case ECXOR:
		return "xor"
	}
	return fmt.Sprintf("Scheme(%d)", int(s))
}

// DecodeModel selects how the EC decode probability is modeled.
type DecodeModel int

const (
	// DecodeChunk is the paper's chunk-level model: a sub-message is a
	// codeword of k+m chunks, each erased with probability p_chunk.
	DecodeChunk DecodeModel = iota
	// DecodeStripe models this repository's implementation: each of the N
	// packet positions ("stripes") of a sub-message is its own codeword of
	// k+m packets, each erased with probability p, and a sub-message
	// decodes iff all its stripes decode: P_dec_stripe = P_dec(q=p)^N.
	DecodeStripe
)

// RetryModel selects how selective repeat models the number of attempts
// Y_i a chunk needs (for SR-RTO, SR-NACK and EC's SR repair).
type RetryModel int

const (
	// RetryChunk is the paper's model: an attempt delivers the chunk only
	// if all N_i of its packets arrive in that same attempt, so
	//
	//	P(Y_i <= r) = 1 - p_chunk,i^r,   p_chunk,i = 1 - (1-p)^N_i,
	//
	// that is Y_i ~ Geometric(1 - p_chunk,i) and E[Y_i] = 1/(1-p_chunk,i).
	RetryChunk RetryModel = iota
	// RetryPacket models a receive bitmap that accumulates packets across
	// attempts, as this repository's implementation and SDR's hardware
	// do: a retransmission only needs the packets still missing to
	// arrive. Packet j of chunk i needs Y_ij ~ Geometric(1-p) attempts,
	// independently, and the chunk completes at Y_i = max_j Y_ij:
	//
	//	P(Y_i <= r) = (1 - p^r)^N_i,
	//
	// with N_i the packets of chunk i (the last chunk may have fewer).
	// For N_i = 1 both models coincide. The retry period O is the same
	// in both (a retransmission is still assumed to take T_INJ).
	//
	// EC's fallback repair re-sends only the missing data packets (see
	// Prediction.RepairPackets), each retried until it arrives.
	RetryPacket
)

// String returns the model's name.
func (r RetryModel) String() string {
	switch r {
	case RetryChunk:
		return "chunk"
	case RetryPacket:
		return "packet"
	}
	return fmt.Sprintf("RetryModel(%d)", int(r))
}

// Defaults for the zero values of Params.
const (
	DefaultChunkBytes = 64 << 10
	DefaultMTU        = 4096
	DefaultRTOFactor  = 2 // a in RTO = RTT + a*RTT: SR-RTO times out after 3 RTT
	DefaultK          = 32
	DefaultM          = 8
	DefaultSlack      = 1 // b in FTO = injection + b*RTT
)

// MaxChunkDrop is the largest chunk drop probability p_chunk the model
// accepts. Beyond it SR needs thousands of retry rounds and the numbers mean
// little.
const MaxChunkDrop = 0.99

// MaxChunks bounds C = ceil(M/chunk) (256 GiB at 64 KiB chunks).
const MaxChunks = 1 << 22

// Params are the model's inputs. Zero values of the fields marked so take
// the defaults above.
type Params struct {
	// MessageBytes is M, the message size in bytes (>= 1).
	MessageBytes int64
	// ChunkBytes is the bitmap chunk size in bytes, a positive multiple
	// of MTU; zero means DefaultChunkBytes (64 KiB).
	ChunkBytes int
	// MTU is the packet payload size in bytes (>= 1); zero means
	// DefaultMTU (4096).
	MTU int
	// HeaderBytes is the per-packet header overhead in bytes (>= 0),
	// counted in injection times only; zero (the default) ignores headers.
	HeaderBytes int
	// RateBitsPerSec is the link rate in bits per second (> 0).
	RateBitsPerSec float64
	// RTT is the round-trip time (>= 0).
	RTT monotime.Duration
	// DropProb is p, the independent per-packet drop probability,
	// 0 <= p < 1 with p_chunk = 1-(1-p)^N <= MaxChunkDrop.
	DropProb float64
	// Scheme is the reliability scheme.
	Scheme Scheme
	// RTOFactor is a in RTO = RTT + a*RTT (>= 0); zero means
	// DefaultRTOFactor (2). Used by SR-RTO and by EC's SR repair.
	RTOFactor float64
	// K and M are the EC code's data and parity chunks per sub-message
	// (K >= 1, M >= 1, and for ECXOR K divisible by M); both zero means
	// DefaultK, DefaultM (32, 8).
	K, M int
	// Slack is b, the EC fallback slack in RTTs (>= 0); zero means
	// DefaultSlack (1), as in the reliability package (b = 0 itself cannot
	// be expressed; use a tiny positive value).
	Slack float64
	// Decode selects the EC decode-probability model.
	Decode DecodeModel
	// Retry selects the SR retry model; the zero value, RetryChunk, is
	// the paper's (a chunk must arrive whole in one attempt), RetryPacket
	// lets the receive bitmap accumulate packets across attempts.
	Retry RetryModel
	// AtSender predicts when the sender sees completion: every time gets
	// one more RTT/2 for the final ACK. Otherwise times are when the
	// receiver holds the whole message.
	AtSender bool
	// Timers selects whose loss-recovery timing SR-NACK and EC's repair
	// follow (see Timers); the zero value, TimersAuto, is this
	// repository's implementation under RetryPacket and the paper's
	// under RetryChunk.
	Timers Timers
	// NackFraction is the SR-NACK receiver's reordering wait d as a
	// fraction of the RTT, d = max(NackFraction*RTT, 1 us) (implementation
	// timers only); zero means the reliability package's default, 1/8.
	NackFraction float64
	// RenackRTTs is the receiver's re-NACK period in RTTs, before the
	// per-packet term (implementation timers only); zero means
	// DefaultRenackRTTs (1.5), internal/core's renackDelay.
	RenackRTTs float64
	// LosslessAcks: control packets (NACKs, the final ACK) are never
	// dropped. The zero value drops them with DropProb like data, as the
	// simulator's trunk does in both directions (implementation timers
	// only; the paper's model has no control losses).
	LosslessAcks bool
}

// Prediction is the model's output. Times are measured from the injection
// of the message's first packet.
type Prediction struct {
	// Mean is E[T], the expected completion time.
	Mean monotime.Duration
	// P50, P99 and P999 are quantiles of T: the smallest t with
	// P(T <= t) >= 0.5, 0.99, 0.999. They come from the model's exact CDF
	// (for EC, the mixture of the no-fallback time and the shifted SR
	// repair time), not from simulation.
	P50, P99, P999 monotime.Duration

	// PDecode is P_dec, the probability that one full sub-message of k
	// data chunks decodes (under the selected DecodeModel). EC only.
	PDecode float64
	// PFallback is P_fallback = 1 - prod_s P_dec(s), the probability that
	// at least one sub-message cannot be decoded. EC only.
	PFallback float64
	// RepairChunks is F, the number of chunks the model re-sends with SR
	// when the fallback fires (EC only; 0 when PFallback is 0). In stripe
	// mode F counts lost data packets, each assumed in its own chunk.
	RepairChunks int
	// RepairPackets is the number of packets the repair re-sends: F*N
	// (whole chunks) under RetryChunk; under RetryPacket only the missing
	// data packets, F' = ceil(E[erased data packets of the failed
	// codewords | fallback]) (EC only; 0 when PFallback is 0).
	RepairPackets int

	// Chunks is C, PacketsPerChunk is N, SubMessages is L (EC only).
	Chunks, PacketsPerChunk, SubMessages int
	// PChunk is p_chunk = 1 - (1-p)^N.
	PChunk float64
	// TInj is T_INJ, the injection time of one full chunk.
	TInj monotime.Duration
	// RetryPeriod is O, SR's retry period (for EC, that of the repair).
	RetryPeriod monotime.Duration
	// Injection is the time to inject the whole message (for EC, data and
	// parity) once.
	Injection monotime.Duration
}

// quantileLevels are the levels of Prediction's P50, P99, P999.
var quantileLevels = []float64{0.5, 0.99, 0.999}

// geometry is the resolved, validated form of Params.
type geometry struct {
	p           Params
	mtu, chunk  int
	n           int     // N, packets per full chunk
	c           int     // C, chunks
	nLast       int     // packets in the last chunk
	npkts       int64   // packets in the message
	tInj        float64 // T_INJ in ps
	dLast       float64 // injection time of the last chunk in ps
	q, qLast    float64 // p_chunk of a full chunk and of the last chunk
	rtt         float64 // ps
	a, b        float64
	k, m        int
	extra       float64 // RTT/2 when AtSender
	psPerByte   float64 // ps to inject one byte
	headerBytes int
	impl        bool    // implementation timers (Params.Timers)
	tPkt        float64 // injection time of one full packet (ps)
	tRx         float64 // the receiver's estimate of it (ps): MTU + parity header
	nackDelay   float64 // d, SR-NACK's reordering wait (ps)
	renack      float64 // RenackRTTs*RTT (ps)
}

func fieldErr(field string, value any, want string) error {
	return fmt.Errorf("model: Params.%s = %v: %s", field, value, want)
}

// resolve validates p, applies defaults and derives the geometry.
func resolve(p Params) (*geometry, error) {
	g := &geometry{p: p, mtu: p.MTU, chunk: p.ChunkBytes, a: p.RTOFactor, b: p.Slack, k: p.K, m: p.M}
	if g.mtu == 0 {
		g.mtu = DefaultMTU
	}
	if g.chunk == 0 {
		g.chunk = DefaultChunkBytes
	}
	if g.a == 0 {
		g.a = DefaultRTOFactor
	}
	if g.b == 0 {
		g.b = DefaultSlack
	}
	switch {
	case p.MessageBytes < 1:
		return nil, fieldErr("MessageBytes", p.MessageBytes, "want >= 1")
	case g.mtu < 1:
		return nil, fieldErr("MTU", p.MTU, "want >= 1 (0 means 4096)")
	case g.chunk < 1 || g.chunk%g.mtu != 0:
		return nil, fieldErr("ChunkBytes", p.ChunkBytes, fmt.Sprintf("want a positive multiple of MTU (%d); 0 means 64 KiB", g.mtu))
	case p.HeaderBytes < 0:
		return nil, fieldErr("HeaderBytes", p.HeaderBytes, "want >= 0")
	case !(p.RateBitsPerSec > 0) || math.IsInf(p.RateBitsPerSec, 0):
		return nil, fieldErr("RateBitsPerSec", p.RateBitsPerSec, "want a finite rate > 0 bits/s")
	case p.RTT < 0:
		return nil, fieldErr("RTT", p.RTT, "want >= 0")
	case !(p.DropProb >= 0 && p.DropProb < 1):
		return nil, fieldErr("DropProb", p.DropProb, "want 0 <= p < 1")
	case !(g.a >= 0) || math.IsInf(g.a, 0):
		return nil, fieldErr("RTOFactor", p.RTOFactor, "want a finite value >= 0 (0 means 2)")
	case !(g.b >= 0) || math.IsInf(g.b, 0):
		return nil, fieldErr("Slack", p.Slack, "want a finite value >= 0 (0 means 1)")
	case p.Retry != RetryChunk && p.Retry != RetryPacket:
		return nil, fieldErr("Retry", p.Retry, "want RetryChunk (0) or RetryPacket (1)")
	case p.Timers < TimersAuto || p.Timers > TimersImpl:
		return nil, fieldErr("Timers", p.Timers, "want TimersAuto (0), TimersPaper (1) or TimersImpl (2)")
	case !(p.NackFraction >= 0) || math.IsInf(p.NackFraction, 0):
		return nil, fieldErr("NackFraction", p.NackFraction, "want a finite value >= 0 (0 means 1/8)")
	case !(p.RenackRTTs >= 0) || math.IsInf(p.RenackRTTs, 0):
		return nil, fieldErr("RenackRTTs", p.RenackRTTs, "want a finite value >= 0 (0 means 1.5)")
	}
	switch p.Scheme {
	case SRRTO, SRNACK:
	case ECMDS, ECXOR:
		if g.k == 0 && g.m == 0 {
			g.k, g.m = DefaultK, DefaultM
		}
		if g.k < 1 {
			return nil, fieldErr("K", p.K, "want >= 1 (K = M = 0 means 32, 8)")
		}
		if g.m < 1 {
			return nil, fieldErr("M", p.M, "want >= 1 (K = M = 0 means 32, 8)")
		}
		if p.Scheme == ECXOR && g.k%g.m != 0 {
			return nil, fieldErr("K", p.K, fmt.Sprintf("want a multiple of M (%d) for the XOR code", g.m))
		}
		if p.Decode != DecodeChunk && p.Decode != DecodeStripe {
			return nil, fieldErr("Decode", p.Decode, "want DecodeChunk (0) or DecodeStripe (1)")
		}
	default:
		return nil, fieldErr("Scheme", p.Scheme, "want SRRTO, SRNACK, ECMDS or ECXOR")
	}
	chunks := (p.MessageBytes + int64(g.chunk) - 1) / int64(g.chunk)
	if chunks > MaxChunks {
		return nil, fieldErr("MessageBytes", p.MessageBytes,
			fmt.Sprintf("want at most %d chunks of ChunkBytes (%d)", MaxChunks, g.chunk))
	}
	g.c = int(chunks)
	g.n = g.chunk / g.mtu
	g.npkts = (p.MessageBytes + int64(g.mtu) - 1) / int64(g.mtu)
	lastBytes := p.MessageBytes - int64(g.c-1)*int64(g.chunk)
	g.nLast = int((lastBytes + int64(g.mtu) - 1) / int64(g.mtu))
	g.headerBytes = p.HeaderBytes
	// T_INJ = (bytes + packets*header) * 8 / rate, in picoseconds.
	g.psPerByte = 8 * float64(monotime.Second) / p.RateBitsPerSec
	g.tInj = g.inject(int64(g.chunk), g.n)
	g.dLast = g.inject(lastBytes, g.nLast)
	// p_chunk = 1 - (1-p)^N.
	g.q = chunkDrop(p.DropProb, g.n)
	g.qLast = chunkDrop(p.DropProb, g.nLast)
	if g.q > MaxChunkDrop {
		return nil, fieldErr("DropProb", p.DropProb,
			fmt.Sprintf("chunk drop probability 1-(1-p)^%d = %.4g exceeds %g; lower DropProb or ChunkBytes", g.n, g.q, MaxChunkDrop))
	}
	g.rtt = float64(p.RTT)
	if p.AtSender {
		g.extra = g.rtt / 2
	}
	g.resolveTimers()
	return g, nil
}

// inject returns the injection time in ps of bytes of payload in pkts packets.
func (g *geometry) inject(bytes int64, pkts int) float64 {
	return float64(bytes+int64(pkts)*int64(g.headerBytes)) * g.psPerByte
}

// chunkDrop is p_chunk = 1 - (1-p)^n, computed without cancellation (and
// exactly p for n = 1, so that both retry models see the same number).
func chunkDrop(p float64, n int) float64 {
	if n == 1 {
		return p
	}
	return -math.Expm1(float64(n) * math.Log1p(-p))
}

// srModel is the SR completion model of a run of chunks injected back to
// back from time 0: chunk i (0-based) starts at s_i = i*T_INJ, takes d_i to
// inject (T_INJ, or dLast for the last chunk) and is retried every O, so it
// is received at
//
//	X_i = s_i + d_i + O*(Y_i - 1)
//
// plus the one-way delay. Chunk i consists of e_i independent units, each
// lost in an attempt with probability q_i until it arrives once, and the
// chunk completes when all have:
//
//	P(Y_i <= r) = (1 - q_i^r)^e_i.
//
// RetryChunk is e_i = 1, q_i = p_chunk,i (Y_i ~ Geometric(1 - p_chunk,i));
// RetryPacket is e_i = N_i packets, q_i = p. The message is complete at
//
//	T_SR = max_i X_i + RTT/2
//
// (for full chunks, max_i(i*T_INJ + O*(Y_i-1)) + T_INJ + RTT/2). Retries
// are assumed not to queue behind other traffic (the paper's model).
type srModel struct {
	n        int     // chunks
	t, dLast float64 // T_INJ and the last chunk's injection time (ps)
	q, qLast float64 // per-attempt loss probability of a unit, full and last chunk
	e, eLast int     // units per full and last chunk; 0 means 1
	o        float64 // O, retry period (ps)
}

// units returns e and eLast with 0 read as 1.
func (s srModel) units() (e, eLast int) { return max(s.e, 1), max(s.eLast, 1) }

// end returns A = max_i (s_i + d_i), the time the last chunk's first copy
// is injected: every X_i is A or later for the last chunk, so max_i X_i >= A.
func (s srModel) end() float64 { return float64(s.n-1)*s.t + s.dLast }

// stats returns E[max_i X_i] and, for each of the ascending levels in
// (0,1), the quantile min{t : P(max_i X_i <= t) >= level}.
//
// With R_i = Y_i - 1 and a_i = s_i + d_i, the CDF of the maximum is
//
//	P(max_i X_i <= t) = prod_i P(R_i <= floor((t - a_i)/O))
//	                  = prod_i (1 - q_i^(floor((t-a_i)/O) + 1))^e_i,
//
// a step function of t. Writing t = A + x, chunk i's factor steps up at
// x = phi_i + n*O (n = 0,1,...), where, with delta_i = A - a_i,
// r0_i = floor(delta_i/O) is its retry count at x = 0 and
// phi_i = (r0_i + 1)*O - delta_i is in (0, O]. Sorting the C phases once
// turns the integral
//
//	E[max_i X_i] = A + integral_0^inf (1 - P(max <= A + x)) dx
//
// into a sweep of C events per retry round, each updating one factor of
// log P(max <= t) in O(1) from a table of e*log(1 - q^(r+1)) per class
// (full chunks, last chunk) and round. The survival function is integrated
// exactly between events; the sweep stops when the union bound
// sum_i e_i*q_i^(r_i+1) on the survival function bounds the rest of the
// integral below 1e-13 of the mean, so the result is exact to about float64
// precision.
func (s srModel) stats(levels []float64) (mean float64, quantiles []float64, err error) {
	a := s.end()
	quantiles = make([]float64, len(levels))
	if s.q == 0 && s.qLast == 0 {
		for i := range quantiles {
			quantiles[i] = a
		}
		return a, quantiles, nil
	}
	type event struct {
		phi float64
		r0  int32
		cls int32 // 0: full chunk, 1: last chunk
	}
	evs := make([]event, s.n)
	r0max := 0
	for i := 0; i < s.n; i++ {
		var delta float64
		if i < s.n-1 {
			delta = float64(s.n-2-i)*s.t + s.dLast
		}
		r0 := math.Floor(delta / s.o)
		phi := (r0+1)*s.o - delta
		if phi <= 0 { // rounding: delta a hair below a multiple of O
			r0++
			phi += s.o
		}
		cls := int32(0)
		if i == s.n-1 {
			cls = 1
		}
		evs[i] = event{phi: phi, r0: int32(r0), cls: cls}
		r0max = max(r0max, int(r0))
	}
	slices.SortFunc(evs, func(x, y event) int { return cmp.Compare(x.phi, y.phi) })
	qs := [2]float64{s.q, s.qLast}
	e, eLast := s.units()
	es := [2]float64{float64(e), float64(eLast)}
	// hist[c][v] counts the chunks of class c with r0 = v, so that
	// log P(max <= A + n*O) = sum_c sum_v hist[c][v]*e_c*log(1 - q_c^(v+n+1))
	// is recomputed exactly at the start of every round, and the union
	// bound U_n = sum_c q_c^(n+1) * e_c * sum_v hist[c][v]*q_c^(v+1) is cheap.
	hist := [2][]int{make([]int, r0max+1), make([]int, r0max+1)}
	for _, e := range evs {
		hist[e.cls][e.r0]++
	}
	var base [2]float64
	for c := range 2 {
		for v, k := range hist[c] {
			if k > 0 && qs[c] > 0 {
				base[c] += float64(k) * math.Pow(qs[c], float64(v+1))
			}
		}
		base[c] *= es[c]
	}
	qmax := max(s.q, s.qLast)
	// tab[c][r] = e_c*log(1 - q_c^(r+1)), grown as the sweep advances.
	var tab [2][]float64
	var pw [2]float64
	for c := range 2 {
		pw[c] = qs[c]
	}
	grow := func(size int) {
		for c := range 2 {
			for len(tab[c]) < size {
				tab[c] = append(tab[c], es[c]*math.Log1p(-pw[c]))
				pw[c] *= qs[c]
			}
		}
	}
	logLv := make([]float64, len(levels))
	for i, l := range levels {
		if !(l > 0 && l < 1) {
			return 0, nil, fmt.Errorf("model: quantile level %v outside (0,1)", l)
		}
		// A hair of tolerance so that ties (P = level exactly, as with
		// p_chunk = 1/2) resolve to the step where the CDF reaches level.
		logLv[i] = math.Log(l) - 1e-12
	}
	found := 0
	logF := 0.0
	integral, x := 0.0, 0.0
	const maxRounds = 1 << 20
	for round := 0; ; round++ {
		if round == maxRounds {
			return 0, nil, errors.New("model: SR sweep did not converge")
		}
		grow(r0max + round + 2)
		// Exact log CDF at x = round*O, where chunk i has r0_i + round retries.
		logF = 0
		for c := range 2 {
			for v, k := range hist[c] {
				if k > 0 {
					logF += float64(k) * tab[c][v+round]
				}
			}
		}
		if round == 0 {
			for found < len(levels) && logF >= logLv[found] {
				quantiles[found] = a
				found++
			}
		}
		off := float64(round) * s.o
		for _, e := range evs {
			xe := off + e.phi
			integral += survival(logF) * (xe - x)
			x = xe
			t := tab[e.cls]
			r := int(e.r0) + round
			logF += t[r+1] - t[r]
			for found < len(levels) && logF >= logLv[found] {
				quantiles[found] = a + x
				found++
			}
		}
		// After this round every chunk has r0_i + round + 1 retries; the
		// survival function is at most U (1 - (1-x)^e <= e*x) and every
		// term shrinks by a factor q_c <= qmax per further round, so the
		// rest of the integral is < O*U/(1-qmax).
		u := 0.0
		for c := range 2 {
			if base[c] > 0 {
				u += base[c] * math.Pow(qs[c], float64(round+1))
			}
		}
		if found == len(levels) && (u == 0 || s.o*u/(1-qmax) <= 1e-13*(a+integral)) {
			break
		}
	}
	return a + integral, quantiles, nil
}

// survival returns 1 - exp(logF), accurately also when logF is tiny.
func survival(logF float64) float64 {
	if logF > -1e-3 {
		// -expm1(l) = -(l + l^2/2 + l^3/6 + l^4/24) + O(l^5).
		l := logF
		s := -(l * (1 + l*(0.5+l*(1.0/6+l*(1.0/24)))))
		return max(s, 0)
	}
	return -math.Expm1(logF)
}

// cdf returns P(max_i X_i <= t), the product over chunks in stats'
// comment.
func (s srModel) cdf(t float64) float64 {
	e, eLast := s.units()
	logF := 0.0
	for i := 0; i < s.n; i++ {
		q, u, a := s.q, e, float64(i)*s.t+s.t
		if i == s.n-1 {
			q, u, a = s.qLast, eLast, s.end()
		}
		if t < a {
			return 0
		}
		if q > 0 {
			logF += float64(u) * math.Log1p(-math.Pow(q, math.Floor((t-a)/s.o)+1))
		}
	}
	return math.Exp(logF)
}

// mixQuantile is the quantile at level of the completion time shifted by
// late with probability pLate: the least t with (1-pLate)F(t) +
// pLate F(t-late) >= level, found by bisection between the unshifted
// quantile q and q + late.
func (s srModel) mixQuantile(level, pLate, late, q float64) float64 {
	lo, hi := q, q+late
	for range 100 {
		mid := (lo + hi) / 2
		if (1-pLate)*s.cdf(mid)+pLate*s.cdf(mid-late) >= level {
			hi = mid
		} else {
			lo = mid
		}
		if hi-lo < 1 { // a picosecond
			break
		}
	}
	return hi
}

// sr returns the SR model of the whole message under scheme s and the
// selected RetryModel.
func (g *geometry) sr(scheme Scheme) srModel {
	m := srModel{n: g.c, t: g.tInj, dLast: g.dLast, q: g.q, qLast: g.qLast, o: g.retryPeriod(scheme)}
	if g.p.Retry == RetryPacket {
		m.q, m.qLast, m.e, m.eLast = g.p.DropProb, g.p.DropProb, g.n, g.nLast
	}
	return m
}

// retryPeriod is O: RTO + T_INJ with RTO = RTT + a*RTT for SR-RTO (and EC's
// SR repair); RTT + T_INJ for SR-NACK. The NACK variant assumes the
// receiver notices a lost chunk and its NACK reaches the sender about one
// RTT after the chunk was first sent, and that a lost retransmission is
// NACKed the same way.
func (g *geometry) retryPeriod(s Scheme) float64 {
	if s == SRNACK {
		return g.rtt + g.tInj
	}
	return (1+g.a)*g.rtt + g.tInj
}

// Predict evaluates the model for p.
func Predict(p Params) (Prediction, error) {
	g, err := resolve(p)
	if err != nil {
		return Prediction{}, err
	}
	pr := Prediction{
		Chunks:          g.c,
		PacketsPerChunk: g.n,
		PChunk:          g.q,
		TInj:            dur(g.tInj),
	}
	switch p.Scheme {
	case SRRTO, SRNACK:
		err = g.predictSR(&pr)
	default:
		err = g.predictEC(&pr)
	}
	if err != nil {
		return Prediction{}, err
	}
	return pr, nil
}

// predictSR: T_SR = max_i X_i + RTT/2 (+ RTT/2 more at the sender), with
// E[T_SR] and its quantiles from srModel.stats.
func (g *geometry) predictSR(pr *Prediction) error {
	if g.impl && g.p.Scheme == SRNACK {
		return g.predictNACKImpl(pr)
	}
	m := g.sr(g.p.Scheme)
	mean, qs, err := m.stats(quantileLevels)
	if err != nil {
		return err
	}
	shift := g.rtt/2 + g.extra
	if pAck := g.p.DropProb; g.impl && g.p.AtSender && !g.p.LosslessAcks && pAck > 0 {
		// The final ACK is lost with p: the sender hears of completion
		// when its RTO resends the last chunk and the receiver answers
		// (one RTO more; a second loss, p^2, is neglected), as in the
		// SR-NACK model's cdfSender.
		rto := (1 + g.a) * g.rtt
		mean += pAck * rto
		for i, level := range quantileLevels {
			qs[i] = m.mixQuantile(level, pAck, rto, qs[i])
		}
	}
	pr.Mean = dur(mean + shift)
	pr.P50, pr.P99, pr.P999 = dur(qs[0]+shift), dur(qs[1]+shift), dur(qs[2]+shift)
	pr.RetryPeriod = dur(m.o)
	pr.Injection = dur(m.end())
	return nil
}

// RingAllReduce is the lower bound on a ring allreduce over hosts hosts:
// 2(N-1) steps (N-1 of reduce-scatter, N-1 of allgather), each at least
// the completion time step of one message of 1/N of the buffer:
//
//	T_allreduce >= (2N - 2) * T_step.
func RingAllReduce(hosts int, step monotime.Duration) (monotime.Duration, error) {
	if hosts < 1 {
		return 0, fmt.Errorf("model: RingAllReduce hosts = %d: want >= 1", hosts)
	}
	if step < 0 {
		return 0, fmt.Errorf("model: RingAllReduce step = %v: want >= 0", step)
	}
	return monotime.Duration(2*hosts-2) * step, nil
}

// dur rounds ps to a Duration.
func dur(ps float64) monotime.Duration { return monotime.Duration(math.Round(ps)) }
