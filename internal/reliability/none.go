package reliability

import "github.com/sdrnet/sdrnet/internal/monotime"

// None sends every packet once. The receive bitmap tells the application
// what arrived; nothing is acknowledged and nothing repaired.
type None struct {
	noSendTimers
}

func init() {
	register(KindNone, registration{name: "none", make: func(_, _ int) (Scheme, error) { return None{}, nil }})
}

// Kind implements Scheme.
func (None) Kind() Kind { return KindNone }

// Code implements Scheme.
func (None) Code() Codec { return nil }

// Acknowledged implements Scheme.
func (None) Acknowledged() bool { return false }

// InOrder implements Scheme.
func (None) InOrder() bool { return false }

// RetransmitTimeout implements Scheme.
func (None) RetransmitTimeout(monotime.Duration) monotime.Duration { return 0 }

// NackDelay implements Scheme.
func (None) NackDelay(monotime.Duration) monotime.Duration { return 0 }

// FallbackTimeout implements Scheme.
func (None) FallbackTimeout(_, _ monotime.Duration) monotime.Duration { return 0 }

// Started implements ReceiverHooks.
func (None) Started(monotime.Time, *RecvState, RecvMessage) {}

// Admit implements ReceiverHooks.
func (None) Admit(monotime.Time, *RecvState, RecvMessage, uint32) Admission { return Admit }

// Arrived implements ReceiverHooks.
func (None) Arrived(monotime.Time, *RecvState, RecvMessage, uint32, bool) {}

// RecvTimeout implements ReceiverHooks.
func (None) RecvTimeout(monotime.Time, *RecvState, RecvMessage) {}
