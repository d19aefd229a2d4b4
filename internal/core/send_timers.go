package core

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
)

// The sender's retransmission timers: one FIFO per scheme kind (every
// timer of a queue has the same timeout, so its head expires first), armed
// when a chunk is (re)sent (if its scheme wants a timer) and void once the
// chunk is acked or resent. What an expired timer resends is the scheme's
// choice (SendTimeout).

// MinRTO is the default smallest retransmission timeout (UET's minimum
// RTO): in a datacenter, queueing alone varies the RTT by tens of
// microseconds. Config.MinRTO overrides it.
const MinRTO = 100 * monotime.Microsecond

// chunkSent stamps the (re)transmission of chunk c and arms its timer.
func (s *sender) chunkSent(now monotime.Time, m *sendMsg, c uint32) {
	m.sentAt[c] = now
	if m.scheme.ChunkTimer(!m.passDone) {
		s.timers.arm(m.scheme.Kind(), sendTimer{seq: m.seq, chunk: c, epoch: m.epoch, at: now})
	}
}

// rto is m's retransmission timeout: its scheme's, but never below the
// smoothed RTT plus four deviations (RFC 6298), so a queue that builds up
// does not fire timers for packets that are merely late, nor below the
// configured minimum. It doubles for resends the receiver already had
// (resendWasted), and while the peer is silent with each probe
// (silence).
func (s *sender) rto(m *sendMsg) monotime.Duration {
	return max(m.scheme.RetransmitTimeout(s.rtt.Smoothed()), s.rtt.Conservative(), s.c.cfg.MinRTO) << s.backoff()
}

// silence is what the retransmission timers do while the peer says
// nothing at all, as TCP's single timer does (RFC 6298, 5.4-5.7): one
// chunk is resent as a probe and its timeout doubles; no other timer
// fires until the peer answers or the probe times out. Without it every
// chunk's own timer resent the whole window into an outage.
type silence struct {
	probedAt monotime.Time // when a timeout last resent into a silence
	deadline monotime.Time // when that probe's own timer expires
	doubled  uint8         // the timeout's doublings since the peer was last heard
}

// maxRTODoublings caps the timeout's growth (64 x, RFC 6298's "at least
// 60 seconds" from a 1 s timeout). A connection's idle timeout ends a
// dead peer; a datagram peer, which has none, is probed at that pace
// until its application gives up.
const maxRTODoublings = 6

// unanswered reports whether the peer has said nothing since the last
// probe (a probe leaves only after a silence, so a packet heard the
// instant it left is an answer).
func (s *sender) unanswered() bool { return s.c.live.lastHeard < s.silence.probedAt }

// backoff is how many times the timeout has doubled: for resends not
// needed since the last clean RTT sample, or by the probes into a
// silence the peer has not answered, whichever is more.
func (s *sender) backoff() uint8 {
	if !s.unanswered() {
		return s.timedOut
	}
	return max(s.silence.doubled, s.timedOut)
}

// resendWasted answers an ACK saying a resend found its packet already
// there (wire.FlagDupResend): the packet was late, not lost. The timeout
// doubles, once per timeout period, until a clean RTT sample comes (RFC
// 6298 5.5 and 5.7, with D-SACK's evidence, RFC 3708): resent chunks give
// no samples, so a round trip that outgrew the timeout is otherwise never
// learnt (TestTimeoutBacksOff).
func (s *sender) resendWasted(now monotime.Time) {
	s.wastedResends++
	if 2*s.wastedResends < s.timeoutResends {
		// Most resends were needed: a lost ACK drew this one, not a
		// timeout shorter than the path's round trip, which wastes
		// nearly every resend. Backing off for lost ACKs would hold
		// every later repair round of SR-RTO back.
		return
	}
	if s.timedOut > 0 && now.Sub(s.timedOutAt) < max(s.rtt.Conservative(), s.c.cfg.MinRTO)<<s.timedOut {
		return
	}
	s.timedOut = min(s.timedOut+1, maxRTODoublings)
	s.timedOutAt = now
}

// resendWindow is about how many packets resent on timeouts
// resendWasted weighs its evidence over: the counts halve when they
// reach it. Packets, as the receiver flags them, not chunks.
const resendWindow = 1024

func (s *sender) countTimeoutResend(packets uint32) {
	s.timeoutResends += packets
	if s.timeoutResends >= resendWindow {
		s.timeoutResends /= 2
		s.wastedResends /= 2
	}
}

// silent reports whether data has gone unanswered for a round trip: a
// live receiver with our data in flight acknowledges more often. A peer
// with nothing to answer is not silent: under SR-RTO, whose receiver
// never NACKs, a repair round's timeouts come after every ACK of the
// round before, and reading that as a silence would hold all but one
// resend back a round trip.
func (s *sender) silent(now monotime.Time) bool {
	return s.awaiting != 0 && now.Sub(s.awaiting) >= max(s.rtt.Smoothed(), s.c.cfg.MinRTO)
}

// probing reports whether a probe into a silence is still awaited, which
// holds every other timer.
func (s *sender) probing(now monotime.Time) bool {
	return s.unanswered() && now < s.silence.deadline
}

// probed notes that the timeout of m just resent into a silence.
func (s *sender) probed(now monotime.Time, m *sendMsg) {
	s.silence.doubled = min(s.backoff()+1, maxRTODoublings)
	s.silence.probedAt = now
	s.silence.deadline = now.Add(s.rto(m))
	s.stats.SilentProbes++
}

// handleTimeout resends what timed out.
func (s *sender) handleTimeout(now monotime.Time) {
	s.ccTimeout(now)
	if s.timers == nil {
		return
	}
	// By index, not range: an expiry may arm a kind not seen yet, whose
	// queue then takes its kind's place.
	for i := 0; i < len(s.timers.queues); i++ {
		q := s.timers.queues[i]
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
			if s.probing(now) {
				return
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

// expire answers a timer that expired: a stalled pass's backstop with a
// tail probe, a chunk's with the scheme's resend. Into a silence, before
// the connection's first clean RTT sample, an out-of-order scheme probes
// with the chunk's last packet only: a first chunk slower than the
// handshake's timeout is then not resent whole (TestSilenceTailProbe).
func (s *sender) expire(now monotime.Time, m *sendMsg, t sendTimer) {
	s.stats.RTOs++
	whole := t.chunk == wholeMessage
	if s.silent(now) {
		defer s.probed(now, m) // after the resend: its timer takes the doubled timeout
		if !whole && !s.dataSampled && (!m.retx.test(t.chunk) || s.unanswered()) && !m.scheme.InOrder() && m.code == nil {
			last := min((t.chunk+1)<<s.c.shift, m.high) - 1
			m.Resend(last, last+1)
			return
		}
	}
	if whole && m.stallArmed {
		s.probeStall(now, m)
		return
	}
	if !whole {
		s.countTimeoutResend(s.chunkPackets(m, t.chunk))
		s.ccLost(now, s.chunkBytes(m, t.chunk), true)
		s.noteLost(m, t.chunk<<s.c.shift) // at least one packet of the chunk
	}
	m.scheme.SendTimeout(now, m, t.chunk, whole)
}

// armBackstop (re)starts m's whole-message timer.
func (s *sender) armBackstop(now monotime.Time, m *sendMsg) {
	m.progress = now
	s.timers.arm(m.scheme.Kind(), sendTimer{seq: m.seq, chunk: wholeMessage, at: now})
}

// stallBackstop arms m's backstop when its first pass stalls on the
// window with bytes in flight, once per stall. A scheme with a backstop
// arms no per-chunk timer in its first pass, so a stall whose last ACK
// was lost would wait for ever: the receiver had nothing new to
// acknowledge (TestLossyMemoryNetwork).
func (s *sender) stallBackstop(now monotime.Time, m *sendMsg) {
	if m.stallArmed || !m.scheme.Backstop() {
		return
	}
	s.armBackstop(now, m)
	m.stallArmed = true
}

// endStall voids the backstop of a stall that made progress.
func (s *sender) endStall(m *sendMsg) {
	if m.stallArmed {
		m.stallArmed, m.progress = false, 0
	}
}

// probeStall answers a stalled first pass's backstop with a tail probe,
// not the scheme's timeout: the last packet sent of m's oldest chunk not
// acknowledged, which makes the receiver acknowledge again (or NACK what
// it lacks), and the backstop again. Resending every chunk in flight
// would resend data that is only waiting for its parity to decode.
func (s *sender) probeStall(now monotime.Time, m *sendMsg) {
	shift := s.c.shift
	sent := min((m.high+1<<shift-1)>>shift, m.nchunks)
	if c := m.acked.nextClear(0, sent); c < sent {
		last := min((c+1)<<shift, m.high) - 1
		m.Resend(last, last+1)
	}
	s.armBackstop(now, m)
}

func (s *sender) nextTimeout() monotime.Time {
	t := s.ccNextTimeout()
	if s.timers == nil {
		return t
	}
	for _, q := range s.timers.queues {
		for q.len() > 0 {
			h := q.peek()
			m := s.timerMsg(h)
			if m == nil {
				q.pop()
				continue
			}
			due := h.at.Add(s.rto(m))
			if s.unanswered() {
				due = max(due, s.silence.deadline) // held by a probe (silence)
			}
			t = min(t, due)
			break
		}
	}
	return t
}
