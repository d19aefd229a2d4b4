package reliability

import "github.com/sdrnet/sdrnet/internal/monotime"

// DefaultRTOFactor is SR-RTO's a in RTO = RTT + a*RTT: the SDR-RDMA paper
// evaluates a timeout of 3 RTT.
const DefaultRTOFactor = 2

// SelectiveRepeat retransmits the unacknowledged chunks of a message after
// RTO = RTT + A*RTT. With NACK set the receiver also NACKs gaps once they
// have stood for NackFraction*RTT, so most losses are repaired in about one
// RTT (the paper's SR-NACK; its receiver side is in srnack.go).
type SelectiveRepeat struct {
	chunkTimers
	NACK bool
	// A is the RTO factor; zero means DefaultRTOFactor.
	A float64
	// NackFraction of the RTT a gap must stand before it is NACKed; zero
	// means 1/8, which tolerates reordering of an eighth of an RTT.
	NackFraction float64
}

func init() {
	register(KindSRRTO, registration{name: "sr", aliases: []string{"sr-rto"},
		make: func(_, _ int) (Scheme, error) { return SelectiveRepeat{}, nil }})
}

// Kind implements Scheme.
func (s SelectiveRepeat) Kind() Kind {
	if s.NACK {
		return KindSRNACK
	}
	return KindSRRTO
}

// Code implements Scheme.
func (SelectiveRepeat) Code() Codec { return nil }

// Acknowledged implements Scheme.
func (SelectiveRepeat) Acknowledged() bool { return true }

// InOrder implements Scheme.
func (SelectiveRepeat) InOrder() bool { return false }

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

// FallbackTimeout implements Scheme.
func (SelectiveRepeat) FallbackTimeout(_, _ monotime.Duration) monotime.Duration { return 0 }

// Started implements ReceiverHooks.
func (SelectiveRepeat) Started(monotime.Time, *RecvState, RecvMessage) {}

// Admit implements ReceiverHooks: any packet, in any order.
func (SelectiveRepeat) Admit(monotime.Time, *RecvState, RecvMessage, uint32) Admission {
	return Admit
}

// Arrived implements ReceiverHooks: SR-RTO's receiver only fills its
// bitmap; SR-NACK's watches for gaps.
func (s SelectiveRepeat) Arrived(now monotime.Time, st *RecvState, m RecvMessage, p uint32, retransmit bool) {
	if s.NACK && st.nack.arrived(now, m, p, retransmit) {
		if d := m.GapDelay(); d > 0 {
			st.nack.openGap(now.Add(d), p)
		}
	}
}

// RecvTimeout implements ReceiverHooks.
func (s SelectiveRepeat) RecvTimeout(now monotime.Time, st *RecvState, m RecvMessage) {
	st.nack.expire(now, m, m.GapDelay())
}
