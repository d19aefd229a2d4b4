package core

import (
	"container/heap"
	"math/bits"
	"slices"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// An endpoint may hold thousands of connections or datagram peers (a
// collective's every peer), of which few have anything to do at a given
// moment. Walking all of them for every datagram sent and every timer
// would make each packet cost as much as the number of peers, so the
// endpoint keeps two indexes instead:
//
//   - sendable, a bit per connection (by its place in Endpoint.order): set
//     when something happened to it that may give it a datagram to send,
//     cleared when it was polled and had none. PollTransmit visits only
//     set bits, in the same round-robin order as a walk of all of them.
//   - timers, a heap of connections by their earliest deadline. A touched
//     connection is only marked dirty; its deadline is filed again when
//     the driver next asks for timers, so a burst of packets on one
//     connection files it once.
//
// A connection is touched whenever its state may change: a datagram for
// it, a call of its API, a timer of its own, a grant of the endpoint's
// credit scheduler, its shutdown. Time alone never makes a connection
// sendable: whatever waits for time (pacing, a HELLO or keepalive to
// resend) is a deadline, and the deadline's timer touches it.
type schedule struct {
	sendable []uint64
	timers   connHeap
	dirty    []*Conn // touched since their deadlines were filed
	due      []*Conn // scratch for HandleTimeout
}

// touch notes that c's state may have changed.
func (e *Endpoint) touch(c *Conn) {
	if c.slot < 0 {
		return // reaped
	}
	e.sched.sendable[c.slot>>6] |= 1 << (c.slot & 63)
	if !c.dirty {
		c.dirty = true
		e.sched.dirty = append(e.sched.dirty, c)
	}
}

// place gives c the next place in the polling order.
func (e *Endpoint) place(c *Conn) {
	c.slot = len(e.order)
	c.heapAt = -1
	e.order = append(e.order, c)
	if need := (len(e.order) + 63) >> 6; len(e.sched.sendable) < need {
		e.sched.sendable = append(e.sched.sendable, 0)
	}
	e.touch(c)
}

// renumber gives every connection its place again after reaping, and has
// each looked at afresh.
func (e *Endpoint) renumber() {
	s := &e.sched
	s.sendable = s.sendable[:(len(e.order)+63)>>6]
	clear(s.sendable)
	for i, c := range e.order {
		c.slot = i
		s.sendable[i>>6] |= 1 << (i & 63)
	}
}

// unplace takes a reaped connection out of both indexes.
func (e *Endpoint) unplace(c *Conn) {
	if c.heapAt >= 0 {
		heap.Remove(&e.sched.timers, c.heapAt)
	}
	c.slot = -1
}

// nextSendable returns the first connection place in [from, to) whose bit
// is set, or -1.
func (s *schedule) nextSendable(from, to int) int {
	for from < to {
		w := s.sendable[from>>6] >> (from & 63)
		if w != 0 {
			if i := from + bits.TrailingZeros64(w); i < to {
				return i
			}
			return -1
		}
		from = (from | 63) + 1
	}
	return -1
}

func (s *schedule) clearSendable(i int) { s.sendable[i>>6] &^= 1 << (i & 63) }

// fileDeadlines files the deadlines of the connections touched since the
// last call.
func (e *Endpoint) fileDeadlines() {
	s := &e.sched
	for _, c := range s.dirty {
		c.dirty = false
		if c.slot < 0 {
			continue
		}
		t := c.nextTimeout()
		switch {
		case t == monotime.Never:
			if c.heapAt >= 0 {
				heap.Remove(&s.timers, c.heapAt)
			}
		case c.heapAt < 0:
			c.filed = t
			heap.Push(&s.timers, c)
		case t != c.filed:
			c.filed = t
			heap.Fix(&s.timers, c.heapAt)
		}
	}
	clear(s.dirty)
	s.dirty = s.dirty[:0]
}

// nextDeadline is the earliest filed deadline.
func (s *schedule) nextDeadline() monotime.Time {
	if len(s.timers) == 0 {
		return monotime.Never
	}
	return s.timers[0].filed
}

// popDue takes the connections whose deadlines are due at now out of the
// heap, in polling order: the order a walk of every connection runs them.
func (s *schedule) popDue(now monotime.Time) []*Conn {
	s.due = s.due[:0]
	for len(s.timers) > 0 && s.timers[0].filed <= now {
		s.due = append(s.due, heap.Pop(&s.timers).(*Conn))
	}
	slices.SortFunc(s.due, func(a, b *Conn) int { return a.slot - b.slot })
	return s.due
}

// connHeap orders connections by their filed deadlines (container/heap).
type connHeap []*Conn

func (h connHeap) Len() int           { return len(h) }
func (h connHeap) Less(i, j int) bool { return h[i].filed < h[j].filed }
func (h connHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapAt, h[j].heapAt = i, j
}
func (h *connHeap) Push(x any) {
	c := x.(*Conn)
	c.heapAt = len(*h)
	*h = append(*h, c)
}
func (h *connHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	c.heapAt = -1
	return c
}
