package sdr

import (
	"context"
	"errors"
	"io"
)

// Streams: a byte stream is a sequence of messages of at most msgSize
// bytes, in order, ended by the sender closing the connection gracefully
// once every message has arrived. Several messages are in flight at once
// (depth), so the pipe stays full.

// DefaultStreamDepth is how many messages a stream keeps in flight.
const DefaultStreamDepth = 8

// SendStream sends everything r yields as messages of msgSize bytes (the
// last may be shorter), depth at a time, and returns the bytes sent. It
// does not close the connection; call Close to end the stream.
func (c *Conn) SendStream(ctx context.Context, r io.Reader, msgSize, depth int) (int64, error) {
	if msgSize <= 0 || depth <= 0 {
		return 0, errors.New("sdr: SendStream: msgSize and depth must be positive")
	}
	bufs := make([][]byte, depth)
	waits := make([]chan error, depth)
	var total int64
	for i := 0; ; i++ {
		slot := i % depth
		if waits[slot] != nil { // reuse the buffer once its message arrived
			if err := wait(ctx, waits[slot]); err != nil {
				return total, err
			}
			waits[slot] = nil
		}
		if bufs[slot] == nil {
			bufs[slot] = make([]byte, msgSize)
		}
		n, rerr := io.ReadFull(r, bufs[slot])
		if n > 0 {
			ch, err := c.startSend(bufs[slot][:n])
			if err != nil {
				return total, err
			}
			waits[slot] = ch
			total += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return total, rerr
		}
	}
	for _, ch := range waits {
		if ch != nil {
			if err := wait(ctx, ch); err != nil {
				return total, err
			}
		}
	}
	return total, nil
}

func wait(ctx context.Context, ch chan error) error {
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RecvStream writes the messages of a stream to w in order until the
// sender closes the connection, and returns the bytes written. msgSize
// must be at least the sender's.
func (c *Conn) RecvStream(ctx context.Context, w io.Writer, msgSize, depth int) (int64, error) {
	if msgSize <= 0 || depth <= 0 {
		return 0, errors.New("sdr: RecvStream: msgSize and depth must be positive")
	}
	posted := make([]*Recv, depth)
	var total int64
	for i := range depth {
		r, err := c.PostRecv(make([]byte, msgSize))
		if err != nil {
			return 0, err
		}
		posted[i] = r
	}
	for i := 0; ; i++ {
		r := posted[i%depth]
		if r == nil { // closed before this one was posted: the stream ended
			return total, c.endErr()
		}
		n, err := r.Wait(ctx)
		if err != nil {
			if c.Err() == nil && isDone(c.done) {
				return total, nil // the sender closed: the stream is complete
			}
			return total, err
		}
		if _, err := w.Write(r.buf[:n]); err != nil {
			return total, err
		}
		total += int64(n)
		buf := r.buf
		if err := r.Complete(); err != nil && !isDone(c.done) {
			return total, err
		}
		// Once the sender has closed, no more messages come: drain what
		// was already received.
		posted[i%depth] = nil
		if !isDone(c.done) {
			if next, err := c.PostRecv(buf); err == nil {
				posted[i%depth] = next
			} else if !isDone(c.done) {
				return total, err
			}
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

// endErr is the stream's outcome when the connection ended.
func (c *Conn) endErr() error { return c.Err() }
