package core

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// The receiver's timers: CTS retransmission, SR-NACK gap reports and
// re-NACKs, and the erasure-coding fallback.

func (r *receiver) nextTimeout() monotime.Time {
	if r.credit != nil {
		return min(r.deadline, r.credit.due())
	}
	return r.deadline
}

// handleTimeout runs the receive-side timers of every posted message:
// CTS retransmission, SR-NACK gap reports and the EC fallback.
func (r *receiver) handleTimeout(now monotime.Time) {
	if r.credit != nil {
		r.credit.tick(now)
	}
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
	rtt := r.roundTrip()
	if m.ctsDue <= now {
		m.ctsDue = monotime.Never
		if r.credit != nil {
			r.creditExpired(now, m)
		} else {
			r.c.ctrl.push(ctrlItem{kind: ctrlCTS, seq: m.seq})
		}
	}
	if m.gapAt <= now { // gaps below gapHi have stood for the NACK delay
		r.queueNack(m, wire.NackGap, m.nackedTo, m.gapHi)
		m.nackedTo = max(m.nackedTo, m.gapHi)
		m.gapAt = monotime.Never
		if m.pkts.nextClear(m.gapHi, m.hi) < m.hi {
			m.gapAt, m.gapHi = now.Add(r.nackDelay(m)), m.hi
		}
		if m.renackAt == monotime.Never {
			m.renackAt = now.Add(r.renackDelay(m, rtt))
		}
	}
	if m.renackAt <= now {
		first := m.pkts.nextClear(m.cumChunk<<m.geo.ChunkShift, m.npkts)
		m.renackAt = monotime.Never
		if first < m.nackedTo {
			r.queueNack(m, m.nackReason, first, m.nackedTo)
			m.renackAt = now.Add(r.renackDelay(m, rtt))
		}
	}
	if m.ftoAt <= now {
		if at := m.firstAt.Add(r.fallbackTimeout(m)); at > now {
			m.ftoAt = at // arrivals showed the sender is slower
		} else {
			r.c.stats.Fallbacks++
			r.queueNack(m, wire.NackFallback, 0, m.npkts)
			m.nackedTo = m.npkts
			m.ftoAt = monotime.Never
			m.renackAt = now.Add(r.renackDelay(m, rtt))
		}
	}
}

// renackDelay is how long a NACKed packet may take to come back: a round
// trip, half a round trip of slack for queueing, and the time to send
// everything still missing (retransmissions go ahead of new data).
func (r *receiver) renackDelay(m *recvMsg, rtt monotime.Duration) monotime.Duration {
	missing := m.npkts - m.pktCount
	return rtt + rtt/2 + monotime.Duration(missing)*r.packetTime(m)
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

// fallbackTimeout is the EC fallback deadline of m measured from its first
// packet: the time to inject the rest of its data and parity plus b*RTT.
func (r *receiver) fallbackTimeout(m *recvMsg) monotime.Duration {
	inj := monotime.Duration(r.ec.txPackets(m)-m.firstPos) * r.packetTime(m)
	return m.scheme.FallbackTimeout(inj, r.roundTrip())
}
