// Package reliability holds the software reliability schemes that run above
// SDR's receive bitmap: selective repeat (RTO and NACK variants), erasure
// coding (Reed-Solomon MDS and XOR, with a selective-repeat fallback),
// go-back-N with RoCE RC semantics, and none.
//
// A Scheme is policy: when a sender retransmits, whether and when a receiver
// NACKs, whether packets must arrive in order, which erasure code protects a
// message. The mechanism (bitmaps, timers, packet queues) is the core's; the
// core consults the Scheme of each message.
package reliability

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// Kind identifies a scheme on the wire (one byte in every DATA packet), so
// the receiver of a message knows its policy without negotiation.
type Kind uint8

// Scheme kinds.
const (
	KindNone    Kind = 1
	KindGoBackN Kind = 2
	KindSRRTO   Kind = 3
	KindSRNACK  Kind = 4
	KindECMDS   Kind = 5
	KindECXOR   Kind = 6
)

func (k Kind) String() string {
	switch k {
	case KindNone:
		return "none"
	case KindGoBackN:
		return "gbn"
	case KindSRRTO:
		return "sr"
	case KindSRNACK:
		return "sr-nack"
	case KindECMDS:
		return "ec"
	case KindECXOR:
		return "xor"
	}
	return "unknown(" + strconv.Itoa(int(k)) + ")"
}

// Valid reports whether k names a scheme.
func (k Kind) Valid() bool { return k >= KindNone && k <= KindECXOR }

// Scheme is a reliability policy. Implementations are small immutable
// values, safe to share between connections.
type Scheme interface {
	// Kind identifies the scheme on the wire.
	Kind() Kind
	// RetransmitTimeout is the sender's per-chunk timeout given the current
	// smoothed RTT. A chunk that is not acknowledged this long after it was
	// (re)sent is sent again. For EC it is only a backstop for a lost
	// fallback NACK; it is zero for schemes that never retransmit.
	RetransmitTimeout(rtt monotime.Duration) monotime.Duration
	// NackDelay is how long a receiver lets a gap stand before it NACKs
	// the missing packets (reordering tolerance). Zero: it never NACKs gaps.
	NackDelay(rtt monotime.Duration) monotime.Duration
	// InOrder reports whether the receiver accepts only the next expected
	// packet (go-back-N).
	InOrder() bool
	// Code returns the erasure code protecting each sub-message, or nil.
	Code() Codec
	// FallbackTimeout is the receiver's wait, from the first packet of a
	// message, before it NACKs what erasure decoding could not recover:
	// the injection time of data and parity plus b*RTT.
	FallbackTimeout(injection, rtt monotime.Duration) monotime.Duration
}

// DefaultRTOFactor is SR-RTO's a in RTO = RTT + a*RTT: the SDR-RDMA paper
// evaluates a timeout of 3 RTT.
const DefaultRTOFactor = 2

// SelectiveRepeat retransmits the unacknowledged chunks of a message after
// RTO = RTT + A*RTT. With NACK set the receiver also NACKs gaps once they
// have stood for NackFraction*RTT, so most losses are repaired in about one
// RTT (the paper's SR-NACK).
type SelectiveRepeat struct {
	NACK bool
	// A is the RTO factor; zero means DefaultRTOFactor.
	A float64
	// NackFraction of the RTT a gap must stand before it is NACKed; zero
	// means 1/8, which tolerates reordering of an eighth of an RTT.
	NackFraction float64
}

// Kind implements Scheme.
func (s SelectiveRepeat) Kind() Kind {
	if s.NACK {
		return KindSRNACK
	}
	return KindSRRTO
}

// RetransmitTimeout implements Scheme.
func (s SelectiveRepeat) RetransmitTimeout(rtt monotime.Duration) monotime.Duration {
	a := s.A
	if a == 0 {
		a = DefaultRTOFactor
	}
	return rtt + monotime.Duration(a*float64(rtt))
}

// NackDelay implements Scheme.
func (s SelectiveRepeat) NackDelay(rtt monotime.Duration) monotime.Duration {
	if !s.NACK {
		return 0
	}
	return nackDelay(rtt, s.NackFraction)
}

func nackDelay(rtt monotime.Duration, fraction float64) monotime.Duration {
	if fraction == 0 {
		fraction = 1.0 / 8
	}
	return max(monotime.Duration(fraction*float64(rtt)), monotime.Microsecond)
}

// InOrder implements Scheme.
func (SelectiveRepeat) InOrder() bool { return false }

// Code implements Scheme.
func (SelectiveRepeat) Code() Codec { return nil }

// FallbackTimeout implements Scheme.
func (SelectiveRepeat) FallbackTimeout(_, _ monotime.Duration) monotime.Duration { return 0 }

// DefaultFallbackB is the b in FTO = injection + b*RTT. REFERENCES.md gives
// no value; one RTT of slack absorbs queueing and reordering without
// delaying the fallback much.
const DefaultFallbackB = 1

// ErasureCoding protects every sub-message of K data chunks with M parity
// chunks. Packet j of each parity chunk is coded over packet j of the K data
// chunks (one codeword per packet stripe), so a lost packet erases one shard
// of one stripe, not a whole chunk. What the code cannot recover is NACKed
// after the fallback timeout and repaired by selective repeat.
type ErasureCoding struct {
	code Codec
	// B is the fallback slack in RTTs; zero means DefaultFallbackB.
	B float64
}

// NewErasureCoding returns an EC scheme over code.
func NewErasureCoding(code Codec, b float64) ErasureCoding {
	return ErasureCoding{code: code, B: b}
}

// Kind implements Scheme.
func (e ErasureCoding) Kind() Kind {
	if _, ok := e.code.(*XOR); ok {
		return KindECXOR
	}
	return KindECMDS
}

// RetransmitTimeout implements Scheme. The sender's timer only backs up a
// lost fallback NACK, so it waits for the fallback round trip plus an RTO.
func (e ErasureCoding) RetransmitTimeout(rtt monotime.Duration) monotime.Duration {
	return monotime.Duration((DefaultRTOFactor + 2 + e.b()) * float64(rtt))
}

func (e ErasureCoding) b() float64 {
	if e.B == 0 {
		return DefaultFallbackB
	}
	return e.B
}

// NackDelay implements Scheme: EC waits for the fallback timeout instead.
func (ErasureCoding) NackDelay(monotime.Duration) monotime.Duration { return 0 }

// InOrder implements Scheme.
func (ErasureCoding) InOrder() bool { return false }

// Code implements Scheme.
func (e ErasureCoding) Code() Codec { return e.code }

// FallbackTimeout implements Scheme.
func (e ErasureCoding) FallbackTimeout(injection, rtt monotime.Duration) monotime.Duration {
	return injection + monotime.Duration(e.b()*float64(rtt))
}

// GoBackN is the RoCE RC baseline: the receiver accepts only the next
// expected packet and NAKs the first gap once; the sender resends from the
// NAKed packet, or from the last cumulative ACK when its timer fires.
type GoBackN struct {
	// A is the RTO factor; zero means DefaultRTOFactor.
	A float64
}

// Kind implements Scheme.
func (GoBackN) Kind() Kind { return KindGoBackN }

// RetransmitTimeout implements Scheme.
func (g GoBackN) RetransmitTimeout(rtt monotime.Duration) monotime.Duration {
	return SelectiveRepeat{A: g.A}.RetransmitTimeout(rtt)
}

// NackDelay implements Scheme: go-back-N NAKs at once, the gap is the signal.
func (GoBackN) NackDelay(monotime.Duration) monotime.Duration { return 0 }

// InOrder implements Scheme.
func (GoBackN) InOrder() bool { return true }

// Code implements Scheme.
func (GoBackN) Code() Codec { return nil }

// FallbackTimeout implements Scheme.
func (GoBackN) FallbackTimeout(_, _ monotime.Duration) monotime.Duration { return 0 }

// None sends every packet once. The receive bitmap tells the application
// what arrived; nothing is repaired.
type None struct{}

// Kind implements Scheme.
func (None) Kind() Kind { return KindNone }

// RetransmitTimeout implements Scheme.
func (None) RetransmitTimeout(monotime.Duration) monotime.Duration { return 0 }

// NackDelay implements Scheme.
func (None) NackDelay(monotime.Duration) monotime.Duration { return 0 }

// InOrder implements Scheme.
func (None) InOrder() bool { return false }

// Code implements Scheme.
func (None) Code() Codec { return nil }

// FallbackTimeout implements Scheme.
func (None) FallbackTimeout(_, _ monotime.Duration) monotime.Duration { return 0 }

// Parse reads a scheme name as the CLI spells it: none, gbn, sr (or sr-rto),
// sr-nack, ec[:K,M] (Reed-Solomon MDS) and xor[:K,M]. K and M default to
// 32 and 8.
func Parse(s string) (Scheme, error) {
	name, params, hasParams := strings.Cut(s, ":")
	if hasParams && name != "ec" && name != "xor" {
		return nil, fmt.Errorf("scheme %q: only ec and xor take parameters (K,M)", s)
	}
	switch name {
	case "none":
		return None{}, nil
	case "gbn":
		return GoBackN{}, nil
	case "sr", "sr-rto":
		return SelectiveRepeat{}, nil
	case "sr-nack":
		return SelectiveRepeat{NACK: true}, nil
	case "ec", "xor":
	default:
		return nil, fmt.Errorf("unknown scheme %q: want none, gbn, sr, sr-nack, ec:K,M or xor:K,M", s)
	}
	k, m := DefaultK, DefaultM
	if hasParams {
		ks, ms, ok := strings.Cut(params, ",")
		var err1, err2 error
		k, err1 = strconv.Atoi(ks)
		m, err2 = strconv.Atoi(ms)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("scheme %q: want %s:K,M with integers, e.g. %s:32,8", s, name, name)
		}
	}
	var code Codec
	var err error
	if name == "ec" {
		code, err = NewMDS(k, m)
	} else {
		code, err = NewXOR(k, m)
	}
	if err != nil {
		return nil, fmt.Errorf("scheme %q: %w", s, err)
	}
	return NewErasureCoding(code, 0), nil
}

// Name formats s the way Parse reads it.
func Name(s Scheme) string {
	if c := s.Code(); c != nil {
		return fmt.Sprintf("%s:%d,%d", s.Kind(), c.K(), c.M())
	}
	return s.Kind().String()
}
