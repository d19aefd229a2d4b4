package sdr

import (
	"context"
	"errors"
	"net/netip"
	"sync"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// Conn is an SDR connection: messages in both directions, each sent whole
// and received into a buffer the application posted, with the receive
// bitmap telling which chunks arrived. Its methods are safe for concurrent
// use.
type Conn struct {
	e    *endpoint
	core *core.Conn

	// Owned by the endpoint's loop:
	sends map[core.SendHandle]*Sending
	recvs map[core.RecvHandle]*Recv

	closeOnce sync.Once
	done      chan struct{} // closed when the connection is gone
	err       error         // why, once done is closed (nil: graceful)
}

func newConn(e *endpoint, cc *core.Conn) *Conn {
	return &Conn{e: e, core: cc, sends: make(map[core.SendHandle]*Sending),
		recvs: make(map[core.RecvHandle]*Recv), done: make(chan struct{})}
}

// closed runs on the loop when the connection ends.
func (c *Conn) closed(err error) {
	err = publicErr(err, c.core.Peer())
	if errors.Is(err, core.ErrIdleTimeout) { // the peer fell silent: say what it cost
		st := c.core.Stats()
		err = &PeerSilentError{Peer: c.core.Peer(), Silent: c.e.now().Sub(c.core.LastHeard()).Std(),
			Sent: st.AckedBytes, Received: st.RecvBytes}
	}
	c.closeOnce.Do(func() {
		c.err = err
		close(c.done)
	})
	fail := err
	if fail == nil {
		fail = ErrConnClosed
	}
	for h, s := range c.sends {
		s.finish(fail)
		delete(c.sends, h)
	}
	for h, r := range c.recvs {
		r.finish(0, fail)
		delete(c.recvs, h)
	}
	delete(c.e.conns, c.core)
}

// apiErr turns the core's "closed" into why the connection ended; it runs
// on the loop.
func (c *Conn) apiErr(err error) error {
	if !errors.Is(err, core.ErrClosed) {
		return err
	}
	if c.err != nil {
		return c.err
	}
	return ErrConnClosed
}

// event runs on the loop for each core event of this connection.
func (c *Conn) event(ev core.Event) {
	switch ev.Kind {
	case core.EventSendDone, core.EventSendFailed:
		if errors.Is(ev.Err, core.ErrClosed) {
			return // closed() fails it with the connection's end cause
		}
		if s, ok := c.sends[core.SendHandle(ev.Msg)]; ok {
			s.finish(messageErr(ev.Err))
			delete(c.sends, core.SendHandle(ev.Msg))
		}
	case core.EventChunks:
		if r, ok := c.recvs[core.RecvHandle(ev.Msg)]; ok {
			r.notify()
		}
	case core.EventRecvDone:
		if r, ok := c.recvs[core.RecvHandle(ev.Msg)]; ok {
			n, _, _ := c.core.MessageLen(r.h)
			r.finish(n, nil)
		}
	case core.EventRecvFailed:
		if errors.Is(ev.Err, core.ErrClosed) {
			return
		}
		if r, ok := c.recvs[core.RecvHandle(ev.Msg)]; ok {
			r.finish(0, messageErr(ev.Err))
		}
	}
}

// Send sends msg as one message and waits until the peer has all of it.
// The connection reads msg until Send returns; if ctx ends first, Send
// returns ctx's error but the message stays in flight, so msg must then
// stay untouched until the connection is closed.
func (c *Conn) Send(ctx context.Context, msg []byte) error {
	s, err := c.SendAsync(msg)
	if err != nil {
		return err
	}
	return s.Wait(ctx)
}

// Recv is a posted receive buffer.
type Recv struct {
	c       *Conn
	h       core.RecvHandle
	buf     []byte
	done    chan struct{}
	changed chan struct{}
	n       int
	err     error
}

// PostRecv posts buf to receive the next message the peer sends (the n-th
// posted buffer takes the n-th message) and lets the peer send it. The
// connection writes into buf until the receive is completed.
func (c *Conn) PostRecv(buf []byte) (*Recv, error) {
	r := &Recv{c: c, buf: buf, done: make(chan struct{}), changed: make(chan struct{}, 1)}
	var err error
	if cerr := c.e.call(func() {
		if r.h, err = c.core.PostRecv(buf); err == nil {
			c.recvs[r.h] = r
		}
		err = c.apiErr(err)
	}); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

func (r *Recv) finish(n int, err error) {
	select {
	case <-r.done:
	default:
		r.n, r.err = n, err
		close(r.done)
		r.notify()
	}
}

// Wait waits until the whole message is in the buffer and returns its
// length.
func (r *Recv) Wait(ctx context.Context) (int, error) {
	select {
	case <-r.done:
		return r.n, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Buffer returns the buffer the receive was posted with.
func (r *Recv) Buffer() []byte { return r.buf }

// Done is closed when the message is whole or the receive failed.
func (r *Recv) Done() <-chan struct{} { return r.done }

// Complete frees the receive's slot for a later message; it is mandatory.
// Completing before the message is whole abandons the rest.
func (r *Recv) Complete() error {
	var err error
	if cerr := r.c.e.call(func() {
		err = r.c.apiErr(r.c.core.Complete(r.h))
		delete(r.c.recvs, r.h)
	}); cerr != nil {
		return cerr
	}
	return err
}

// Close closes the connection gracefully: the peer sees a close with code
// 0. Messages still in flight fail.
func (c *Conn) Close() error { return c.CloseWithError(0, "") }

// CloseWithError closes the connection with an application error code.
func (c *Conn) CloseWithError(code uint32, reason string) error {
	err := c.e.call(func() {
		if c.core.Close(code, reason) == nil {
			c.closed(nil)
		}
	})
	if c.e.owned {
		// A dialed connection owns its endpoint: stop it once the CLOSE
		// has had a moment to leave.
		c.e.call(func() {})
		c.e.stop(nil)
	}
	return err
}

// Done is closed when the connection has ended; Err then says why.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err is why the connection ended: nil while it is open or after a
// graceful close.
func (c *Conn) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// LocalAddr returns the address of the connection's first path.
func (c *Conn) LocalAddr() netip.AddrPort { return c.e.local }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() netip.AddrPort { return c.core.Peer() }

// MTU is the payload bytes per packet the two ends agreed on, and
// ChunkSize the bitmap's chunk that goes with it.
func (c *Conn) MTU() (mtu, chunkSize int) {
	_ = c.e.call(func() { cfg := c.core.Config(); mtu, chunkSize = cfg.MTU, cfg.ChunkSize })
	return mtu, chunkSize
}

// Stats returns the connection's counters.
func (c *Conn) Stats() Stats {
	var s Stats
	_ = c.e.call(func() {
		s.ConnStats = connStats(c.core.Stats())
		s.Protect = protectStats(c.core.ProtectStats())
		s.Paths = pathStats(c.core.PathStats())
		s.CC = ccStats(c.core.CCStats(), c.core.CCDetail())
		for _, sc := range c.core.Chosen() {
			if s.Schemes == nil {
				s.Schemes = map[string]uint64{}
			}
			s.Schemes[reliability.Name(sc.Scheme)] = sc.Messages
		}
	})
	return s
}
