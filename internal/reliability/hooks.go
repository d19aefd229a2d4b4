package reliability

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// The hooks through which the core runs a scheme. The core owns the
// mechanism and calls, for each message, the hooks of the scheme its
// packets name:
//
// At the receiver, with non-decreasing times:
//
//   - Started once, when the first packet (data or parity) of the
//     message arrives and fixes its geometry;
//   - Admit for every DATA packet, before the core looks at its bitmap:
//     the scheme may refuse a packet (go-back-N refuses all but the next
//     expected one);
//   - Arrived for every admitted DATA packet that is new (not a duplicate),
//     before the core stores it: Highest still excludes it;
//   - RecvTimeout when the state's Due time has come (a spurious call is
//     harmless).
//
// After each hook the core reads the state's Due time again. A hook acts
// through the RecvMessage the core passes: it reads the bitmap and queues
// NACKs, which the core builds from the bitmap when they leave.
//
// At the sender: ChunkTimer says whether a chunk just (re)sent gets a
// retransmission timer of RetransmitTimeout; Backstop whether the message
// gets a whole-message timer when its first pass ends. When a timer
// expires the core calls SendTimeout, which says what to send again
// through the SendMessage. Receivers' NACKs are resent by the core: a
// NACK names the packets, whatever the scheme.
//
// Hooks run on the connection's goroutine, allocate nothing and keep no
// state outside RecvState.

// ReceiverHooks is a scheme's receive-side policy.
type ReceiverHooks interface {
	Started(now monotime.Time, st *RecvState, m RecvMessage)
	Admit(now monotime.Time, st *RecvState, m RecvMessage, p uint32) Admission
	Arrived(now monotime.Time, st *RecvState, m RecvMessage, p uint32, retransmit bool)
	RecvTimeout(now monotime.Time, st *RecvState, m RecvMessage)
}

// SenderHooks is a scheme's send-side policy.
type SenderHooks interface {
	// ChunkTimer reports whether a chunk (re)sent now gets a timer;
	// firstPass is set while the message's first pass is under way.
	ChunkTimer(firstPass bool) bool
	// Backstop reports whether the message gets a whole-message timer when
	// its first pass ends.
	Backstop() bool
	// SendTimeout runs when a timer of m expires: the one of chunk c, or
	// the backstop when whole is set.
	SendTimeout(now monotime.Time, m SendMessage, c uint32, whole bool)
}

// Admission is a scheme's verdict on a DATA packet.
type Admission uint8

// Verdicts.
const (
	// Admit: the core stores the packet (or counts it a duplicate).
	Admit Admission = iota
	// RefuseEarly: a packet beyond the one expected, dropped.
	RefuseEarly
	// RefuseStale: a packet the receiver already has, dropped; the core
	// acknowledges again, in case its ACK was lost.
	RefuseStale
)

// RecvMessage is the core's view of a message being received.
type RecvMessage interface {
	// Packets is the message's number of data packets; Present how many
	// of them the receiver has (arrived or decoded).
	Packets() uint32
	Present() uint32
	// NextMissing is the first packet in [from, to) the receiver lacks,
	// or to.
	NextMissing(from, to uint32) uint32
	// Highest is one past the highest packet seen.
	Highest() uint32
	// WholeFrom is the first packet of the first chunk not yet whole.
	WholeFrom() uint32
	// Nack queues a NACK of the packets missing in [from, to).
	Nack(reason wire.NackReason, from, to uint32)
	// Fallback NACKs every packet still missing because erasure decoding
	// could not rebuild it, and counts a fallback.
	Fallback()
	// Reordered reports that an original (not retransmitted) packet below
	// what was NACKed arrived: the gap was reordering, and the core widens
	// the reordering window GapDelay follows.
	Reordered(now monotime.Time)
	// GapDelay is how long a gap stands before it is NACKed: the scheme's
	// NackDelay stretched to the reordering the connection has shown.
	GapDelay() monotime.Duration
	// RoundTrip is the receiver's RTT estimate.
	RoundTrip() monotime.Duration
	// PacketTime is the sender's time per packet, as configured or as
	// measured from arrivals; zero before it can be measured.
	PacketTime() monotime.Duration
	// FirstArrival is when the first packet arrived; Injection how long
	// the rest of the sender's first pass (data and parity) takes from
	// there at PacketTime.
	FirstArrival() monotime.Time
	Injection() monotime.Duration
	// Step is the progress of the collective step the message belongs to,
	// as the application declared it; zero when it declared none.
	Step() StepProgress
}

// StepProgress is where a collective step stands at this receiver.
type StepProgress struct {
	// Receives the step waits for here, and how many of them are
	// complete; Receives is zero when the message is in no step.
	Receives, Done uint32
	// Waiting: the collective waits on this receiver (every other
	// participant is done with the step).
	Waiting bool
}

// SendMessage is the core's view of a message being sent.
type SendMessage interface {
	// Packets and Chunks count the message's data packets and chunks.
	Packets() uint32
	Chunks() uint32
	// Cum is how many packets an in-order receiver has acknowledged.
	Cum() uint32
	// Resend queues packets [from, to) for retransmission, skipping those
	// the receiver is known to have and those the first pass has not sent
	// yet (it will).
	Resend(from, to uint32)
	// ResendChunk queues chunk c for retransmission.
	ResendChunk(c uint32)
	// ResendUnacked queues every chunk not yet acknowledged.
	ResendUnacked()
	// Rewind resends everything from packet from on and voids what was
	// queued before (go-back-N).
	Rewind(from uint32)
	// ArmBackstop restarts the whole-message timer from now.
	ArmBackstop(now monotime.Time)
}

// RecvState is what schemes remember about one message at the receiver.
// The core keeps one in each receive slot and resets it for every
// message; only the message's scheme reads or writes its fields.
type RecvState struct {
	nack     gapNacker     // gap reports (sr-nack, csaud); re-NACKs (sr-nack, ec, csaud)
	csa      *csaRecv      // csaud: arrival gaps and the tail timer (csaState)
	ftoAt    monotime.Time // ec: fallback timeout
	refusing bool          // gbn: a NAK for the expected packet went out
}

// Reset prepares the state for a new message.
func (s *RecvState) Reset() {
	csa := s.csa
	*s = RecvState{ftoAt: monotime.Never, csa: csa}
	s.nack.reset()
	if csa != nil {
		csa.reset()
	}
}

// Due is when the scheme's next receive timer expires, or Never.
func (s *RecvState) Due() monotime.Time {
	due := min(s.nack.gapAt, s.nack.renackAt, s.ftoAt)
	if s.csa != nil {
		due = min(due, s.csa.tailAt)
	}
	return due
}

// csaState is CSA-UD's state, made on the slot's first CSA-UD message.
func (s *RecvState) csaState() *csaRecv {
	if s.csa == nil {
		s.csa = &csaRecv{tailAt: monotime.Never}
	}
	return s.csa
}

// noSendTimers is for schemes that never retransmit on a timer.
type noSendTimers struct{}

func (noSendTimers) ChunkTimer(bool) bool                                 { return false }
func (noSendTimers) Backstop() bool                                       { return false }
func (noSendTimers) SendTimeout(monotime.Time, SendMessage, uint32, bool) {}

// chunkTimers is for schemes that retransmit a chunk when its timer
// expires.
type chunkTimers struct{}

func (chunkTimers) ChunkTimer(bool) bool { return true }
func (chunkTimers) Backstop() bool       { return false }
func (chunkTimers) SendTimeout(_ monotime.Time, m SendMessage, c uint32, _ bool) {
	m.ResendChunk(c)
}
