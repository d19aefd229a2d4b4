package core

import (
	"errors"

	"github.com/sdrnet/sdrnet/internal/reliability"
)

// Streaming sends: SDR's SDK lets an application write any chunk of a
// message again at its offset (stream start / continue / end), which is
// how a reliability scheme built by the application on top of the receive
// bitmap repairs losses. The core offers it for messages under scheme
// none: SendOpen sends the message once and keeps its slot open,
// ResendChunks sends chunks of it again into the same receive buffer, and
// EndSend frees the slot (EventSendDone). The receiver sees one message,
// whose bitmap fills as packets arrive, first pass or resent.

// ErrNotOpen says a handle does not name an open streaming send.
var ErrNotOpen = errors.New("core: not an open streaming send")

// SendOpen sends data once under scheme none and keeps the message open
// for ResendChunks until EndSend. The connection reads data until the
// EventSendDone that EndSend causes.
func (c *Conn) SendOpen(data []byte) (SendHandle, error) {
	if len(data) == 0 {
		return 0, ErrEmptyMessage
	}
	h, err := c.send(data, uint64(len(data)), reliability.None{})
	if err == nil {
		c.snd.slots[uint32(h)&c.slotMask].open = true
	}
	return h, err
}

// openSend returns the open streaming send h names.
func (c *Conn) openSend(h SendHandle) (*sendMsg, error) {
	c.ep.touch(c) // what it may send or when its timers fire changes
	if c.closed {
		return nil, ErrClosed
	}
	c.use()
	i := uint32(h) & c.slotMask
	if c.snd == nil || int(i) >= len(c.snd.slots) {
		return nil, ErrNotOpen // no message reached its slot
	}
	m := &c.snd.slots[i]
	if !m.used || m.seq != uint32(h) || !m.open {
		return nil, ErrNotOpen
	}
	return m, nil
}

// ResendChunks sends chunks [first, first+n) of the open streaming send h
// again, after whatever is already queued. Chunks its first pass has not
// reached yet are left to it.
func (c *Conn) ResendChunks(h SendHandle, first, n int) error {
	m, err := c.openSend(h)
	if err != nil {
		return err
	}
	if first < 0 || n < 1 || uint64(first)+uint64(n) > uint64(m.nchunks) {
		return ErrChunkRange
	}
	start := uint32(first) << c.shift
	end := min(uint32(first+n)<<c.shift, m.high)
	if start < end {
		c.snd.retx.push(retxRange{seq: m.seq, epoch: m.epoch, start: start, end: end})
	}
	return nil
}

// EndSend closes the open streaming send h: nothing more of it is sent,
// and EventSendDone names it once its first pass has left.
func (c *Conn) EndSend(h SendHandle) error {
	m, err := c.openSend(h)
	if err != nil {
		return err
	}
	m.open = false
	if m.passDone {
		c.snd.finish(m)
	}
	return nil
}
