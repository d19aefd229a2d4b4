package sdr

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/sdrnet/sdrnet/internal/wire"
)

// Streams: a byte stream is a sequence of messages, each opening with a
// stream frame (internal/wire's StreamFrame), several in flight at once so
// the pipe stays full. The sender ends it with an END that declares the
// total length and the SHA-256 of the content; the receiver checks both
// and answers with a verdict. Only a verified stream is complete: a
// connection that closes, dies or is aborted before that leaves the
// receiver with an IncompleteError that says how much arrived.

// Stream defaults.
const (
	DefaultStreamDepth   = 8
	DefaultStreamMsgSize = 8 << 20
	// MinStreamMsgSize fits an END frame.
	MinStreamMsgSize = 64
)

// verdictLinger bounds how long a receiver that verified a stream waits
// for its verdict to be acknowledged: past it the sender is gone, and the
// receiver's bytes are verified either way.
const verdictLinger = 3 * time.Second

// StreamConfig sets up one stream. The zero value works.
type StreamConfig struct {
	// MsgSize is the size of each message, its 24-byte frame header
	// included; the receiver's must be at least the sender's. Zero means
	// DefaultStreamMsgSize.
	MsgSize int
	// Depth is how many messages are in flight at once; zero means
	// DefaultStreamDepth.
	Depth int
	// Size, on the sending side, declares the stream's length up front,
	// so that a receiver whose stream is cut short can say how much is
	// missing; the stream fails if the reader yields a different amount.
	// Zero declares nothing.
	Size int64
}

func (s *StreamConfig) withDefaults() (StreamConfig, error) {
	var c StreamConfig
	if s != nil {
		c = *s
	}
	if c.MsgSize == 0 {
		c.MsgSize = DefaultStreamMsgSize
	}
	if c.Depth == 0 {
		c.Depth = DefaultStreamDepth
	}
	switch {
	case c.MsgSize < MinStreamMsgSize:
		return c, fmt.Errorf("sdr: StreamConfig.MsgSize %d below %d", c.MsgSize, MinStreamMsgSize)
	case c.Depth < 0:
		return c, fmt.Errorf("sdr: StreamConfig.Depth %d is negative", c.Depth)
	case c.Size < 0:
		return c, fmt.Errorf("sdr: StreamConfig.Size %d is negative", c.Size)
	}
	return c, nil
}

// SendStream sends everything r yields as a stream and waits for the
// receiver's verdict. It returns the bytes the receiver acknowledged, and
// nil only once the receiver has verified the whole stream (length and
// SHA-256). On failure - ctx ends, r fails, the peer aborts - it aborts
// the connection with CodeAborted, so the receiver learns the stream is
// incomplete at once. It does not close the connection on success; call
// Close.
func (c *Conn) SendStream(ctx context.Context, r io.Reader, sc *StreamConfig) (acked int64, err error) {
	cfg, err := sc.withDefaults()
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			c.abort(CodeAborted, "sender stopped: "+stopReason(err))
		}
	}()
	verdict, err := c.PostRecv(make([]byte, wire.StreamVerdictLen))
	if err != nil {
		return 0, err
	}
	digest := sha256.New()
	bufs := make([][]byte, cfg.Depth)
	waits := make([]*Sending, cfg.Depth)
	lens := make([]int64, cfg.Depth)
	frame := wire.StreamFrame{Kind: wire.StreamData, Declared: uint64(cfg.Size)}
	var sent int64
	for i := 0; ; i++ {
		slot := i % cfg.Depth
		if waits[slot] != nil { // reuse the buffer once its message arrived
			if err := waits[slot].Wait(ctx); err != nil {
				return acked, err
			}
			waits[slot], acked = nil, acked+lens[slot]
		}
		if bufs[slot] == nil {
			bufs[slot] = make([]byte, cfg.MsgSize)
		}
		buf := bufs[slot]
		n, rerr := io.ReadFull(r, buf[wire.StreamHeaderLen:])
		if n > 0 {
			digest.Write(buf[wire.StreamHeaderLen : wire.StreamHeaderLen+n])
			frame.Offset = uint64(sent)
			_, _ = frame.EncodeHeader(buf)
			sending, err := c.SendAsync(buf[:wire.StreamHeaderLen+n])
			if err != nil {
				return acked, err
			}
			waits[slot], lens[slot] = sending, int64(n)
			sent += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return acked, fmt.Errorf("reading the stream: %w", rerr)
		}
		if cfg.Size > 0 && sent > cfg.Size {
			break
		}
	}
	for slot, sending := range waits {
		if sending != nil {
			if err := sending.Wait(ctx); err != nil {
				return acked, err
			}
			acked += lens[slot]
		}
	}
	if cfg.Size > 0 && sent != cfg.Size {
		return acked, fmt.Errorf("the input held %d bytes, not the %d declared", sent, cfg.Size)
	}
	end := wire.StreamFrame{Kind: wire.StreamEnd, Offset: uint64(sent), Declared: uint64(cfg.Size)}
	digest.Sum(end.Digest[:0])
	endBuf := make([]byte, wire.StreamEndLen)
	_, _ = end.EncodeHeader(endBuf)
	if err := c.Send(ctx, endBuf); err != nil {
		return acked, err
	}
	n, err := verdict.Wait(ctx)
	if err != nil {
		return acked, fmt.Errorf("receiver acknowledged all %d bytes but sent no verdict: %w", acked, err)
	}
	f, _, err := wire.ParseStreamFrame(verdict.buf[:n])
	if err != nil || f.Kind != wire.StreamVerdict {
		return acked, fmt.Errorf("receiver's verdict is malformed: %w", errors.Join(err, wire.ErrType))
	}
	_ = verdict.Complete()
	if f.Verdict != wire.VerdictOK {
		return acked, &CorruptError{Verdict: f.Verdict.String(), Received: int64(f.Offset), Declared: sent}
	}
	return acked, nil
}

// RecvStream writes a stream to w in order and returns the bytes written.
// It returns nil only once the sender's END arrived and the length and
// SHA-256 it declares match what was written; a stream that ends any
// other way returns an IncompleteError (errors.Is ErrIncomplete) saying
// how much arrived, and one that does not match a CorruptError. If ctx
// ends or w fails, it aborts the connection with CodeAborted.
func (c *Conn) RecvStream(ctx context.Context, w io.Writer, sc *StreamConfig) (int64, error) {
	cfg, err := sc.withDefaults()
	if err != nil {
		return 0, err
	}
	posted := make([]*Recv, cfg.Depth)
	for i := range posted {
		if posted[i], err = c.PostRecv(make([]byte, cfg.MsgSize)); err != nil {
			if isDone(c.done) {
				// A short stream can arrive whole, and its sender leave,
				// before the last buffers are posted: drain what arrived.
				break
			}
			return 0, err
		}
	}
	digest := sha256.New()
	var total, declared int64
	incomplete := func(cause error) error {
		return &IncompleteError{Received: total, Declared: declared, Cause: cause}
	}
	protocol := func(i int, format string, args ...any) error {
		err := fmt.Errorf("message %d of the stream: "+format, append([]any{i}, args...)...)
		c.abort(CodeProtocol, err.Error())
		return incomplete(err)
	}
	for i := 0; ; i++ {
		r := posted[i%cfg.Depth]
		if r == nil { // the connection ended before it could be posted
			return total, incomplete(c.endCause())
		}
		n, err := r.Wait(ctx)
		if err != nil {
			if ctx.Err() != nil {
				c.abort(CodeAborted, "receiver stopped: "+stopReason(err))
			}
			return total, incomplete(err)
		}
		f, payload, err := wire.ParseStreamFrame(r.buf[:n])
		if err != nil {
			return total, protocol(i, "%w", err)
		}
		if i == 0 {
			declared = int64(f.Declared)
		}
		switch {
		case f.Kind == wire.StreamVerdict:
			return total, protocol(i, "a verdict, from the sender")
		case int64(f.Declared) != declared:
			return total, protocol(i, "declares %d bytes, the first declared %d", f.Declared, declared)
		case f.Kind == wire.StreamEnd:
			return total, c.endStream(ctx, &f, total, declared, [32]byte(digest.Sum(nil)))
		case f.Offset != uint64(total):
			return total, protocol(i, "starts at byte %d, want %d", f.Offset, total)
		case declared > 0 && total+int64(len(payload)) > declared:
			return total, protocol(i, "runs past the declared %d bytes", declared)
		}
		if _, err := w.Write(payload); err != nil {
			c.abort(CodeAborted, "receiver could not write: "+err.Error())
			return total, incomplete(err)
		}
		digest.Write(payload)
		total += int64(len(payload))
		// Once the peer has gone, receives that arrived before it left are
		// still drained; completing and posting are then moot.
		if err := r.Complete(); err != nil && !isDone(c.done) {
			return total, incomplete(err)
		}
		if posted[i%cfg.Depth], err = c.PostRecv(r.buf); err != nil && !isDone(c.done) {
			return total, incomplete(err)
		}
	}
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// endCause is why the connection ended.
func (c *Conn) endCause() error {
	if err := c.Err(); err != nil {
		return err
	}
	return ErrConnClosed
}

// endStream checks the sender's END against what arrived and answers with
// a verdict.
func (c *Conn) endStream(ctx context.Context, end *wire.StreamFrame, total, declared int64, digest [32]byte) error {
	v := wire.VerdictOK
	switch {
	case declared > 0 && int64(end.Offset) != declared:
		v = wire.VerdictDeclaration
	case int64(end.Offset) != total:
		v = wire.VerdictShort
	case end.Digest != digest:
		v = wire.VerdictDigest
	}
	reply := wire.StreamFrame{Kind: wire.StreamVerdict, Offset: uint64(total), Declared: end.Offset, Verdict: v}
	buf := make([]byte, wire.StreamVerdictLen)
	_, _ = reply.EncodeHeader(buf)
	if sending, err := c.SendAsync(buf); err == nil {
		// Wait until the sender has the verdict, or has closed (it closes
		// as soon as it reads it, before its ACK may have left).
		linger, cancel := context.WithTimeout(ctx, verdictLinger)
		select {
		case <-sending.Done():
		case <-c.done:
		case <-linger.Done():
		}
		cancel()
	}
	if v != wire.VerdictOK {
		return &CorruptError{Verdict: v.String(), Received: total, Declared: int64(end.Offset)}
	}
	return nil
}

// stopReason says in a CLOSE why this side gave up.
func stopReason(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	}
	return err.Error()
}

// abort closes the connection with an error code, leaving a dialed
// connection's endpoint running until Close (so Stats still answer).
func (c *Conn) abort(code uint32, reason string) {
	if len(reason) > wire.MaxCloseReason {
		reason = reason[:wire.MaxCloseReason]
	}
	_ = c.e.call(func() {
		if c.core.Close(code, reason) == nil {
			c.closed(&localAbortError{code: code, reason: reason})
		}
	})
}

// localAbortError is why a connection this side aborted ended.
type localAbortError struct {
	code   uint32
	reason string
}

func (e *localAbortError) Error() string {
	return fmt.Sprintf("aborted (code %d): %s", e.code, e.reason)
}

// Is makes errors.Is(err, ErrConnClosed) true: the connection is closed.
func (e *localAbortError) Is(target error) bool { return target == ErrConnClosed }
