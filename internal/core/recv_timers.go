package core

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// The receiver's timers: CTS retransmission, and the timers of each
// message's scheme (SR-NACK's gap reports, the erasure-coding fallback).

func (r *receiver) nextTimeout() monotime.Time {
	return r.deadline // the endpoint's credit scheduler has its own
}

// handleTimeout runs the receive-side timers of every posted message.
func (r *receiver) handleTimeout(now monotime.Time) {
	if now < r.deadline {
		return
	}
	r.deadline = monotime.Never
	// Only the slots of the latest messages are in use: walk those, in
	// slot order as a walk of all would, not a connection's thousand.
	from, count := r.liveSlots()
	if count == 0 {
		return
	}
	if end := from + count; end > len(r.slots) { // the window wraps
		r.timeSlots(now, 0, end-len(r.slots))
		r.timeSlots(now, from, len(r.slots))
	} else {
		r.timeSlots(now, from, end)
	}
}

// liveSlots returns where the slots in use lie: count slots from from,
// wrapping past the end. It looks back from the newest message until it
// has seen every slot in use (live of them).
func (r *receiver) liveSlots() (from, count int) {
	n := len(r.slots)
	span, seen := 0, 0
	for ; seen < r.live && span < n; span++ {
		if r.slots[(r.nextSeq-1-uint32(span))&r.c.slotMask].state != recvFree {
			seen++
		}
	}
	if seen < r.live {
		return 0, n // the count is off: all of them
	}
	return int((r.nextSeq - uint32(span)) & r.c.slotMask), span
}

// timeSlots runs the timers of the posted messages in slots [from, to).
func (r *receiver) timeSlots(now monotime.Time, from, to int) {
	for i := from; i < to; i++ {
		m := &r.slots[i]
		if m.state != recvPosted {
			continue
		}
		if m.due() <= now {
			r.expire(now, m)
		}
		r.deadline = min(r.deadline, m.due())
	}
}

func (r *receiver) expire(now monotime.Time, m *recvMsg) {
	if m.ctsDue <= now {
		m.ctsDue = monotime.Never
		if r.credit != nil {
			r.creditExpired(now, m)
		} else {
			r.c.ctrl.push(ctrlItem{kind: ctrlCTS, seq: m.seq})
		}
	}
	if m.rs.Due() <= now {
		m.scheme.RecvTimeout(now, &m.rs, m)
	}
}

// packetTime is the sender's time per packet: from the configured rate, or
// estimated from how far through its first pass the sender got between
// two arrivals (lost packets still took their time on the wire).
func (r *receiver) packetTime(m *recvMsg) monotime.Duration {
	if r.c.cfg.Rate > 0 {
		return monotime.TransmitTime(int(m.geo.MTU)+wire.ParityLen, r.c.cfg.Rate)
	}
	if m.maxPos == m.firstPos {
		return 0
	}
	return m.maxPosAt.Sub(m.firstAt) / monotime.Duration(m.maxPos-m.firstPos)
}
