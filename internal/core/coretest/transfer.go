package coretest

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// Result describes one message moved from A to B.
type Result struct {
	Duration monotime.Duration // from Send to the sender's done event
	RecvAt   monotime.Duration // from Send to the receiver's done event
	A, B     core.ConnStats
}

// Transfer moves msg from A to B into a posted buffer of bufLen bytes (at
// least len(msg)) with the given scheme (nil: A's default), and checks
// that every byte arrived intact: the SHA-256 of the buffer's message
// bytes must match. The receive is completed afterwards.
func (p *Pair) Transfer(msg []byte, bufLen int, scheme reliability.Scheme, lim Limits) (Result, error) {
	buf := make([]byte, bufLen)
	rh, err := p.B.Conn.PostRecv(buf)
	if err != nil {
		return Result{}, fmt.Errorf("post: %w", err)
	}
	start := p.Now
	sh, err := p.A.Conn.SendWith(msg, scheme)
	if err != nil {
		return Result{}, fmt.Errorf("send: %w", err)
	}
	var res Result
	var recvDone, sendDone bool
	var failure error
	p.B.OnEvent = func(ev core.Event) {
		switch {
		case ev.Kind == core.EventRecvDone && ev.Msg == uint32(rh):
			recvDone = true
			res.RecvAt = p.Now.Sub(start)
		case ev.Kind == core.EventRecvFailed && ev.Msg == uint32(rh):
			failure = fmt.Errorf("receive failed: %w", ev.Err)
		}
	}
	p.A.OnEvent = func(ev core.Event) {
		switch {
		case ev.Kind == core.EventSendDone && ev.Msg == uint32(sh):
			sendDone = true
			res.Duration = p.Now.Sub(start)
		case ev.Kind == core.EventSendFailed && ev.Msg == uint32(sh):
			failure = fmt.Errorf("send failed: %w", ev.Err)
		}
	}
	defer func() { p.A.OnEvent, p.B.OnEvent = nil, nil }()
	p.Wake()
	if err := p.Drive(func() bool { return failure != nil || (recvDone && sendDone) }, lim); err != nil {
		return res, err
	}
	if failure != nil {
		return res, failure
	}
	if got, want := sha256.Sum256(buf[:len(msg)]), sha256.Sum256(msg); got != want {
		i := 0
		for i < len(msg) && buf[i] == msg[i] {
			i++
		}
		return res, fmt.Errorf("payload hash mismatch: first differing byte at %d of %d", i, len(msg))
	}
	if !bytes.Equal(buf[len(msg):], make([]byte, bufLen-len(msg))) {
		return res, fmt.Errorf("bytes past the message end were written")
	}
	if err := p.B.Conn.Complete(rh); err != nil {
		return res, fmt.Errorf("complete: %w", err)
	}
	res.A, res.B = p.A.Conn.Stats(), p.B.Conn.Stats()
	return res, nil
}
