package core

import (
	"github.com/sdrnet/sdrnet/internal/minheap"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// The receiver's timers: CTS retransmission, and the timers of each
// message's scheme (SR-NACK's gap reports, the erasure-coding fallback).

func (r *receiver) nextTimeout() monotime.Time {
	return r.deadline // the endpoint's credit scheduler has its own
}

// handleTimeout runs the timers of the posted messages that are due, in
// slot order. A connection may post a thousand messages ahead (a ring's
// every step), each with a CTS timer, and walking them all on every timer
// made a large job's cost grow with its group size; the heap of filed
// timers finds the due ones instead.
func (r *receiver) handleTimeout(now monotime.Time) {
	if now < r.deadline {
		return
	}
	due := r.c.ep.dueNow // all clear between calls
	for len(r.timers) > 0 && r.timers[0].at <= now {
		if t := minheap.Pop(&r.timers); r.current(t) {
			due.set(t.slot)
		}
	}
	n := uint32(len(r.slots))
	for i := due.nextSet(0, n); i < n; i = due.nextSet(i+1, n) {
		due.clear(i)
		m := &r.slots[i]
		if m.state != recvPosted { // ended by an earlier message's timer
			continue
		}
		m.filed = monotime.Never // its timer was taken off the heap
		if m.due() <= now {
			r.expire(now, m)
		}
		r.file(m)
	}
	r.deadline = monotime.Never
	for len(r.timers) > 0 {
		t := r.timers[0]
		if !r.current(t) {
			minheap.Pop(&r.timers)
			continue
		}
		if m := &r.slots[t.slot]; m.due() != t.at { // moved later since filed
			minheap.Pop(&r.timers)
			m.filed = monotime.Never
			r.file(m)
			continue
		}
		r.deadline = t.at
		break
	}
}

// file notes m's due time: every change to a posted message's timers is
// followed by a call. A due time that moved earlier goes on the heap, and
// into the deadline; one that moved later leaves its entry as a reminder,
// met (and filed again) when it surfaces, so a timer pushed back on every
// packet (CSA-UD's tail) costs the heap nothing.
func (r *receiver) file(m *recvMsg) {
	if due := m.due(); due < m.filed {
		m.filed = due
		minheap.Push(&r.timers, recvTimer{at: due, slot: m.seq & r.c.slotMask, seq: m.seq})
		r.deadline = min(r.deadline, due)
	}
}

// current reports whether t is still its message's entry: the message is
// still posted in the slot and has filed no earlier time since.
func (r *receiver) current(t recvTimer) bool {
	if int(t.slot) >= len(r.slots) {
		return false
	}
	m := &r.slots[t.slot]
	return m.seq == t.seq && m.state == recvPosted && m.filed == t.at
}

// recvTimer is a posted message's due time as it was filed: never later
// than its due time now. Filing an earlier time leaves the old entry
// behind, to be dropped when it reaches the top.
type recvTimer struct {
	at   monotime.Time
	slot uint32
	seq  uint32
}

// Before orders the timer heap by time.
func (t recvTimer) Before(u recvTimer) bool { return t.at < u.at }

func (r *receiver) expire(now monotime.Time, m *recvMsg) {
	if m.ctsDue <= now {
		m.ctsDue = monotime.Never
		if r.credit != nil {
			r.creditExpired(now, m)
		} else {
			r.c.ctrl.push(ctrlItem{kind: ctrlCTS, seq: m.seq})
		}
	}
	if m.recvActive != nil && m.rs.Due() <= now {
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
