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
// by later messages. A buffer posted ahead of its data holds only what its
// clear-to-send needs; the state of a message under way (bitmaps, ACK and
// NACK state, the scheme's) is a recvActive, taken from the endpoint's pool
// when its first packet arrives and given back when the receive is
// completed. A collective posts a window of receives on every one of
// thousands of connections, and few of them have data at once.
type recvMsg struct {
	seq         uint32
	state       recvState
	known       bool // the first packet arrived and fixed the geometry
	eventQueued bool // an EventChunks is pending since the last ChunkBitmap
	inStep      bool
	step        uint32 // the collective step it belongs to (steps.go)
	ctsTries    uint32
	buf         []byte // nil for a virtual receive
	size        uint64 // capacity: len(buf), or the virtual size

	ctsAt    monotime.Time
	ctsFirst monotime.Time // when the first CTS left
	ctsDue   monotime.Time // CTS retransmission
	filed    monotime.Time // its entry on the receiver's timer heap: due() or earlier
	// ackAt is when the newest packet the next ACK answers reached the
	// host; 0: unknown. The Done ACK reads it after the receive completed.
	ackAt monotime.Time

	*recvActive
}

// recvActive is the state of a message whose data has begun to arrive,
// or, under receiver-driven control, that has been granted credit.
type recvActive struct {
	r      *receiver
	geo    wire.Geometry
	scheme reliability.Scheme
	imm    uint32 // the immediate value, where geo.HasImm

	npkts, nchunks uint32
	chunkCount     uint32
	pktCount       uint32
	cumChunk       uint32   // chunks below are all whole
	hi             uint32   // highest packet seen, plus one
	pkts           bitset   // packets that arrived (or were decoded)
	chunks         bitset   // chunks whose every packet arrived
	resentWhole    bitset   // of those, the ones a resent packet completed (wire.FlagDupResend)
	have           []uint32 // packets present per chunk
	decoded        bitset   // packets rebuilt by erasure decoding, not yet reported
	decodedLo      uint32   // decoded packets to report lie in [decodedLo, decodedHi)
	decodedHi      uint32

	// Where the first and the furthest packet so far stand in the sender's
	// first-pass order, and when they arrived: the receiver's measure of
	// the sender's packet rate that losses do not skew.
	firstAt, maxPosAt monotime.Time
	firstPos, maxPos  uint64

	ackLo, ackHi uint32 // chunks completed since the last ACK
	// The chunk the latest packet went into, when it is not whole yet: the
	// next ACK carries its packet bits. An ACK also goes out after every
	// chunk's worth of packets, even if no chunk completes.
	partial  uint32
	sinceAck uint32

	nackFrom   uint32 // missing packets in [nackFrom, nackTo) are to be NACKed
	nackTo     uint32
	lastNackAt monotime.Time // when the last NACK left

	rs reliability.RecvState // the scheme's own (recv_hooks.go)
	ec *ecRecv               // made for its first coded message

	// Receiver-driven control (credit.go): the bytes the sender may send,
	// and when a DATA packet last arrived.
	credit   uint64
	lastData monotime.Time

	decodedQueued bool // a NackDecoded report is queued
	ackQueued     bool
	partialValid  bool // partial names a chunk
	nackQueued    bool
	nackReason    wire.NackReason
	creditQd      bool // a CTS carrying the credit is queued
}

// granted is the credit m has been given: none before it is active.
func (m *recvMsg) granted() uint64 {
	if m.recvActive == nil {
		return 0
	}
	return m.credit
}

// activate gives m its active state, from the endpoint's pool: what an
// earlier message left there, cleared, keeping its buffers.
func (r *receiver) activate(m *recvMsg) {
	if m.recvActive != nil {
		return
	}
	a := r.c.ep.recvPool.take()
	rs := a.rs
	*a = recvActive{r: r, pkts: a.pkts, decoded: a.decoded, chunks: a.chunks, resentWhole: a.resentWhole,
		have: a.have, ec: a.ec, rs: rs, ackLo: ^uint32(0)}
	a.rs.Reset()
	m.recvActive = a
}

// deactivate gives m's active state back to the endpoint's pool.
func (r *receiver) deactivate(m *recvMsg) {
	a := m.recvActive
	if a == nil {
		return
	}
	r.ec.release(a.ec)
	a.scheme, a.r = nil, nil // the pool holds no closed connection alive
	m.recvActive = nil
	r.c.ep.recvPool.put(a)
}

// coded says whether m is erasure coded.
func (m *recvMsg) coded() bool { return m.ec != nil && m.ec.code != nil }

func (m *recvMsg) due() monotime.Time {
	if m.recvActive == nil {
		return m.ctsDue
	}
	return min(m.rs.Due(), m.ctsDue)
}

// receiver is a connection's receiving half.
type receiver struct {
	c       *Conn
	stats   RecvCounts
	slots   []recvMsg
	nextSeq uint32
	// creditSeq: under receiver-driven control (credit.go), the oldest
	// message that may still want credit.
	creditSeq uint32
	deadline  monotime.Time // earliest due() of any posted message
	timers    []recvTimer   // posted messages' due times, a heap (recv_timers.go)
	rtt       reliability.RTT
	// reorder is how long packets have been seen to arrive late: a gap is
	// NACKed only after standing longer (RACK's reordering window).
	reorder monotime.Duration
	ec      ecPool
	// Receiver-driven control (credit.go): the endpoint's scheduler.
	credit *creditScheduler
	probe  *grantProbe // made with the credit scheduler
	// live counts the slots not free: a datagram peer's slots are leased
	// (datagram.go) and given back when it drops to zero.
	live   int
	ceSeen bool // a DATA or PARITY packet arrived CE-marked since the last ACK
	// dupResent: a resent DATA packet of a chunk that was whole arrived
	// since the last ACK (wire.FlagDupResend).
	dupResent bool
}

func (r *receiver) init(c *Conn) {
	r.c = c
	r.slots = nil // made on first use (useSlots)
	r.deadline = monotime.Never
	r.rtt = reliability.NewRTT(c.cfg.InitialRTT)
	r.ec.init(c)
	r.credit, r.creditSeq, r.probe = nil, 0, nil
	r.initCredit()
}

// useSlots gives the receiver its message slots when it first needs them:
// a connection makes them (one that only ever sends never does), a
// datagram peer leases them from its endpoint's pool.
func (r *receiver) useSlots() {
	if r.c.ud != nil {
		r.c.ud.leaseRecv(r)
	} else {
		r.slots = make([]recvMsg, 1) // grown as messages reach them (slots.go)
	}
	r.sizeDue()
}

// sizeDue makes the endpoint's set of due slots hold all of r's.
func (r *receiver) sizeDue() {
	if due := &r.c.ep.dueNow; len(*due)*64 < len(r.slots) {
		due.reset(uint32(len(r.slots)))
	}
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
	c.ep.touch(c) // what it may send or when its timers fire changes
	c.use()
	r := c.receiver()
	if c.closed {
		return 0, ErrClosed
	}
	if c.state == stateDialing {
		return 0, ErrNotEstablished
	}
	seq := r.nextSeq
	r.reach(seq)
	m := &r.slots[seq&c.slotMask]
	if m.state != recvFree {
		return 0, ErrTooManyMessages
	}
	r.live++
	*m = recvMsg{seq: seq, state: recvPosted, buf: buf, size: size,
		ctsDue: monotime.Never, filed: monotime.Never}
	r.nextSeq++
	if r.credit != nil {
		r.wake() // its first grant is its CTS
	} else {
		c.ctrl.push(ctrlItem{kind: ctrlCTS, seq: seq})
	}
	return RecvHandle(seq), nil
}

// recvOf returns the receive h names: none on a connection still idle.
func (c *Conn) recvOf(h RecvHandle) (*recvMsg, error) {
	if c.connBody == nil || c.rcv == nil {
		return nil, ErrUnknownHandle
	}
	return c.rcv.handle(h)
}

func (r *receiver) handle(h RecvHandle) (*recvMsg, error) {
	if int(uint32(h)&r.c.slotMask) >= len(r.slots) {
		return nil, ErrUnknownHandle
	}
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
	m, err := c.recvOf(h)
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
	m, err := c.recvOf(h)
	if err != nil {
		return Bitmap{}, err
	}
	if !m.known || i < 0 || uint32(i) >= m.nchunks {
		return Bitmap{}, ErrChunkRange
	}
	start := uint32(i) << c.shift
	return Bitmap{words: m.pkts, off: start, n: min(start+1<<c.shift, m.npkts) - start}, nil
}

// Immediate returns the 32-bit immediate value of a receive's message; ok
// is false until a packet of it has arrived, and when it carries none.
func (c *Conn) Immediate(h RecvHandle) (imm uint32, ok bool, err error) {
	m, err := c.recvOf(h)
	if err != nil || !m.known {
		return 0, false, err
	}
	return m.imm, m.geo.HasImm, nil
}

// MessageLen returns the length of the message being received, once its
// first packet has arrived.
func (c *Conn) MessageLen(h RecvHandle) (int, bool, error) {
	m, err := c.recvOf(h)
	if err != nil || !m.known {
		return 0, false, err
	}
	return int(m.geo.MsgLen), true, nil
}

// Complete ends a receive and frees its slot for a later message. It is
// mandatory, also after a failure. Completing a receive before the message
// is whole abandons the rest: the sender is told the message is done.
func (c *Conn) Complete(h RecvHandle) error {
	c.ep.touch(c) // what it may send or when its timers fire changes
	m, err := c.recvOf(h)
	if err != nil {
		return err
	}
	c.rcv.deactivate(m)
	m.state, m.buf = recvFree, nil
	c.rcv.live--
	if c.ud != nil {
		c.ud.settle(c)
	}
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
	if m.recvActive != nil {
		r.ec.release(m.ec)
	}
	r.c.emit(EventRecvFailed, m.seq, err)
}

func (r *receiver) onAbort(id wire.MsgID) {
	if m := r.exact(id); m != nil && m.state == recvPosted {
		r.fail(m, ErrMessageTooLarge)
	}
}

// onHeld stops m's CTS timer: its sender holds the grant and will send
// when its application does. Under receiver-driven credit the CTS timer
// also hands out credit, and it stays.
func (r *receiver) onHeld(id wire.MsgID) {
	if m := r.exact(id); m != nil && m.state == recvPosted && !m.known && r.credit == nil {
		m.ctsDue = monotime.Never
	}
}

// exact returns the slot holding exactly message id, or nil.
func (r *receiver) exact(id wire.MsgID) *recvMsg {
	if int(id.Slot) >= len(r.slots) {
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
	if r.slots == nil && c.ud != nil {
		r.useSlots() // a datagram peer's, to answer as before; given back once answered
	}
	if int(id.Slot) >= len(r.slots) { // not made yet: free, holding message 0
		r.stats.StalePackets++
		if c.genAge(id, 0) <= 0 {
			c.ctrl.push(ctrlItem{kind: ctrlDoneAck, id: id})
		}
		return nil, nil
	}
	m := &r.slots[id.Slot]
	age := c.genAge(id, m.seq)
	if age < 0 || (age == 0 && (m.state == recvFree || m.state == recvDone)) {
		r.stats.StalePackets++
		c.ctrl.push(ctrlItem{kind: ctrlDoneAck, id: id})
		return nil, nil
	}
	if age > 0 || m.state != recvPosted {
		r.stats.StalePackets++
		return nil, nil
	}
	if m.known {
		if *geo != m.geo {
			return nil, errMalformed
		}
		return m, nil
	}
	if !reliability.Kind(geo.Scheme).Valid() {
		return nil, errMalformed
	}
	if geo.MsgLen > m.size {
		r.fail(m, ErrMessageTooLarge)
		c.ctrl.push(ctrlItem{kind: ctrlTooLarge, seq: m.seq})
		return nil, nil
	}
	r.activate(m)
	return m, nil
}

// start fixes the geometry and scheme of m from its first packet.
func (r *receiver) start(now monotime.Time, m *recvMsg, geo *wire.Geometry, scheme reliability.Scheme) {
	m.known, m.geo, m.scheme = true, *geo, scheme
	m.npkts = uint32(geo.Packets())
	m.nchunks = (m.npkts + 1<<geo.ChunkShift - 1) >> geo.ChunkShift
	m.pkts.reset(m.npkts)
	m.chunks.reset(m.nchunks)
	m.resentWhole.reset(m.nchunks)
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
	switch {
	case m.ctsTries == 1:
		r.rtt.Update(now.Sub(m.ctsAt))
	case m.ctsTries > 1 && r.rtt.Samples() == 0:
		// Which CTS the data answered is unknown (Karn), and timing the
		// first one counts however long the sender took to start: a
		// buffer posted ahead of the sender's data made that the round
		// trip for good. Yet without a clean sample the CTS may be
		// resent before the data could answer on every message (a 20 ms
		// path against the 10 ms default). So the first CTS's time, an
		// upper bound, replaces the initial guess until a ping measures
		// the round trip.
		r.rtt = reliability.NewRTT(now.Sub(m.ctsFirst))
		r.c.live.rttProbe = true
	}
	if scheme.Code() != nil {
		r.ec.start(m)
	}
}

// arrived notes that the packet at position pos of the sender's first
// pass arrived; the first one starts the scheme.
func (r *receiver) arrived(now monotime.Time, m *recvMsg, pos uint64, first bool) {
	if first {
		m.firstAt, m.firstPos = now, pos
		m.maxPosAt, m.maxPos = now, pos
		m.scheme.Started(now, &m.rs, m)
		r.file(m)
	} else if pos > m.maxPos {
		m.maxPosAt, m.maxPos = now, pos
	}
}

// roundTrip is the receiver's view of the RTT: the smallest CTS-to-data
// delay seen (larger ones include the sender's application delay).
func (r *receiver) roundTrip() monotime.Duration { return r.rtt.Min() }

func (r *receiver) onData(now monotime.Time, d *wire.Data) error {
	m, err := r.accepting(d.Msg, &d.Geometry)
	if m == nil {
		return err
	}
	first := !m.known
	if first {
		scheme := r.c.schemeFor(reliability.Kind(d.Scheme), d.K, d.M)
		if scheme == nil {
			return errMalformed
		}
		r.start(now, m, &d.Geometry, scheme)
		m.imm = d.Imm
	}
	p := d.Packet
	r.arrived(now, m, r.ec.dataPos(m, p), first)
	switch m.scheme.Admit(now, &m.rs, m, p) {
	case reliability.RefuseEarly:
		r.stats.DroppedOutOfOrder++
		return nil
	case reliability.RefuseStale:
		r.stats.DupPackets++
		// A resend of a message already whole was not needed, but Go-Back-N
		// resends what may have arrived by design: its rewinds are no
		// sign of a timeout misjudged (and backing off on them held a
		// loopback transfer over 4 paths 60 s).
		r.dupResent = r.dupResent || d.Flags&wire.FlagRetransmit != 0 && !m.scheme.InOrder()
		r.queueAck(m, 0)
		return nil
	}
	if m.pkts.test(p) {
		r.stats.DupPackets++
		if c := p >> m.geo.ChunkShift; m.chunks.test(c) {
			// A resend of a chunk its first pass made whole was not
			// needed; one whose resend made it whole, was (the sender
			// resends a chunk whole for its missing packets). Or our ACK
			// was lost: say it again.
			r.dupResent = r.dupResent || d.Flags&wire.FlagRetransmit != 0 && !m.resentWhole.test(c) && !m.scheme.InOrder()
			r.queueAck(m, c)
		} else if d.Flags&wire.FlagRetransmit != 0 && !m.scheme.InOrder() {
			// A probe into the sender's silence (expire), or a resend
			// of a packet that was late: the answer ends the silence,
			// and its packet bits say what the chunk lacks.
			m.partial, m.partialValid = c, true
			r.queueAck(m, c)
		}
		return nil
	}
	if m.buf != nil {
		copy(m.buf[uint64(p)*uint64(m.geo.MTU):], d.Payload)
	}
	r.stats.RecvPackets++
	r.stats.RecvBytes += uint64(len(d.Payload))
	if r.credit != nil {
		r.creditArrived(now, m, p, d.Flags&wire.FlagRetransmit != 0)
	}
	retransmit := d.Flags&wire.FlagRetransmit != 0
	if p+1 < m.hi {
		r.stats.OutOfOrder++
		if !retransmit {
			depth := uint64(m.hi - 1 - p)
			r.stats.Reordered++
			r.stats.ReorderDepth += depth
			r.stats.MaxReorder = max(r.stats.MaxReorder, depth)
		}
	}
	m.scheme.Arrived(now, &m.rs, m, p, retransmit)
	r.file(m)
	m.hi = max(m.hi, p+1)
	c := p >> m.geo.ChunkShift
	was := m.chunks.test(c)
	r.accept(now, m, p)
	if retransmit && !was && m.chunks.test(c) {
		m.resentWhole.set(c)
	}
	if m.state == recvPosted && !m.chunks.test(c) && !m.scheme.InOrder() {
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
		if m.coded() {
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
	if m.coded() {
		r.ec.dataArrived(now, r, m, p)
	}
}

func (r *receiver) chunkPackets(m *recvMsg, c uint32) uint32 {
	start := c << m.geo.ChunkShift
	return min(start+1<<m.geo.ChunkShift, m.npkts) - start
}

// forgetReordering lets the reordering window shrink, slowly, as a
// message of npkts packets completes: by a sixteenth per forgetPackets
// packets, and never by more than a sixteenth per message. A sixteenth
// per message, whatever its size, forgot the window sixteen times as
// fast per packet for one-chunk messages as for 16-chunk ones: in
// meta-cc's AllReduce at 65 hosts (64 KiB ring steps sprayed over four
// QPs, PFC, nothing dropped) every resend was a NACK of a packet the
// window had forgotten could be late, 2.03 MB of them; forgotten by
// packets, 0.69 MB.
func (r *receiver) forgetReordering(npkts uint32) {
	r.reorder -= r.reorder * monotime.Duration(min(npkts, forgetPackets)) / (16 * forgetPackets)
}

// forgetPackets: a message of this many packets or more forgets a
// sixteenth of the reordering window, as every message once did.
const forgetPackets = 256

func (r *receiver) complete(m *recvMsg) {
	m.state = recvDone
	r.wake() // the next message may take credit now
	r.forgetReordering(m.npkts)
	m.rs.Reset()
	r.ec.release(m.ec)
	r.stepDone(m)
	r.c.emit(EventRecvDone, m.seq, nil)
	if m.scheme.Acknowledged() {
		m.ackAt = r.c.ep.arrived // the Done ACK answers the packet that completed m
		r.c.ctrl.push(ctrlItem{kind: ctrlDone, seq: m.seq})
	}
}
