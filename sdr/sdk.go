package sdr

import (
	"context"
	"errors"
	"math/bits"

	"github.com/sdrnet/sdrnet/internal/core"
)

// The SDK surface of SDR-RDMA: what an application needs to build its own
// reliability on the receive bitmap. A send can be started without
// waiting (SendAsync), or kept open so that chunks of it can be written
// again at their offsets (SendOpen, Sending.ResendChunks: SDR's streaming
// send); a receive signals every change of its chunk bitmap (Recv.Changed)
// and copies the bitmap, or the packets of one chunk, into a Bitmap the
// application reuses.

// ErrNotOpen says a Sending was not started by SendOpen, or was ended.
var ErrNotOpen = errors.New("sdr: not an open streaming send")

// Sending is a message on its way.
type Sending struct {
	c    *Conn
	h    core.SendHandle
	open bool
	done chan struct{}
	err  error
}

// finish runs on the loop when the core says the send ended.
func (s *Sending) finish(err error) {
	select {
	case <-s.done:
	default:
		s.err = err
		close(s.done)
	}
}

// Done is closed when the send has ended: the peer has the whole message
// (a reliable scheme), its packets have all left (scheme none), an open
// send was ended, or it failed. Err then says which.
func (s *Sending) Done() <-chan struct{} { return s.done }

// Err is why the send failed once Done is closed; nil while it runs or
// after success.
func (s *Sending) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

// Wait waits until the send ends and returns Err.
func (s *Sending) Wait(ctx context.Context) error {
	select {
	case <-s.done:
		return s.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SendAsync starts sending msg as one message and returns at once. The
// connection reads msg until the Sending is done; msg must stay untouched
// until then.
func (c *Conn) SendAsync(msg []byte) (*Sending, error) {
	return c.startSend(msg, false, nil)
}

// SendAsyncImm is SendAsync with a 32-bit immediate value carried with the
// message: the receiver reads it with Recv.Immediate as soon as any packet
// of the message has arrived (SDR's immediate data).
func (c *Conn) SendAsyncImm(msg []byte, imm uint32) (*Sending, error) {
	return c.startSend(msg, false, &imm)
}

// SendOpen sends msg once, unprotected by any scheme (scheme none), and
// keeps it open: ResendChunks writes chunks of it again into the peer's
// receive buffer until End. The peer's Recv fills as packets arrive; the
// application decides what to resend (from its own reports of the
// receiver's bitmap) and when the message is done.
func (c *Conn) SendOpen(msg []byte) (*Sending, error) {
	return c.startSend(msg, true, nil)
}

func (c *Conn) startSend(msg []byte, open bool, imm *uint32) (*Sending, error) {
	s := &Sending{c: c, open: open, done: make(chan struct{})}
	var err error
	if cerr := c.e.call(func() {
		switch {
		case open:
			s.h, err = c.core.SendOpen(msg)
		case imm != nil:
			s.h, err = c.core.SendImm(msg, *imm)
		default:
			s.h, err = c.core.Send(msg)
		}
		if err == nil {
			c.sends[s.h] = s
		}
		err = c.apiErr(err)
	}); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// ResendChunks writes chunks [first, first+n) of an open send again at
// their offsets (chunks of the connection's ChunkSize).
func (s *Sending) ResendChunks(first, n int) error {
	if !s.open {
		return ErrNotOpen
	}
	var err error
	if cerr := s.c.e.call(func() { err = s.c.sdkErr(s.c.core.ResendChunks(s.h, first, n)) }); cerr != nil {
		return cerr
	}
	return err
}

// End closes an open send: nothing more of it is sent, and Done is
// closed once its first pass has left.
func (s *Sending) End() error {
	if !s.open {
		return ErrNotOpen
	}
	var err error
	if cerr := s.c.e.call(func() { err = s.c.sdkErr(s.c.core.EndSend(s.h)) }); cerr != nil {
		return cerr
	}
	return err
}

// sdkErr maps the core's errors of the SDK calls to the package's.
func (c *Conn) sdkErr(err error) error {
	switch {
	case errors.Is(err, core.ErrNotOpen):
		return ErrNotOpen
	case errors.Is(err, core.ErrChunkRange):
		return ErrChunkRange
	}
	return c.apiErr(err)
}

// ErrChunkRange says a chunk index is outside the message, or the
// message's length is not known yet.
var ErrChunkRange = errors.New("sdr: chunk index out of range")

// Bitmap is a copy of a receive bitmap: bit i says unit i (a chunk, or a
// packet of an expanded chunk) arrived whole. Reuse one Bitmap across
// calls: its storage grows to the largest message and is kept.
type Bitmap struct {
	words []uint64
	n     int
}

// Len returns the number of units.
func (b *Bitmap) Len() int { return b.n }

// Test reports whether unit i arrived; false out of range.
func (b *Bitmap) Test(i int) bool {
	return i >= 0 && i < b.n && b.words[i/64]&(1<<(i%64)) != 0
}

// Count returns how many units arrived.
func (b *Bitmap) Count() int {
	c := 0
	for _, w := range b.words {
		c += bits.OnesCount64(w)
	}
	return c
}

// All reports whether every unit arrived.
func (b *Bitmap) All() bool { return b.Count() == b.n }

// NextMissing returns the first unit at or after i that has not arrived,
// or Len() if none.
func (b *Bitmap) NextMissing(i int) int {
	for i = max(i, 0); i < b.n; {
		w := ^b.words[i/64] >> (i % 64)
		if w != 0 {
			return min(i+bits.TrailingZeros64(w), b.n)
		}
		i = (i/64 + 1) * 64
	}
	return b.n
}

func (b *Bitmap) set(m core.Bitmap) {
	b.words, b.n = m.AppendWords(b.words[:0]), m.Len()
}

// Changed receives a value whenever more chunks of the message have
// arrived since the bitmap was last read (ChunkBitmap re-arms it), and
// once more when the receive ends: partial completion without polling.
func (r *Recv) Changed() <-chan struct{} { return r.changed }

// notify signals Changed without blocking: one pending value is enough.
func (r *Recv) notify() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// ChunkBitmap copies which chunks have arrived whole into dst and returns
// the message's length, 0 before its first packet (dst is then empty). A
// chunk is the connection's ChunkSize bytes, the last one shorter.
func (r *Recv) ChunkBitmap(dst *Bitmap) (msgLen int, err error) {
	if cerr := r.c.e.call(func() {
		var bm core.Bitmap
		if bm, err = r.c.core.ChunkBitmap(r.h); err != nil {
			err = r.c.apiErr(err)
			return
		}
		dst.set(bm)
		msgLen, _, _ = r.c.core.MessageLen(r.h)
	}); cerr != nil {
		return 0, cerr
	}
	return msgLen, err
}

// Immediate returns the message's 32-bit immediate value (SendAsyncImm);
// ok is false until a packet of the message has arrived, and when it
// carries none.
func (r *Recv) Immediate() (imm uint32, ok bool, err error) {
	if cerr := r.c.e.call(func() {
		imm, ok, err = r.c.core.Immediate(r.h)
		err = r.c.apiErr(err)
	}); cerr != nil {
		return 0, false, cerr
	}
	return imm, ok, err
}

// ExpandChunk copies which packets of chunk i have arrived into dst (SDR's
// expanded chunk: the bitmap below a chunk's bit, for a chunk that is not
// whole yet).
func (r *Recv) ExpandChunk(i int, dst *Bitmap) error {
	var err error
	if cerr := r.c.e.call(func() {
		var bm core.Bitmap
		if bm, err = r.c.core.ExpandChunk(r.h, i); err != nil {
			err = r.c.sdkErr(err)
			return
		}
		dst.set(bm)
	}); cerr != nil {
		return cerr
	}
	return err
}
