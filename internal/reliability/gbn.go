package reliability

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// GoBackN is the RoCE RC baseline: the receiver accepts only the next
// expected packet and NAKs the first gap once; the sender resends from the
// NAKed packet, or from the last cumulative ACK when its timer fires.
type GoBackN struct {
	// A is the RTO factor; zero means DefaultRTOFactor.
	A float64
}

func init() {
	register(KindGoBackN, registration{name: "gbn", make: func(_, _ int) (Scheme, error) { return GoBackN{}, nil }})
}

// Kind implements Scheme.
func (GoBackN) Kind() Kind { return KindGoBackN }

// Code implements Scheme.
func (GoBackN) Code() Codec { return nil }

// Acknowledged implements Scheme.
func (GoBackN) Acknowledged() bool { return true }

// InOrder implements Scheme.
func (GoBackN) InOrder() bool { return true }

// RetransmitTimeout implements Scheme.
func (g GoBackN) RetransmitTimeout(rtt monotime.Duration) monotime.Duration {
	return SelectiveRepeat{A: g.A}.RetransmitTimeout(rtt)
}

// NackDelay implements Scheme: go-back-N NAKs at once, the gap is the signal.
func (GoBackN) NackDelay(monotime.Duration) monotime.Duration { return 0 }

// FallbackTimeout implements Scheme.
func (GoBackN) FallbackTimeout(_, _ monotime.Duration) monotime.Duration { return 0 }

// Started implements ReceiverHooks.
func (GoBackN) Started(monotime.Time, *RecvState, RecvMessage) {}

// Admit implements ReceiverHooks: only the next expected packet gets in.
// The first packet past it NAKs the expected one, once until it arrives.
func (GoBackN) Admit(_ monotime.Time, st *RecvState, m RecvMessage, p uint32) Admission {
	expected := m.Present()
	switch {
	case p == expected:
		st.refusing = false
		return Admit
	case p < expected:
		return RefuseStale
	}
	if !st.refusing {
		st.refusing = true
		m.Nack(wire.NackOutOfOrder, expected, expected+1)
	}
	return RefuseEarly
}

// Arrived implements ReceiverHooks.
func (GoBackN) Arrived(monotime.Time, *RecvState, RecvMessage, uint32, bool) {}

// RecvTimeout implements ReceiverHooks.
func (GoBackN) RecvTimeout(monotime.Time, *RecvState, RecvMessage) {}

// ChunkTimer implements SenderHooks.
func (GoBackN) ChunkTimer(bool) bool { return true }

// Backstop implements SenderHooks.
func (GoBackN) Backstop() bool { return false }

// SendTimeout implements SenderHooks: a chunk timed out, so everything
// from the cumulative ACK on is sent again.
func (GoBackN) SendTimeout(_ monotime.Time, m SendMessage, _ uint32, _ bool) { m.Rewind(m.Cum()) }
