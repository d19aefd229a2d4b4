package core

import (
	"slices"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// Receiver-driven congestion control (cc "credit"): the receivers of an
// endpoint share one pacer, and grant their posted messages credit - the
// bytes the sender may send - a chunk at a time, round-robin over their
// connections, no faster than the endpoint's line rate. A grant is a CTS
// whose Credit field grows; senders never send past it (send.go).

// linkOverhead is what Ethernet (preamble, gap, header, FCS), IPv4 and UDP
// add to every datagram on the wire.
const linkOverhead = 66

// creditScheduler is an endpoint's grant pacer and the receivers it serves.
type creditScheduler struct {
	pacer *cc.CreditPacer
	conns []*Conn
	turn  int  // the connection whose turn is next
	idle  bool // nothing wanted credit at the last look
	// resume says the scheduler was idle since its last grant: its
	// pacer starts afresh at the next tick instead of catching up.
	resume bool
	// A message's credit may run ahead of what has arrived by twice the
	// bandwidth-delay product (rate x the connection's measured round
	// trip), never less than floor: enough to keep the path full, while a
	// sender that is not sending yet does not take the grants others
	// could use.
	rate  float64 // bits per second, as granted
	floor uint64
}

// ahead is how far c's messages' credit may run ahead of their data.
func (s *creditScheduler) ahead(c *Conn) uint64 {
	bdp := s.rate / 8 * max(c.rcv.roundTrip(), c.rcv.probe.min).Seconds()
	return max(uint64(2*bdp), s.floor)
}

// initCredit joins a connection whose algorithm is receiver-driven to its
// endpoint's scheduler.
func (r *receiver) initCredit() {
	cfg := r.c.cfg
	p := cfg.ccParams().WithDefaults()
	// Credit counts payload bytes, but the link also carries each packet's
	// headers (ours, UDP, IP, Ethernet): grant at the rate that leaves the
	// link 1% of headroom, or the receiver's queue grows without end.
	payload := float64(cfg.MTU) / float64(cfg.MTU+wire.MessageLen+linkOverhead)
	p.LineRate *= 0.99 * payload
	pacer := cfg.CC.ReceiverCredit(p)
	if pacer == nil {
		return
	}
	e := r.c.ep
	if e.credit == nil {
		e.credit = &creditScheduler{pacer: pacer, rate: p.LineRate, floor: uint64(max(2*p.BDP(), int64(4*cfg.ChunkSize)))}
	}
	r.credit = e.credit
	r.probe = new(grantProbe)
	for _, c := range e.credit.conns {
		if c == r.c {
			return // adopt() initialises a dialed connection again
		}
	}
	e.credit.conns = append(e.credit.conns, r.c)
}

// wake says a receive may want credit now.
func (r *receiver) wake() {
	if s := r.credit; s != nil && s.idle {
		s.idle, s.resume = false, true
	}
}

// due is when the scheduler next needs to run: at once when it may have
// grants to make and the pacer allows, never when nothing wants credit.
func (s *creditScheduler) due() monotime.Time {
	if s.idle {
		return monotime.Never
	}
	return s.pacer.Next()
}

// tick makes the grants the pacer allows at now.
func (s *creditScheduler) tick(now monotime.Time) {
	if s.resume {
		s.resume = false
		s.pacer.Resume(now)
	}
	for !s.idle && s.pacer.Ready(now) {
		c, m := s.pick()
		if m == nil {
			s.idle = true
			return
		}
		c.rcv.activate(m) // credit is active state
		q := min(uint64(c.cfg.ChunkSize), m.creditWant()-m.credit)
		if pr := c.rcv.probe; !pr.on {
			pr.on, pr.seq, pr.off, pr.at = true, m.seq, m.credit, now
		}
		m.credit += q
		c.rcv.queueCredit(m)
		c.ep.touch(c)
		s.pacer.Granted(now, int64(q))
	}
}

// pick returns the next message to grant, round-robin over connections
// and oldest first within one.
func (s *creditScheduler) pick() (*Conn, *recvMsg) {
	// Closed connections leave the scheduler here, so the endpoint's
	// reaping frees them.
	if n := len(s.conns); n > 0 {
		if s.conns = slices.DeleteFunc(s.conns, func(c *Conn) bool { return c.closed }); len(s.conns) < n {
			s.turn = 0
		}
	}
	for i := range s.conns {
		c := s.conns[(s.turn+i)%len(s.conns)]
		if m := c.rcv.wantingCredit(s.ahead(c)); m != nil {
			s.turn = (s.turn + i + 1) % len(s.conns)
			return c, m
		}
	}
	return nil, nil
}

// wantingCredit returns the oldest posted message that may take more.
func (r *receiver) wantingCredit(ahead uint64) *recvMsg {
	if r.slots == nil {
		return nil
	}
	for seq := r.creditSeq; seq != r.nextSeq; seq++ {
		m := &r.slots[seq&r.c.slotMask]
		if m.seq != seq || m.state != recvPosted || m.granted() >= m.creditWant() {
			if seq == r.creditSeq {
				r.creditSeq++ // done with: never looked at again
			}
			continue
		}
		if credit := m.granted(); credit-min(credit, m.arrivedBytes()) < ahead {
			return m
		}
		return nil // the oldest is far enough ahead; later ones wait their turn
	}
	return nil
}

// creditWant is how much credit the message can use: its length once
// known, else the buffer's.
func (m *recvMsg) creditWant() uint64 {
	if m.known {
		return m.geo.MsgLen
	}
	return m.size
}

// arrivedBytes is about how many bytes of the message arrived.
func (m *recvMsg) arrivedBytes() uint64 {
	if !m.known {
		return 0
	}
	return uint64(m.pktCount) * uint64(m.geo.MTU)
}

// grantProbe times one grant, from its making to the first data it
// allowed: the receiver's round-trip sample under receiver-driven
// control, where a message gets many grants before its data and the
// CTS-to-data sample rarely exists. A sample may run long, never short;
// only the least is kept, for how far credit runs ahead.
type grantProbe struct {
	on  bool
	seq uint32        // the message granted
	off uint64        // the first byte the grant allowed
	at  monotime.Time // when it was granted
	min monotime.Duration
}

// creditArrived notes DATA packet p of m: it may end the grant probe, and
// if m wants more credit and is within its bound, an idle scheduler looks
// again.
func (r *receiver) creditArrived(now monotime.Time, m *recvMsg, p uint32, retransmit bool) {
	if pr := r.probe; pr.on && !retransmit &&
		(m.seq == pr.seq && uint64(p)*uint64(m.geo.MTU) >= pr.off || int32(m.seq-pr.seq) > 0) {
		pr.on = false
		if d := now.Sub(pr.at); pr.min == 0 || d < pr.min {
			pr.min = d
		}
	}
	m.lastData = now
	out := m.credit - min(m.credit, m.arrivedBytes())
	if r.credit.idle && m.credit < m.creditWant() && out < r.credit.ahead(r.c) {
		r.wake()
	}
}

// queueCredit asks for a CTS with m's credit, once however many grants
// come before it leaves.
func (r *receiver) queueCredit(m *recvMsg) {
	if !m.creditQd {
		m.creditQd = true
		r.c.ctrl.push(ctrlItem{kind: ctrlCredit, seq: m.seq})
	}
}

// encodeCredit writes a CTS carrying m's credit so far, and arms its
// retransmission: a lost grant would leave the sender waiting.
func (r *receiver) encodeCredit(now monotime.Time, seq uint32, buf []byte) int {
	m := &r.slots[seq&r.c.slotMask]
	if m.seq != seq || m.state != recvPosted {
		return 0
	}
	m.creditQd = false
	n := r.writeCTS(now, m, buf)
	m.ctsDue = now.Add(3 * r.roundTrip() / 2)
	r.file(m)
	return n
}

// creditExpired runs when a granted message's CTS timer fires. If the
// sender has credit it has not used and has been silent a round trip and
// a half, our last grant was lost: resend it (grants are cumulative, so
// only the last one matters).
func (r *receiver) creditExpired(now monotime.Time, m *recvMsg) {
	var sent uint64 // how far the sender got, by the furthest packet seen
	if m.known {
		sent = min(uint64(m.hi)*uint64(m.geo.MTU), m.geo.MsgLen)
	}
	wait := 3 * r.roundTrip() / 2
	switch {
	case m.granted() == 0 || m.credit <= sent:
		// The sender used its credit: it waits for more, nothing is lost.
	case m.lastData.Add(wait) <= now:
		r.queueCredit(m)
	default:
		m.ctsDue = m.lastData.Add(wait)
		r.file(m)
	}
}
