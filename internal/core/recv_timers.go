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
	for i := range r.slots {
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
