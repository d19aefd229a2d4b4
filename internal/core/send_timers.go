package core

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// The sender's retransmission timers: one FIFO per scheme kind (every
// timer of a queue has the same timeout, so its head expires first), armed
// when a chunk is (re)sent and void once the chunk is acked or resent.

// MinRTO is the default smallest retransmission timeout (UET's minimum
// RTO): in a datacenter, queueing alone varies the RTT by tens of
// microseconds. Config.MinRTO overrides it.
const MinRTO = 100 * monotime.Microsecond

// chunkSent stamps the (re)transmission of chunk c and arms its timer.
func (s *sender) chunkSent(now monotime.Time, m *sendMsg, c uint32) {
	m.sentAt[c] = now
	switch m.scheme.Kind() {
	case reliability.KindSRRTO, reliability.KindSRNACK, reliability.KindGoBackN:
	case reliability.KindECMDS, reliability.KindECXOR:
		if !m.passDone {
			return // the first pass is covered by the message's backstop
		}
	default:
		return
	}
	s.timers[m.scheme.Kind()].push(sendTimer{seq: m.seq, chunk: c, epoch: m.epoch, at: now})
}

// rto is m's retransmission timeout: its scheme's, but never below the
// smoothed RTT plus four deviations (RFC 6298), so a queue that builds up
// does not fire timers for packets that are merely late, nor below the
// configured minimum.
func (s *sender) rto(m *sendMsg) monotime.Duration {
	return max(m.scheme.RetransmitTimeout(s.rtt.Smoothed()), s.rtt.Conservative(), s.c.cfg.MinRTO)
}

// handleTimeout resends what timed out.
func (s *sender) handleTimeout(now monotime.Time) {
	s.ccTimeout(now)
	for k := range s.timers {
		q := &s.timers[k]
		for q.len() > 0 {
			t := q.peek()
			m := s.timerMsg(t)
			if m == nil {
				q.pop()
				continue
			}
			if now < t.at.Add(s.rto(m)) {
				break
			}
			tm, _ := q.pop()
			s.expire(now, m, tm)
		}
	}
}

// timerMsg returns the message a timer still guards, or nil if the timer
// is void (message done, chunk acked or resent since).
func (s *sender) timerMsg(t *sendTimer) *sendMsg {
	m := &s.slots[t.seq&s.c.slotMask]
	if !m.used || m.seq != t.seq || m.epoch != t.epoch {
		return nil
	}
	if t.chunk == wholeMessage {
		if t.at != m.progress {
			return nil
		}
	} else if m.acked.test(t.chunk) || m.sentAt[t.chunk] != t.at {
		return nil
	}
	return m
}

func (s *sender) expire(now monotime.Time, m *sendMsg, t sendTimer) {
	s.c.stats.RTOs++
	if t.chunk != wholeMessage {
		s.ccLost(now, s.chunkBytes(m, t.chunk), true)
		s.noteLost(m, t.chunk<<s.c.shift) // at least one packet of the chunk
	}
	switch {
	case m.scheme.Kind() == reliability.KindGoBackN: // a chunk timed out: resend from the cumulative ACK
		s.rewind(now, m, m.cum)
	case t.chunk != wholeMessage:
		start := t.chunk << s.c.shift
		s.retx.push(retxRange{seq: m.seq, epoch: m.epoch, start: start, end: min(start+1<<s.c.shift, m.npkts)})
	default: // EC backstop: resend every chunk still missing
		for c := m.acked.nextClear(0, m.nchunks); c < m.nchunks; {
			e := m.acked.nextSet(c, m.nchunks)
			s.retx.push(retxRange{seq: m.seq, epoch: m.epoch, start: c << s.c.shift, end: min(e<<s.c.shift, m.npkts)})
			c = m.acked.nextClear(e, m.nchunks)
		}
		m.progress = now
		s.timers[m.scheme.Kind()].push(sendTimer{seq: m.seq, chunk: wholeMessage, at: now})
	}
}

func (s *sender) nextTimeout() monotime.Time {
	t := s.ccNextTimeout()
	for k := range s.timers {
		q := &s.timers[k]
		for q.len() > 0 {
			h := q.peek()
			m := s.timerMsg(h)
			if m == nil {
				q.pop()
				continue
			}
			t = min(t, h.at.Add(s.rto(m)))
			break
		}
	}
	return t
}
