package core

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// The receiver's control packets: the CTS that grants a posted buffer, the
// ACKs and NACKs that report a message's bitmap, and the reports of what
// erasure decoding rebuilt. Each is queued on the connection's control
// ring and built from current state when it leaves.

// queueAck asks for an ACK that covers chunk c.
func (r *receiver) queueAck(m *recvMsg, c uint32) {
	if !m.scheme.Acknowledged() {
		return
	}
	m.ackLo, m.ackHi = min(m.ackLo, c), max(m.ackHi, c)
	// The ACK's delay counts from the newest packet it answers, when the
	// host said when that arrived (Received.Arrived).
	m.ackAt = r.c.ep.arrived
	if !m.ackQueued {
		m.ackQueued = true
		r.c.ctrl.push(ctrlItem{kind: ctrlAck, seq: m.seq})
	}
}

// queueNack asks for a NACK of the packets missing in [from, to).
func (r *receiver) queueNack(m *recvMsg, reason wire.NackReason, from, to uint32) {
	if m.nackQueued {
		m.nackFrom, m.nackTo = min(m.nackFrom, from), max(m.nackTo, to)
	} else {
		m.nackFrom, m.nackTo = from, to
		m.nackQueued = true
		r.c.ctrl.push(ctrlItem{kind: ctrlNack, seq: m.seq})
	}
	m.nackReason = reason
}

func (r *receiver) encodeCTS(now monotime.Time, seq uint32, buf []byte) int {
	m := &r.slots[seq&r.c.slotMask]
	if m.seq != seq || m.state != recvPosted || m.known {
		return 0
	}
	return r.writeCTS(now, m, buf)
}

// writeCTS writes m's CTS: its whole buffer as credit, or under
// receiver-driven control the credit granted so far.
func (r *receiver) writeCTS(now monotime.Time, m *recvMsg, buf []byte) int {
	credit := m.size
	if r.credit != nil {
		credit = m.granted()
	}
	cts := wire.CTS{Conn: r.c.peerID, Msg: r.c.msgID(m.seq), BufLen: m.size, Credit: credit}
	n, _ := cts.Encode(buf)
	m.ctsAt = now
	if m.ctsTries == 0 {
		m.ctsFirst = now
	}
	m.ctsTries++
	// A sender that has data starts within a round trip of the CTS, so
	// resend after 1.5 RTT; back off, a little, since the sender may simply
	// have nothing to send yet, but a burst of losses must not leave the
	// message waiting for long.
	backoff := min(m.ctsTries-1, 3)
	m.ctsDue = now.Add(3 * r.roundTrip() / 2 << backoff)
	r.file(m)
	return n
}

// echoes returns an ACK's reports on what arrived since the previous
// ACK, once each: FlagECNEcho for congestion marks, FlagDupResend for a
// resend that found its packet here.
func (r *receiver) echoes() uint8 {
	var f uint8
	if r.ceSeen {
		f |= wire.FlagECNEcho
	}
	if r.dupResent {
		f |= wire.FlagDupResend
	}
	r.ceSeen, r.dupResent = false, false
	return f
}

// ackDelay is wire.Ack.Delay for an ACK leaving at now that answers a
// packet that arrived at at (0: unknown): microseconds, at most 65,535.
func ackDelay(now, at monotime.Time) uint16 {
	if at == 0 || at > now {
		return 0
	}
	return uint16(min(now.Sub(at)/monotime.Microsecond, 1<<16-1))
}

func (r *receiver) encodeAck(now monotime.Time, seq uint32, buf []byte) int {
	m := &r.slots[seq&r.c.slotMask]
	if m.seq != seq || m.state != recvPosted || m.recvActive == nil || !m.ackQueued {
		return 0
	}
	if m.decodedQueued {
		// Decoding rebuilt packets since this ACK was queued, and the
		// ACK will cover them: the sender must hear what was decoded
		// first, or it credits the paths that lost those packets with
		// delivering them (restoring a dead path on every decoded
		// probe). The ACK goes after the report.
		if n := r.encodeDecoded(seq, buf); n > 0 {
			r.c.ctrl.push(ctrlItem{kind: ctrlAck, seq: seq})
			return n
		}
	}
	m.ackQueued = false
	a := wire.Ack{Conn: r.c.peerID, Msg: r.c.msgID(seq), Flags: r.echoes(), Delay: ackDelay(now, m.ackAt)}
	if m.scheme.InOrder() {
		a.Cum = m.pktCount // in order: every packet below is here
		n, _ := wire.EncodeAck(buf, &a, nil)
		return n
	}
	a.Flags |= wire.FlagChunkUnits
	a.Cum = m.cumChunk
	m.sinceAck = 0
	if m.partialValid && !m.chunks.test(m.partial) && m.geo.ChunkShift <= 6 {
		a.Flags |= wire.FlagPacketBits
		a.PktChunk = m.partial
		a.PktBits = Bitmap{words: m.pkts, off: m.partial << m.geo.ChunkShift, n: r.chunkPackets(m, m.partial)}.word()
	}
	m.partialValid = false
	lo := max(m.ackLo, m.cumChunk)
	if lo > m.ackHi || lo >= m.nchunks {
		m.ackLo, m.ackHi = ^uint32(0), 0
		n, _ := wire.EncodeAck(buf, &a, nil)
		return n
	}
	a.Base = lo &^ 63
	words := min((m.ackHi-a.Base)/64+1, wire.MaxAckWords, uint32(len(buf)-wire.AckLen)/8)
	n, _ := wire.EncodeAck(buf, &a, m.chunks[a.Base/64:a.Base/64+words])
	if covered := a.Base + 64*words; m.ackHi >= covered {
		m.ackLo = covered
		m.ackQueued = true
		r.c.ctrl.push(ctrlItem{kind: ctrlAck, seq: seq})
	} else {
		m.ackLo, m.ackHi = ^uint32(0), 0
	}
	return n
}

// encodeDone builds the Done ACK of seq, which has just completed. Unlike
// the Done ACK that answers a stale packet (ctrlDoneAck), it says so
// (FlagCompleted), and the sender takes an RTT sample from it (doneSent);
// it carries the receiver's hold since the completing packet arrived, as
// a chunk's ACK does. The application may have completed the receive
// already (recvFree, the slot still holding seq); a datagram peer keeps
// its slots while this ACK waits (settle).
func (r *receiver) encodeDone(now monotime.Time, seq uint32, buf []byte) int {
	a := wire.Ack{Conn: r.c.peerID, Flags: wire.FlagDone | wire.FlagCompleted | wire.FlagChunkUnits | r.echoes(),
		Msg: r.c.msgID(seq)}
	if i := seq & r.c.slotMask; int(i) < len(r.slots) {
		if m := &r.slots[i]; m.seq == seq && (m.state == recvDone || m.state == recvFree) {
			a.Delay = ackDelay(now, m.ackAt)
		}
	}
	n, _ := wire.EncodeAck(buf, &a, nil)
	return n
}

func (r *receiver) encodeNack(now monotime.Time, seq uint32, buf []byte) int {
	m := &r.slots[seq&r.c.slotMask]
	if m.seq != seq || m.recvActive == nil || !m.nackQueued {
		return 0
	}
	m.nackQueued = false
	nk := wire.Nack{Conn: r.c.peerID, Msg: r.c.msgID(seq), Reason: m.nackReason}
	ranges := r.c.ep.ranges[:0]
	m.lastNackAt = now
	switch {
	case m.state != recvPosted:
		return 0
	case m.nackReason == wire.NackOutOfOrder:
		ranges = append(ranges, wire.Range{Start: m.nackFrom, Count: 1})
	default:
		limit := wire.MaxNackRanges(len(buf))
		to := min(m.nackTo, m.npkts)
		p := m.pkts.nextClear(m.nackFrom, to)
		for p < to && len(ranges) < limit {
			e := m.pkts.nextSet(p, to)
			ranges = append(ranges, wire.Range{Start: p, Count: e - p})
			p = m.pkts.nextClear(e, to)
		}
		if p < to { // more gaps than fit: NACK the rest next
			r.queueNack(m, m.nackReason, p, to)
		}
		if len(ranges) == 0 {
			return 0
		}
	}
	r.c.ep.ranges = ranges
	n, _ := wire.EncodeNack(buf, &nk, ranges)
	return n
}

// reportDecoded notes that decoding rebuilt packet p: the sender hears of
// it (NackDecoded) before the ACK that decoding may trigger, so it can
// charge the loss to the path that lost the packet.
func (r *receiver) reportDecoded(m *recvMsg, p uint32) {
	m.decoded.set(p)
	if !m.decodedQueued {
		m.decodedQueued = true
		m.decodedLo, m.decodedHi = p, p+1
		r.c.ctrl.push(ctrlItem{kind: ctrlDecoded, seq: m.seq})
		return
	}
	m.decodedLo, m.decodedHi = min(m.decodedLo, p), max(m.decodedHi, p+1)
}

func (r *receiver) encodeDecoded(seq uint32, buf []byte) int {
	m := &r.slots[seq&r.c.slotMask]
	if m.seq != seq || m.state == recvFree || m.recvActive == nil || !m.decodedQueued {
		return 0
	}
	m.decodedQueued = false
	limit := wire.MaxNackRanges(len(buf))
	ranges := r.c.ep.ranges[:0]
	p := m.decoded.nextSet(m.decodedLo, m.decodedHi)
	for p < m.decodedHi && len(ranges) < limit {
		e := m.decoded.nextClear(p, m.decodedHi)
		ranges = append(ranges, wire.Range{Start: p, Count: e - p})
		for q := p; q < e; q++ {
			m.decoded.clear(q)
		}
		p = m.decoded.nextSet(e, m.decodedHi)
	}
	if p < m.decodedHi { // more than fit: report the rest next
		m.decodedQueued, m.decodedLo = true, p
		r.c.ctrl.push(ctrlItem{kind: ctrlDecoded, seq: seq})
	}
	r.c.ep.ranges = ranges
	if len(ranges) == 0 {
		return 0
	}
	nk := wire.Nack{Conn: r.c.peerID, Msg: r.c.msgID(seq), Reason: wire.NackDecoded}
	n, _ := wire.EncodeNack(buf, &nk, ranges)
	return n
}
