package core

// EventKind says what an Event reports.
type EventKind uint8

// Event kinds.
const (
	// EventChunks: more chunks of a posted receive arrived; read
	// ChunkBitmap. Consecutive arrivals are coalesced into one event.
	EventChunks EventKind = iota + 1
	// EventRecvDone: every byte of a received message is in its buffer.
	EventRecvDone
	// EventSendDone: the peer has every byte of a sent message; its buffer
	// may be reused.
	EventSendDone
	// EventRecvFailed: a posted receive failed (Err says why).
	EventRecvFailed
	// EventSendFailed: a send failed (Err says why).
	EventSendFailed
	// EventClosed: the connection closed (Err is nil when the peer closed
	// it gracefully with code 0).
	EventClosed
	// EventAccepted: a listening endpoint accepted a new connection.
	EventAccepted
	// EventEstablished: a dialed connection completed its handshake.
	EventEstablished
)

var eventNames = [...]string{"", "chunks", "recv-done", "send-done", "recv-failed", "send-failed", "closed",
	"accepted", "established"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) {
		return eventNames[k]
	}
	return "unknown"
}

// Event is something the application should learn about.
type Event struct {
	Kind EventKind
	Conn *Conn
	// Msg is the receive or send handle the event is about, as a sequence
	// number; RecvHandle(Msg) or SendHandle(Msg).
	Msg uint32
	Err error
}
