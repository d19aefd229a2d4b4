package reliability

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// DefaultFallbackB is the b in FTO = injection + b*RTT. REFERENCES.md gives
// no value; one RTT of slack absorbs queueing and reordering without
// delaying the fallback much.
const DefaultFallbackB = 1

// ErasureCoding protects every sub-message of K data chunks with M parity
// chunks. Packet j of each parity chunk is coded over packet j of the K data
// chunks (one codeword per packet stripe), so a lost packet erases one shard
// of one stripe, not a whole chunk. What the code cannot recover is NACKed
// after the fallback timeout and repaired by selective repeat. The core
// sends and decodes the parity (it is mechanism: packets and buffers); this
// file is the policy: when to give up on decoding, and the sender's
// backstop.
type ErasureCoding struct {
	code Codec
	// B is the fallback slack in RTTs; zero means DefaultFallbackB.
	B float64
}

func init() {
	register(KindECMDS, registration{name: "ec", params: true, make: func(k, m int) (Scheme, error) {
		code, err := NewMDS(k, m)
		if err != nil {
			return nil, err
		}
		return NewErasureCoding(code, 0), nil
	}})
	register(KindECXOR, registration{name: "xor", params: true, make: func(k, m int) (Scheme, error) {
		code, err := NewXOR(k, m)
		if err != nil {
			return nil, err
		}
		return NewErasureCoding(code, 0), nil
	}})
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

// Code implements Scheme.
func (e ErasureCoding) Code() Codec { return e.code }

// Acknowledged implements Scheme.
func (ErasureCoding) Acknowledged() bool { return true }

// InOrder implements Scheme.
func (ErasureCoding) InOrder() bool { return false }

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

// FallbackTimeout implements Scheme.
func (e ErasureCoding) FallbackTimeout(injection, rtt monotime.Duration) monotime.Duration {
	return injection + monotime.Duration(e.b()*float64(rtt))
}

// Started implements ReceiverHooks: the fallback timer starts with the
// first packet.
func (e ErasureCoding) Started(_ monotime.Time, st *RecvState, m RecvMessage) {
	st.ftoAt = e.fallbackAt(m)
}

func (e ErasureCoding) fallbackAt(m RecvMessage) monotime.Time {
	return m.FirstArrival().Add(e.FallbackTimeout(m.Injection(), m.RoundTrip()))
}

// Admit implements ReceiverHooks.
func (ErasureCoding) Admit(monotime.Time, *RecvState, RecvMessage, uint32) Admission { return Admit }

// Arrived implements ReceiverHooks: an original arriving after the
// fallback NACKed it shows reordering.
func (ErasureCoding) Arrived(now monotime.Time, st *RecvState, m RecvMessage, p uint32, retransmit bool) {
	st.nack.arrived(now, m, p, retransmit) // EC NACKs no gaps: only the reordering counts
}

// RecvTimeout implements ReceiverHooks: re-NACKs, and at the fallback
// timeout a NACK of everything decoding could not rebuild. The timeout is
// measured again first: arrivals may have shown the sender is slower than
// it was first thought.
func (e ErasureCoding) RecvTimeout(now monotime.Time, st *RecvState, m RecvMessage) {
	st.nack.expire(now, m, m.GapDelay())
	if st.ftoAt > now {
		return
	}
	if at := e.fallbackAt(m); at > now {
		st.ftoAt = at
		return
	}
	m.Fallback()
	st.ftoAt = monotime.Never
	st.nack.reason = wire.NackFallback
	st.nack.nacked(now, m.Packets())
	st.nack.armRenack(now, m)
}

// ChunkTimer implements SenderHooks: the first pass is covered by the
// message's backstop; retransmitted chunks get their own timers.
func (ErasureCoding) ChunkTimer(firstPass bool) bool { return !firstPass }

// Backstop implements SenderHooks.
func (ErasureCoding) Backstop() bool { return true }

// SendTimeout implements SenderHooks: a retransmitted chunk is resent; the
// backstop resends every chunk still missing and restarts.
func (ErasureCoding) SendTimeout(now monotime.Time, m SendMessage, c uint32, whole bool) {
	if !whole {
		m.ResendChunk(c)
		return
	}
	m.ResendUnacked()
	m.ArmBackstop(now)
}
