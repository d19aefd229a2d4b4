package core

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// RecvHandle names a posted receive.
type RecvHandle uint32

type recvState uint8

const (
	recvFree   recvState = iota
	recvPosted           // waiting for packets
	recvDone             // every byte arrived; waiting for Complete
	recvFailed           // failed; waiting for Complete
)

// recvMsg is the receiver's state of one posted buffer, in a slot reused
// (with its slices) by later messages.
type recvMsg struct {
	seq    uint32
	state  recvState
	buf    []byte // nil for a virtual receive
	size   uint64 // capacity: len(buf), or the virtual size
	known  bool   // the first packet arrived and fixed the geometry
	geo    wire.Geometry
	scheme reliability.Scheme

	npkts, nchunks uint32
	pkts           bitset // packets that arrived (or were decoded)
	decoded        bitset // packets rebuilt by erasure decoding, not yet reported
	decodedQueued  bool   // a NackDecoded report is queued
	decodedLo      uint32 // decoded packets to report lie in [decodedLo, decodedHi)
	decodedHi      uint32
	chunks         bitset   // chunks whose every packet arrived
	have           []uint32 // packets present per chunk
	chunkCount     uint32
	pktCount       uint32
	cumChunk       uint32 // chunks below are all whole
	eventQueued    bool   // an EventChunks is pending since the last ChunkBitmap

	ctsAt    monotime.Time
	ctsTries uint32
	credit   uint64        // receiver-driven control: bytes the sender may send
	creditQd bool          // a CTS carrying the credit is queued
	lastData monotime.Time // when a DATA packet last arrived

	// Where the first and the furthest packet so far stand in the sender's
	// first-pass order, and when they arrived: the receiver's measure of
	// the sender's packet rate that losses do not skew.
	firstAt, maxPosAt monotime.Time
	firstPos, maxPos  uint64

	ackQueued    bool
	ackLo, ackHi uint32 // chunks completed since the last ACK
	// The chunk the latest packet went into, when it is not whole yet: the
	// next ACK carries its packet bits. An ACK also goes out after every
	// chunk's worth of packets, even if no chunk completes.
	partial      uint32
	partialValid bool
	sinceAck     uint32

	nackQueued bool
	nackReason wire.NackReason
	nackFrom   uint32 // missing packets in [nackFrom, nackTo) are to be NACKed
	nackTo     uint32

	hi         uint32        // highest packet seen, plus one
	gapHi      uint32        // SR-NACK: gaps below this are NACKed when gapAt passes
	gapAt      monotime.Time // SR-NACK: Never when no gap is pending
	nackedTo   uint32        // SR-NACK: packets below were NACKed at least once
	renackAt   monotime.Time // NACK again what is still missing (SR-NACK, EC fallback)
	lastNackAt monotime.Time // when the last NACK left
	ftoAt      monotime.Time // EC: fallback timeout
	ctsDue     monotime.Time // CTS retransmission

	expected uint32 // go-back-N: next packet accepted
	nakSent  bool

	ec ecRecv
}

func (m *recvMsg) due() monotime.Time { return min(m.gapAt, m.renackAt, m.ftoAt, m.ctsDue) }

// receiver is a connection's receiving half.
type receiver struct {
	c        *Conn
	slots    []recvMsg
	nextSeq  uint32
	deadline monotime.Time // earliest due() of any posted message
	rtt      reliability.RTT
	// reorder is how long packets have been seen to arrive late: a gap is
	// NACKed only after standing longer (RACK's reordering window).
	reorder monotime.Duration
	ec      ecPool
	ceSeen  bool // a DATA or PARITY packet arrived CE-marked since the last ACK
	// Receiver-driven control (credit.go): the endpoint's scheduler, and
	// the oldest message that may still want credit.
	credit    *creditScheduler
	creditSeq uint32
}

func (r *receiver) init(c *Conn) {
	r.c = c
	r.slots = make([]recvMsg, c.cfg.MaxMsgs)
	r.deadline = monotime.Never
	r.rtt = reliability.NewRTT(c.cfg.InitialRTT)
	r.ec.init(c)
	r.credit, r.creditSeq = nil, 0
	r.initCredit()
}

// PostRecv posts buf to receive the next message the peer sends (the n-th
// posted buffer takes the n-th message) and grants the peer clear-to-send.
// The connection writes into buf until the receive is completed.
func (c *Conn) PostRecv(buf []byte) (RecvHandle, error) {
	if len(buf) == 0 {
		return 0, ErrEmptyMessage
	}
	return c.postRecv(buf, uint64(len(buf)))
}

// PostRecvVirtual posts a receive of up to size bytes that keeps no
// content: the bitmap and events work as for a real buffer, but payloads
// are dropped. It pairs with SendVirtual in simulations.
func (c *Conn) PostRecvVirtual(size int) (RecvHandle, error) {
	if size <= 0 {
		return 0, ErrEmptyMessage
	}
	return c.postRecv(nil, uint64(size))
}

func (c *Conn) postRecv(buf []byte, size uint64) (RecvHandle, error) {
	r := &c.rcv
	if c.closed {
		return 0, ErrClosed
	}
	if c.state == stateDialing {
		return 0, ErrNotEstablished
	}
	seq := r.nextSeq
	m := &r.slots[seq&c.slotMask]
	if m.state != recvFree {
		return 0, ErrTooManyMessages
	}
	*m = recvMsg{seq: seq, state: recvPosted, buf: buf, size: size,
		pkts: m.pkts, chunks: m.chunks, have: m.have, ec: m.ec,
		gapAt: monotime.Never, renackAt: monotime.Never, ftoAt: monotime.Never, ctsDue: monotime.Never,
		ackLo: ^uint32(0)}
	r.nextSeq++
	if r.credit != nil {
		r.wake() // its first grant is its CTS
	} else {
		c.ctrl.push(ctrlItem{kind: ctrlCTS, seq: seq})
	}
	return RecvHandle(seq), nil
}

func (r *receiver) handle(h RecvHandle) (*recvMsg, error) {
	m := &r.slots[uint32(h)&r.c.slotMask]
	if m.seq != uint32(h) || m.state == recvFree {
		return nil, ErrUnknownHandle
	}
	return m, nil
}

// ChunkBitmap returns the chunk bitmap of a receive: bit i is set once
// every packet of chunk i is in the buffer. It is empty until the first
// packet tells the message's length. Reading it re-arms EventChunks.
func (c *Conn) ChunkBitmap(h RecvHandle) (Bitmap, error) {
	m, err := c.rcv.handle(h)
	if err != nil {
		return Bitmap{}, err
	}
	m.eventQueued = false
	if !m.known {
		return Bitmap{}, nil
	}
	return Bitmap{words: m.chunks, n: m.nchunks}, nil
}

// ExpandChunk returns the per-packet bitmap of chunk i.
func (c *Conn) ExpandChunk(h RecvHandle, i int) (Bitmap, error) {
	m, err := c.rcv.handle(h)
	if err != nil {
		return Bitmap{}, err
	}
	if !m.known || i < 0 || uint32(i) >= m.nchunks {
		return Bitmap{}, ErrChunkRange
	}
	start := uint32(i) << c.shift
	return Bitmap{words: m.pkts, off: start, n: min(start+1<<c.shift, m.npkts) - start}, nil
}

// MessageLen returns the length of the message being received, once its
// first packet has arrived.
func (c *Conn) MessageLen(h RecvHandle) (int, bool, error) {
	m, err := c.rcv.handle(h)
	if err != nil || !m.known {
		return 0, false, err
	}
	return int(m.geo.MsgLen), true, nil
}

// Complete ends a receive and frees its slot for a later message. It is
// mandatory, also after a failure. Completing a receive before the message
// is whole abandons the rest: the sender is told the message is done.
func (c *Conn) Complete(h RecvHandle) error {
	m, err := c.rcv.handle(h)
	if err != nil {
		return err
	}
	c.rcv.ec.release(&m.ec)
	m.state, m.buf, m.scheme = recvFree, nil, nil
	return nil
}

func (r *receiver) failAll() {
	for i := range r.slots {
		if m := &r.slots[i]; m.state == recvPosted {
			r.fail(m, ErrClosed)
		}
	}
}

func (r *receiver) fail(m *recvMsg, err error) {
	m.state = recvFailed
	r.ec.release(&m.ec)
	r.c.emit(EventRecvFailed, m.seq, err)
}

func (r *receiver) onAbort(id wire.MsgID) {
	if m := r.exact(id); m != nil && m.state == recvPosted {
		r.fail(m, ErrMessageTooLarge)
	}
}

// exact returns the slot holding exactly message id, or nil.
func (r *receiver) exact(id wire.MsgID) *recvMsg {
	if uint32(id.Slot) > r.c.slotMask {
		return nil
	}
	m := &r.slots[id.Slot]
	if m.state == recvFree || r.c.msgID(m.seq) != id {
		return nil
	}
	return m
}

// accepting returns the posted message a DATA or PARITY packet belongs to.
// A packet of a message that already completed (or whose slot moved on to
// a later generation) gets a whole-message ACK so its sender stops.
func (r *receiver) accepting(id wire.MsgID, geo *wire.Geometry) (*recvMsg, error) {
	c := r.c
	if uint32(id.Slot) > c.slotMask {
		return nil, errMalformed
	}
	m := &r.slots[id.Slot]
	age := c.genAge(id, m.seq)
	if age < 0 || (age == 0 && (m.state == recvFree || m.state == recvDone)) {
		c.stats.StalePackets++
		c.ctrl.push(ctrlItem{kind: ctrlDoneAck, id: id})
		return nil, nil
	}
	if age > 0 || m.state != recvPosted {
		c.stats.StalePackets++
		return nil, nil
	}
	if m.known {
		if *geo != m.geo {
			return nil, errMalformed
		}
		return m, nil
	}
	kind := reliability.Kind(geo.Scheme)
	if !kind.Valid() {
		return nil, errMalformed
	}
	if geo.MsgLen > m.size {
		r.fail(m, ErrMessageTooLarge)
		m.nackReason = wire.NackTooLarge
		c.ctrl.push(ctrlItem{kind: ctrlNack, seq: m.seq})
		return nil, nil
	}
	return m, nil
}

// start fixes the geometry and scheme of m from its first packet.
func (r *receiver) start(now monotime.Time, m *recvMsg, geo *wire.Geometry, scheme reliability.Scheme) {
	m.known, m.geo, m.scheme = true, *geo, scheme
	m.npkts = uint32(geo.Packets())
	m.nchunks = (m.npkts + 1<<geo.ChunkShift - 1) >> geo.ChunkShift
	m.pkts.reset(m.npkts)
	m.chunks.reset(m.nchunks)
	if cap(m.have) < int(m.nchunks) {
		m.have = make([]uint32, m.nchunks)
	}
	m.have = m.have[:m.nchunks]
	clear(m.have)
	if r.credit == nil {
		m.ctsDue = monotime.Never
	} else if m.credit > geo.MsgLen { // granted for the buffer: give back what the message cannot use
		r.credit.pacer.Refund(int64(m.credit - geo.MsgLen))
		m.credit = geo.MsgLen
	}
	if m.ctsTries == 1 {
		r.rtt.Update(now.Sub(m.ctsAt))
	}
	if scheme.Code() != nil {
		r.ec.start(m)
	}
}

// arrived notes that the packet at position pos of the sender's first
// pass arrived; the first one arms the EC fallback.
func (r *receiver) arrived(now monotime.Time, m *recvMsg, pos uint64, first bool) {
	if first {
		m.firstAt, m.firstPos = now, pos
		m.maxPosAt, m.maxPos = now, pos
		if m.ec.code != nil {
			r.arm(m, now.Add(r.fallbackTimeout(m)))
		}
	} else if pos > m.maxPos {
		m.maxPosAt, m.maxPos = now, pos
	}
}

// nackDelay is how long a gap in m stands before it is NACKed: the
// scheme's delay, stretched to the reordering the connection has shown.
func (r *receiver) nackDelay(m *recvMsg) monotime.Duration {
	d := m.scheme.NackDelay(r.roundTrip())
	if d == 0 {
		return 0
	}
	return max(d, r.reorder)
}

// spuriousNack learns from an original packet that arrives after its gap
// was NACKed: reordering, not loss. The window grows to cover how late it
// was, with margin.
func (r *receiver) spuriousNack(now monotime.Time, m *recvMsg) {
	r.c.stats.SpuriousNacks++
	late := r.nackDelay(m) + now.Sub(m.lastNackAt)
	// Capped (as RACK caps its window at SRTT): past the cap, waiting
	// longer costs more than a spurious retransmission. The cap is the
	// largest of half the base round trip, the spread queueing adds to
	// round trips (SRTT + 4 RTTVAR over the minimum): packets sprayed over
	// paths whose queues differ arrive that far apart, and half the
	// sender's minimum RTO: its timer cannot repair a loss sooner, so a
	// NACK that waits that long still wins by half. On a long-haul link
	// the first governs. In a datacenter fabric the last: the receiver's
	// RTT samples (CTS to first data) are too few to see the spread, and
	// without it a queue of 1 MiB at 100 Gbit/s (80 us) made every
	// sprayed packet behind it look lost.
	spread := r.rtt.Conservative() - r.roundTrip()
	r.reorder = min(max(r.reorder, late+late/2), max(r.roundTrip()/2, spread, MinRTO/2))
}

// roundTrip is the receiver's view of the RTT: the smallest CTS-to-data
// delay seen (larger ones include the sender's application delay).
func (r *receiver) roundTrip() monotime.Duration { return r.rtt.Min() }

// arm sets m's EC fallback deadline.
func (r *receiver) arm(m *recvMsg, at monotime.Time) {
	m.ftoAt = at
	r.deadline = min(r.deadline, at)
}

func (r *receiver) onData(now monotime.Time, d *wire.Data) error {
	m, err := r.accepting(d.Msg, &d.Geometry)
	if m == nil {
		return err
	}
	first := !m.known
	if first {
		kind := reliability.Kind(d.Scheme)
		scheme := r.c.scheme(kind)
		if kind == reliability.KindECMDS || kind == reliability.KindECXOR {
			scheme = r.ec.scheme(kind, d.K, d.M)
		}
		if scheme == nil {
			return errMalformed
		}
		r.start(now, m, &d.Geometry, scheme)
	}
	p := d.Packet
	r.arrived(now, m, r.ec.dataPos(m, p), first)
	if m.scheme.InOrder() {
		if p != m.expected {
			if p > m.expected {
				r.c.stats.DroppedOutOfOrder++
				if !m.nakSent {
					m.nakSent = true
					r.queueNack(m, wire.NackOutOfOrder, m.expected, m.expected+1)
				}
			} else {
				r.c.stats.DupPackets++
				r.queueAck(m, 0)
			}
			return nil
		}
		m.expected++
		m.nakSent = false
	}
	if m.pkts.test(p) {
		r.c.stats.DupPackets++
		if c := p >> m.geo.ChunkShift; m.chunks.test(c) {
			r.queueAck(m, c) // our ACK was lost: say it again
		}
		return nil
	}
	if m.buf != nil {
		copy(m.buf[uint64(p)*uint64(m.geo.MTU):], d.Payload)
	}
	r.c.stats.RecvPackets++
	r.c.stats.RecvBytes += uint64(len(d.Payload))
	if r.credit != nil {
		r.creditArrived(now, m)
	}
	if p+1 < m.hi {
		r.c.stats.OutOfOrder++
		if d.Flags&wire.FlagRetransmit == 0 {
			depth := uint64(m.hi - 1 - p)
			r.c.stats.Reordered++
			r.c.stats.ReorderDepth += depth
			r.c.stats.MaxReorder = max(r.c.stats.MaxReorder, depth)
		}
		if p < m.nackedTo && d.Flags&wire.FlagRetransmit == 0 {
			r.spuriousNack(now, m)
		}
	}
	if p >= m.hi {
		if p > m.hi && m.gapAt == monotime.Never {
			if delay := r.nackDelay(m); delay > 0 {
				m.gapAt, m.gapHi = now.Add(delay), p
				r.deadline = min(r.deadline, m.gapAt)
			}
		}
		m.hi = p + 1
	}
	r.accept(now, m, p)
	if c := p >> m.geo.ChunkShift; m.state == recvPosted && !m.chunks.test(c) && !m.scheme.InOrder() {
		m.partial, m.partialValid = c, true
		if m.sinceAck++; m.sinceAck >= 1<<m.geo.ChunkShift {
			r.queueAck(m, c)
		}
	}
	return nil
}

// accept records packet p of m as present, whether it arrived or was
// decoded.
func (r *receiver) accept(now monotime.Time, m *recvMsg, p uint32) {
	m.pkts.set(p)
	m.pktCount++
	c := p >> m.geo.ChunkShift
	m.have[c]++
	if m.have[c] == r.chunkPackets(m, c) {
		m.chunks.set(c)
		m.chunkCount++
		if c == m.cumChunk {
			m.cumChunk = m.chunks.nextClear(c, m.nchunks)
		}
		if m.ec.code != nil {
			r.ec.chunkWhole(m, c)
		}
		if m.chunkCount == m.nchunks {
			r.complete(m)
			return
		}
		r.queueAck(m, c)
		if !m.eventQueued {
			m.eventQueued = true
			r.c.emit(EventChunks, m.seq, nil)
		}
	}
	if m.ec.code != nil {
		r.ec.dataArrived(now, r, m, p)
	}
}

func (r *receiver) chunkPackets(m *recvMsg, c uint32) uint32 {
	start := c << m.geo.ChunkShift
	return min(start+1<<m.geo.ChunkShift, m.npkts) - start
}

func (r *receiver) complete(m *recvMsg) {
	m.state = recvDone
	r.wake()                    // the next message may take credit now
	r.reorder -= r.reorder / 16 // forget old reordering, slowly
	m.gapAt, m.renackAt, m.ftoAt = monotime.Never, monotime.Never, monotime.Never
	r.ec.release(&m.ec)
	r.c.emit(EventRecvDone, m.seq, nil)
	if m.scheme.Kind() != reliability.KindNone {
		r.c.ctrl.push(ctrlItem{kind: ctrlDoneAck, id: r.c.msgID(m.seq)})
	}
}

// queueAck asks for an ACK that covers chunk c.
func (r *receiver) queueAck(m *recvMsg, c uint32) {
	if m.scheme.Kind() == reliability.KindNone {
		return
	}
	m.ackLo, m.ackHi = min(m.ackLo, c), max(m.ackHi, c)
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
		credit = m.credit
	}
	cts := wire.CTS{Conn: r.c.peerID, Msg: r.c.msgID(m.seq), BufLen: m.size, Credit: credit}
	n, _ := cts.Encode(buf)
	m.ctsAt = now
	m.ctsTries++
	// A sender that has data starts within a round trip of the CTS, so
	// resend after 1.5 RTT; back off, a little, since the sender may simply
	// have nothing to send yet, but a burst of losses must not leave the
	// message waiting for long.
	backoff := min(m.ctsTries-1, 3)
	m.ctsDue = now.Add(3 * r.roundTrip() / 2 << backoff)
	r.deadline = min(r.deadline, m.ctsDue)
	return n
}

// ecnEcho returns FlagECNEcho once for the congestion marks seen since
// the previous ACK.
func (r *receiver) ecnEcho() uint8 {
	if !r.ceSeen {
		return 0
	}
	r.ceSeen = false
	return wire.FlagECNEcho
}

func (r *receiver) encodeAck(seq uint32, buf []byte) int {
	m := &r.slots[seq&r.c.slotMask]
	if m.seq != seq || m.state != recvPosted || !m.ackQueued {
		return 0
	}
	m.ackQueued = false
	a := wire.Ack{Conn: r.c.peerID, Msg: r.c.msgID(seq), Flags: r.ecnEcho()}
	if m.scheme.InOrder() {
		a.Cum = m.expected
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

func (r *receiver) encodeNack(now monotime.Time, seq uint32, buf []byte) int {
	m := &r.slots[seq&r.c.slotMask]
	if m.seq != seq || !m.nackQueued {
		return 0
	}
	m.nackQueued = false
	nk := wire.Nack{Conn: r.c.peerID, Msg: r.c.msgID(seq), Reason: m.nackReason}
	ranges := r.c.ranges[:0]
	m.lastNackAt = now
	switch {
	case m.nackReason == wire.NackTooLarge:
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
	r.c.ranges = ranges
	n, _ := wire.EncodeNack(buf, &nk, ranges)
	return n
}

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
	if m.seq != seq || !m.decodedQueued || m.state == recvFree {
		return 0
	}
	m.decodedQueued = false
	limit := wire.MaxNackRanges(len(buf))
	ranges := r.c.ranges[:0]
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
	r.c.ranges = ranges
	if len(ranges) == 0 {
		return 0
	}
	nk := wire.Nack{Conn: r.c.peerID, Msg: r.c.msgID(seq), Reason: wire.NackDecoded}
	n, _ := wire.EncodeNack(buf, &nk, ranges)
	return n
}
