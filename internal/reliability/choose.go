package reliability

import "github.com/sdrnet/sdrnet/internal/monotime"

// Conditions are what a sender has measured of its connection when it
// starts a message: the input of a Chooser.
type Conditions struct {
	// Size is the message's length in bytes.
	Size int64
	// MTU and ChunkBytes are the connection's packet payload and bitmap
	// chunk sizes.
	MTU, ChunkBytes int
	// RTT is the smoothed round-trip time (the connection's initial
	// guess before the first sample).
	RTT monotime.Duration
	// Rate is the rate the sender injects at, in bits per second, where
	// the connection knows it (its pacing or line rate); zero if unknown.
	Rate float64
	// Lost of Sent data packets were reported lost (NACKed, timed out or
	// rebuilt by erasure decoding) since the loss rate last changed, older
	// ones weighing less: their ratio estimates the per-packet loss rate,
	// and Sent says how much evidence it rests on.
	Lost, Sent float64
	// Depth is how many of the connection's messages are under way with
	// this one, itself included (0 reads as 1). Beyond one, a message's
	// repair overlaps the others' sending: what a scheme costs is then
	// the connection's goodput, not this message's completion time.
	Depth int
}

// LossRate is Lost/Sent, zero before anything was sent.
func (c Conditions) LossRate() float64 {
	if c.Sent <= 0 {
		return 0
	}
	return c.Lost / c.Sent
}

// A Chooser picks the scheme of each message a connection sends without
// naming one (SDR-RDMA leaves the choice to software; sdrnet's "auto").
// The core calls Choose once per message, when the message is queued, on
// the connection's goroutine; a Chooser shared by connections must be
// safe for concurrent use. The scheme it returns must be valid for the
// connection (an erasure code of at most MaxShards shards).
type Chooser interface {
	Choose(Conditions) Scheme
}
