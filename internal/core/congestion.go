package core

import (
	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/monotime"
)

// The core's side of internal/cc: it tells the connection's controller
// what happened to its data and obeys the window and the departure time
// the controller answers. A connection without a controller (cc "none")
// pays one nil check per call.

// initCC creates the connection's controller, if it has one.
func (s *sender) initCC() { s.cc = s.c.cfg.CC.New(s.c.cfg.ccParams()) }

// ccParams is what a controller, or a receiver's credit pacer, starts from.
func (c *Config) ccParams() cc.Params {
	rate := c.LineRate
	if rate == 0 {
		rate = c.Rate
	}
	return cc.Params{LineRate: rate, BaseRTT: c.BaseRTT, MSS: c.MTU, Quantum: c.ChunkSize,
		LearnLineRate: c.LearnLineRate, HostNoise: c.HostNoise}
}

// ccBlocked reports whether the controller's pacing holds the next data
// packet back at now, and remembers until when so NextTimeout wakes the
// driver then.
func (s *sender) ccBlocked(now monotime.Time) bool {
	if s.cc == nil {
		return false
	}
	if next := s.cc.NextSend(); now < next {
		s.pacedUntil = next
		if e := s.c.ep; e.pacedWake == 0 || next < e.pacedWake {
			e.pacedWake = next
		}
		return true
	}
	s.pacedUntil = monotime.Never
	return false
}

// ccHolds reports whether the controller's window holds back a chunk of
// bytes about to start. The window admits whole chunks: the receiver
// acknowledges whole chunks, so a chunk started and left unfinished would
// hold its bytes in flight for ever.
func (s *sender) ccHolds(bytes int64) bool {
	if s.cc == nil || s.inflight == 0 {
		return false
	}
	w := s.cc.Window()
	return w > 0 && s.inflight+bytes > w
}

// ccGate reports whether packet p of m's first pass is where the window
// may hold it back: a chunk's first packet, or with erasure coding a
// sub-message's. A coded sub-message is admitted whole: where chunks
// lose packets, nothing of it is acknowledged before it decodes, and it
// decodes only once all of it and its parity are sent (16 paths, one
// dead, so every chunk missing a packet: a window smaller than a
// sub-message held the rest back for ever).
func (s *sender) ccGate(m *sendMsg, p uint32) bool {
	if m.code != nil {
		return p == s.subStart(m, m.sub)
	}
	return p&(1<<s.c.shift-1) == 0
}

// ccSent reports a data packet of bytes on the wire.
func (s *sender) ccSent(now monotime.Time, bytes int) {
	if s.cc != nil {
		s.cc.OnSend(now, bytes)
	}
}

// ccAppLimited tells a controller that measures what it delivers that
// the sender, sending a moment ago, has nothing more it may send.
func (s *sender) ccAppLimited(now monotime.Time) {
	if a, ok := s.cc.(cc.AppLimited); ok {
		a.OnAppLimited(now)
	}
}

// ccAcked reports an ACK: bytes newly acknowledged, an RTT sample or 0,
// and whether the receiver echoed a congestion mark.
func (s *sender) ccAcked(now monotime.Time, bytes int64, rtt, hostDelay monotime.Duration, ecn bool) {
	if s.cc != nil && (bytes > 0 || ecn) {
		s.cc.OnAck(now, cc.Ack{Bytes: bytes, RTT: rtt, HostDelay: hostDelay, ECN: ecn, InFlight: s.inflight})
	}
}

// ccLost reports bytes NACKed (timeout false) or timed out.
func (s *sender) ccLost(now monotime.Time, bytes int64, timeout bool) {
	if s.cc != nil && bytes > 0 {
		s.cc.OnLoss(now, cc.Loss{Bytes: bytes, Timeout: timeout})
	}
}

// ccTimeout runs the controller's timers when due.
func (s *sender) ccTimeout(now monotime.Time) {
	if s.cc == nil {
		return
	}
	if now >= s.pacedUntil {
		s.pacedUntil = monotime.Never
	}
	if now >= s.cc.NextTimer() {
		s.cc.OnTimer(now)
	}
}

// ccNextTimeout is when the controller next needs the driver: its own
// timers, and the end of a pacing gap that held a packet back.
func (s *sender) ccNextTimeout() monotime.Time {
	if s.cc == nil {
		return monotime.Never
	}
	return min(s.cc.NextTimer(), s.pacedUntil)
}

// CCStats returns the connection's congestion controller state; the zero
// Stats when it has none.
func (c *Conn) CCStats() cc.Stats {
	c.use()
	s := c.sender()
	if s.cc == nil {
		return cc.Stats{}
	}
	return s.cc.Stats()
}

// CCDetail returns the figures the connection's controller keeps of its
// own (cc.Detailed), or nil.
func (c *Conn) CCDetail() []cc.Figure {
	c.use()
	if d, ok := c.sender().cc.(cc.Detailed); ok {
		return d.Detail()
	}
	return nil
}
