package core

import (
	"slices"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// SendHandle names a message being sent.
type SendHandle uint32

// sendMsg is a send slot: a free one holds only the last message's
// number; one in use holds its message's state, a sendActive taken from
// the endpoint's pool by Send and given back (its slices kept) when the
// message is done or fails. A connection's slots are numbered by message,
// and a collective's thousands of connections each have a few, mostly
// free.
type sendMsg struct {
	s    *sender
	seq  uint32
	used bool
	*sendActive
}

// sendActive is the state of a message being sent.
type sendActive struct {
	granted bool
	open    bool   // a streaming send (SendOpen): stays until EndSend
	imm     uint32 // the immediate value, where geo.HasImm
	bufLen  uint64
	credit  uint64 // bytes the receiver lets us send (its CTS), at most bufLen
	data    []byte
	scheme  reliability.Scheme
	code    reliability.Codec
	geo     wire.Geometry
	npkts   uint32
	nchunks uint32

	// The first pass sends data packets in order; with EC each sub-message
	// of K chunks is followed by its parity.
	next      uint32 // next data packet of the first pass
	passDone  bool
	inParity  bool
	sub       uint32 // EC: sub-message being sent
	parityPos uint32 // EC: next parity packet of the sub-message
	// EC: the sub-message's parity chunks (M, or fewer for a short one)
	parityChunks uint32
	high         uint32 // packets below have been sent at least once

	acked    bitset // chunks the receiver has whole
	nacked   uint32 // number of acked chunks
	ackedCum uint32 // chunks below are all acked
	sentAt   []monotime.Time
	// firstAt is when the message's first packet left (set with high).
	// Before the connection's first RTT sample, an ACK of resent chunks
	// only gives the timers now - firstAt, an upper bound on the round
	// trip: else a round trip that outgrew the initial guess is never
	// measured (TestFirstSampleBound).
	firstAt monotime.Time
	retx    bitset // chunks ever retransmitted (no RTT samples, Karn)
	// Multipath accounting (see multipath.go): each packet's last path,
	// and whether that transmission is not yet reported to the selector.
	pathOf      []uint8
	unconfirmed bitset
	ambiguous   bitset        // sent again while unconfirmed: which copy arrives is unknown
	delivered   bitset        // packets an ACK reported arrived, in chunks not yet whole
	lost        bitset        // packets reported lost (counted once in sender.loss)
	resolved    uint32        // packets of acked chunks (counted in sender.loss)
	epoch       uint32        // go-back-N: retransmissions of older epochs are void
	cum         uint32        // go-back-N: packets cumulatively acked
	progress    monotime.Time // EC: when the backstop was last armed
	// stallArmed: the backstop is armed for the current stall of the
	// first pass (stallBackstop).
	stallArmed bool
	inflight   int64 // this message's unacknowledged first-pass bytes
	copies     uint8 // CTSs received while no data had left (heldCTS)
}

// wholeMessage in a sendTimer's chunk field means the timer covers the
// message (the EC backstop) rather than one chunk.
const wholeMessage = ^uint32(0)

// sendTimer is a pending retransmission timeout. Timers are pushed in
// time order and every timer of a queue has the same timeout, so each
// queue is a FIFO whose head is the next to expire.
type sendTimer struct {
	seq, chunk uint32
	epoch      uint32 // go-back-N: a rewind voids the timers before it
	at         monotime.Time
}

// sendTimers is a sender's timer queues, one per scheme kind in kind
// order, each made when a timer of its kind is first armed: a connection
// uses one kind or two. They are kept apart from the sender: a datagram
// peer at rest has none (its slots and queues are leased, datagram.go).
type sendTimers struct {
	kinds  []reliability.Kind // ascending
	queues []*ring[sendTimer] // queues[i] is kinds[i]'s
}

// arm queues t on kind k's queue.
func (q *sendTimers) arm(k reliability.Kind, t sendTimer) {
	i := 0
	for i < len(q.kinds) && q.kinds[i] < k { // one kind or two: a scan
		i++
	}
	if i == len(q.kinds) || q.kinds[i] != k {
		q.kinds = slices.Insert(q.kinds, i, k)
		q.queues = slices.Insert(q.queues, i, new(ring[sendTimer]))
	}
	q.queues[i].push(t)
}

// clear voids every timer.
func (q *sendTimers) clear() {
	for _, r := range q.queues {
		r.clear()
	}
}

type grant struct {
	bufLen uint64
	credit uint64
	gen    uint16
	ok     bool
	copies uint8 // CTSs received for it (heldCTS)
}

// sender is a connection's sending half.
type sender struct {
	c        *Conn
	stats    SendCounts
	slots    []sendMsg
	grants   []grant // CTS that arrived before the matching Send
	nextSeq  uint32  // sequence number of the next Send
	txSeq    uint32  // message whose first pass is under way
	retx     ring[retxRange]
	timers   *sendTimers // nil until the slots are made (useSlots)
	rtt      reliability.RTT
	inflight int64
	ec       *ecSender // made for the first coded message (parityShards)

	// A datagram peer's slots and queues are leased (datagram.go): block
	// is nil while it has none, and live counts what holds them (messages
	// in flight and grants waiting for their message).
	block *sendBlock
	live  int
	// unfinished counts messages sent and not yet delivered or failed.
	unfinished int

	cc         cc.Controller // nil: no congestion control
	pacedUntil monotime.Time // the controller's pacing held a packet back until then
	justAcked  int64         // bytes the ACK being handled acknowledged
	choice     *choiceState  // scheme auto's evidence and decisions; nil without a chooser
	chrono     sendChrono    // what held it back, over time
	silence    silence       // retransmission timers while the peer says nothing
	// awaiting is when the first data packet left since the peer last
	// acknowledged or NACKed data (0: none since): what a silence is
	// measured from (silent).
	awaiting monotime.Time
	// Packets resent by chunk timers, and resends the receiver said it
	// did not need, over about the last resendWindow of them.
	timeoutResends, wastedResends uint32
	timedOutAt                    monotime.Time // when timedOut last grew
	// timedOut counts the timeout's doublings for resends that were not
	// needed, since the last clean RTT sample (resendWasted).
	timedOut uint8
	// dataSampled: a clean RTT sample of data has come (expire).
	dataSampled bool
	// rttBounded: with no sample yet, the timers run on a bound (roundTrip).
	rttBounded bool
}

func (s *sender) init(c *Conn) {
	s.c = c
	s.slots, s.grants, s.timers = nil, nil, nil // made on first use (useSlots)
	s.rtt = reliability.NewRTT(c.cfg.InitialRTT)
	s.pacedUntil = monotime.Never
	s.choice = nil
	if c.cfg.Chooser != nil {
		s.choice = new(choiceState)
	}
	s.initCC()
}

// useSlots gives the sender its message slots and grants when it first
// needs them: a connection makes them (one that only ever receives never
// does), a datagram peer leases them from its endpoint's pool.
func (s *sender) useSlots() {
	s.c.usePaths()
	if s.c.ud != nil {
		s.c.ud.leaseSend(s)
		return
	}
	s.slots, s.grants = make([]sendMsg, 1), make([]grant, 1) // grown as messages reach them (slots.go)
	s.timers = new(sendTimers)
}

// Send queues data as one message with the connection's scheme. The
// connection reads data until EventSendDone or EventSendFailed names the
// handle; the caller must not change it before then.
func (c *Conn) Send(data []byte) (SendHandle, error) { return c.SendWith(data, nil) }

// SendWith is Send with a scheme for this message only (nil: the
// connection's). The receiver learns the scheme from the packets.
func (c *Conn) SendWith(data []byte, scheme reliability.Scheme) (SendHandle, error) {
	if len(data) == 0 {
		return 0, ErrEmptyMessage
	}
	return c.send(data, uint64(len(data)), scheme)
}

// SendImm is Send with a 32-bit immediate value carried with the message
// (every packet repeats it; see wire.Geometry): the receiver reads it with
// Immediate as soon as any packet of the message has arrived.
func (c *Conn) SendImm(data []byte, imm uint32) (SendHandle, error) {
	h, err := c.SendWith(data, nil)
	if err == nil {
		m := &c.snd.slots[uint32(h)&c.slotMask]
		m.geo.HasImm, m.imm = true, imm
	}
	return h, err
}

// SendVirtual sends a message of size bytes that have no content: its
// packets carry zeros and its parity is not computed. A simulator uses it
// to move messages larger than memory; the protocol is unchanged.
func (c *Conn) SendVirtual(size int, scheme reliability.Scheme) (SendHandle, error) {
	if size <= 0 {
		return 0, ErrEmptyMessage
	}
	return c.send(nil, uint64(size), scheme)
}

func (c *Conn) send(data []byte, size uint64, scheme reliability.Scheme) (SendHandle, error) {
	c.ep.touch(c) // what it may send or when its timers fire changes
	c.use()
	s := c.sender()
	switch {
	case c.closed:
		return 0, ErrClosed
	case c.state == stateDialing:
		return 0, ErrNotEstablished
	case size > uint64(c.cfg.MTU)<<32-1:
		return 0, ErrMessageTooLarge
	}
	if scheme == nil {
		scheme = s.chooseScheme(size)
	}
	if code := scheme.Code(); code != nil && code.K()+code.M() > reliability.MaxShards {
		return 0, ErrSchemeParams
	}
	seq := s.nextSeq
	s.reach(seq)
	m := &s.slots[seq&c.slotMask]
	if m.used {
		return 0, ErrTooManyMessages
	}
	s.live++
	s.unfinished++
	geo := wire.Geometry{MsgLen: size, MTU: uint16(c.cfg.MTU), ChunkShift: c.shift, Scheme: uint8(scheme.Kind())}
	if code := scheme.Code(); code != nil {
		geo.K, geo.M = uint8(code.K()), uint8(code.M())
	}
	npkts := uint32(geo.Packets())
	nchunks := (npkts + 1<<c.shift - 1) >> c.shift
	a := s.c.ep.sendPool.take()
	*a = sendActive{data: data, scheme: scheme, code: scheme.Code(), geo: geo,
		npkts: npkts, nchunks: nchunks,
		acked: a.acked, sentAt: a.sentAt, retx: a.retx, pathOf: a.pathOf, unconfirmed: a.unconfirmed,
		ambiguous: a.ambiguous, delivered: a.delivered, lost: a.lost}
	*m = sendMsg{s: s, seq: seq, used: true, sendActive: a}
	m.acked.reset(nchunks)
	if c.cfg.Chooser != nil {
		m.lost.reset(npkts)
	}
	m.delivered.reset(npkts)
	m.retx.reset(nchunks)
	if c.mp.sel != nil {
		m.unconfirmed.reset(npkts)
		m.ambiguous.reset(npkts)
		if cap(m.pathOf) < int(npkts) {
			m.pathOf = make([]uint8, npkts)
		}
		m.pathOf = m.pathOf[:npkts]
	}
	if cap(m.sentAt) < int(nchunks) {
		m.sentAt = make([]monotime.Time, nchunks)
	}
	m.sentAt = m.sentAt[:nchunks]
	if i := seq & c.slotMask; int(i) < len(s.grants) && s.grants[i].ok && s.grants[i].gen == c.msgID(seq).Gen {
		g := &s.grants[i]
		g.ok = false
		s.live--
		m.copies = g.copies
		s.grant(m, g.bufLen, g.credit)
	}
	s.nextSeq++
	return SendHandle(seq), nil
}

// grant lets m's first pass start once the receiver has room for it, as
// far as its credit reaches.
func (s *sender) grant(m *sendMsg, bufLen, credit uint64) {
	m.credit = credit
	if m.geo.MsgLen > bufLen {
		s.fail(m, ErrMessageTooLarge)
		s.c.ctrl.push(ctrlItem{kind: ctrlAbort, seq: m.seq})
		return
	}
	m.granted, m.bufLen = true, bufLen
}

func (s *sender) lookup(id wire.MsgID) *sendMsg {
	if int(id.Slot) >= len(s.slots) {
		return nil
	}
	m := &s.slots[id.Slot]
	if !m.used || s.c.msgID(m.seq) != id {
		return nil
	}
	return m
}

func (s *sender) onCTS(_ monotime.Time, cts *wire.CTS) {
	if m := s.lookup(cts.Msg); m != nil {
		if !m.granted {
			s.grant(m, cts.BufLen, cts.Credit)
		} else {
			m.credit = max(m.credit, cts.Credit) // CTSs may arrive out of order
		}
		if m.used && m.high == 0 {
			s.heldCTS(&m.copies, cts.Msg)
		}
		return
	}
	// A CTS may overtake the application's Send: keep it for the message
	// that will take this slot, unless that slot's message already went.
	slot := uint32(cts.Msg.Slot)
	if slot > s.c.slotMask {
		return
	}
	upcoming := s.nextSeq + (slot-s.nextSeq)&s.c.slotMask
	if s.c.genAge(cts.Msg, upcoming) < 0 {
		return
	}
	g := s.grantFor(cts.Msg.Slot)
	if g.ok && g.gen == cts.Msg.Gen {
		g.credit = max(g.credit, cts.Credit)
		s.heldCTS(&g.copies, cts.Msg)
		return
	}
	if !g.ok {
		s.live++
	}
	*g = grant{gen: cts.Msg.Gen, bufLen: cts.BufLen, credit: cts.Credit, ok: true, copies: 1}
}

// heldCTS counts a CTS for a grant whose data has not begun, and answers
// the second repeat that the grant is held: the receiver resends a CTS
// until data comes, and a buffer posted long before its sender's data (a
// ring's later steps) would otherwise draw a CTS every few round trips
// all the while. The first repeat goes unanswered because it may simply
// cross the data; every eighth after the second is answered again, in
// case the answer was lost.
func (s *sender) heldCTS(copies *uint8, id wire.MsgID) {
	if *copies < 255 {
		*copies++
	}
	if *copies%8 == 3 {
		s.c.ctrl.push(ctrlItem{kind: ctrlHeld, id: id})
	}
}

// chunkBytes is the payload length of chunk i of m.
func (s *sender) chunkBytes(m *sendMsg, i uint32) int64 {
	start := uint64(i) << s.c.shift * uint64(m.geo.MTU)
	end := min(start+uint64(m.geo.MTU)<<s.c.shift, m.geo.MsgLen)
	return int64(end - start)
}

// chunkPackets is how many packets chunk i of m holds.
func (s *sender) chunkPackets(m *sendMsg, i uint32) uint32 {
	return min((i+1)<<s.c.shift, m.npkts) - i<<s.c.shift
}

// markAcked records that the receiver has chunk i whole. It returns when
// the chunk was sent if that time makes a clean RTT sample (newly acked,
// never retransmitted), else zero.
func (s *sender) markAcked(now monotime.Time, m *sendMsg, i uint32) monotime.Time {
	if i >= m.nchunks || m.acked.test(i) {
		return 0
	}
	m.acked.set(i)
	m.nacked++
	s.endStall(m) // progress: a stall goes on from now
	n := min(1<<s.c.shift, m.npkts-i<<s.c.shift)
	m.resolved += n
	if s.choice != nil {
		s.choice.loss.noteResolved(n)
	}
	b := min(s.chunkBytes(m, i), m.inflight)
	m.inflight -= b
	s.inflight -= b
	s.justAcked += b
	var sent monotime.Time
	if !m.retx.test(i) {
		sent = m.sentAt[i]
	}
	if sent != 0 {
		s.chunkAcked(now, m, i, now.Sub(sent))
	} else {
		s.chunkAcked(now, m, i, 0)
	}
	return sent
}

func (s *sender) onAck(now monotime.Time, a *wire.Ack) {
	s.awaiting = 0
	if a.Flags&wire.FlagDupResend != 0 {
		s.resendWasted(now)
	}
	m := s.lookup(a.Msg)
	if m == nil {
		return
	}
	ecn := a.Flags&wire.FlagECNEcho != 0
	if a.Flags&wire.FlagDone != 0 && m.open { // an open send ends when its application says
		s.ccAcked(now, 0, 0, 0, ecn)
		return
	}
	if a.Flags&wire.FlagDone != 0 {
		rtt, hostDelay := s.roundTrip(now, m, s.doneSent(m, a.Flags), a.Delay, m.high > 0)
		done := m.inflight
		s.finish(m)
		s.ccAcked(now, done, rtt, hostDelay, ecn)
		return
	}
	s.justAcked = 0
	// One RTT sample per ACK, from the newest chunk it acknowledges first:
	// older chunks it covers may have been acked late, when an earlier
	// ACK was lost, and would inflate the estimate (QUIC does the same
	// with the largest acknowledged packet).
	var newest monotime.Time
	ack := func(i uint32) { newest = max(newest, s.markAcked(now, m, i)) }
	if a.Flags&wire.FlagPacketBits != 0 {
		s.packetsDelivered(now, m, a.PktChunk, a.PktBits)
	}
	if a.Flags&wire.FlagChunkUnits == 0 { // go-back-N: cumulative packets
		cum := min(a.Cum, m.npkts)
		if cum <= m.cum {
			return
		}
		m.cum = cum
		for i := m.ackedCum; i < cum>>s.c.shift; i++ {
			ack(i)
		}
		m.ackedCum = max(m.ackedCum, cum>>s.c.shift)
	} else {
		for i := m.ackedCum; i < min(a.Cum, m.nchunks); i++ {
			ack(i)
		}
		m.ackedCum = max(m.ackedCum, min(a.Cum, m.nchunks))
		for w := range a.Words() {
			bitsW := a.Word(w)
			base := uint64(a.Base) + 64*uint64(w)
			for bitsW != 0 && base < uint64(m.nchunks) {
				if bitsW&1 != 0 {
					ack(uint32(base))
				}
				bitsW >>= 1
				base++
			}
		}
	}
	rtt, hostDelay := s.roundTrip(now, m, newest, a.Delay, s.justAcked > 0)
	if m.nacked == m.nchunks || m.cum == m.npkts {
		s.justAcked += m.inflight
		s.finish(m)
	}
	s.ccAcked(now, s.justAcked, rtt, hostDelay, ecn)
}

// roundTrip feeds the timers the RTT sample an ACK of m gives, from the
// newest chunk it newly acknowledges that was never resent (sent; zero:
// none such), and returns the controller's share of it. acked says the
// ACK acknowledged something of m, which was therefore sent.
func (s *sender) roundTrip(now monotime.Time, m *sendMsg, sent monotime.Time, delay uint16, acked bool) (rtt, hostDelay monotime.Duration) {
	if sent == 0 {
		if acked && s.rtt.Samples() == 0 {
			// No clean sample yet (firstAt): the bound replaces the
			// initial guess, a tighter one the bound, and the first
			// clean sample, which a ping asks for (again with each such
			// ACK, as one may be lost), replaces them all. Folded in as
			// a sample, a bound as long as the recovery it ended held
			// the timeout at three times that while every message
			// needed a resend, as under heavy loss they all do.
			if bound := now.Sub(m.firstAt); !s.rttBounded || bound < s.rtt.Smoothed() {
				s.rtt = reliability.NewRTT(bound)
				s.rttBounded = true
			}
			s.c.live.rttProbe = true
		}
		return 0, 0
	}
	// The retransmission timer takes the whole wait, this end's read
	// included, as its other samples (PONG, CTS) do; the controller the
	// path's share (lessAckDelay).
	whole := now.Sub(sent)
	s.rtt.Update(whole)
	s.timedOut = 0 // the estimate speaks for the path again (resendWasted)
	s.dataSampled = true
	rtt = lessAckDelay(s.c.ep.arrival(now).Sub(sent), delay, s.rtt.Min())
	return rtt, whole - rtt // and both hosts' hold on this ACK
}

// doneSent is when the newest chunk a Done ACK of m acknowledges was
// sent, if that is a clean RTT sample, else zero: only a Done that
// answers the completion (FlagCompleted), of a message with no chunk
// resent and no erasure code. Without it a connection of one-chunk
// messages never measured its path.
func (s *sender) doneSent(m *sendMsg, flags uint8) monotime.Time {
	if flags&wire.FlagCompleted == 0 || m.code != nil || !m.passDone {
		return 0
	}
	var newest monotime.Time
	for i := m.acked.nextClear(m.ackedCum, m.nchunks); i < m.nchunks; i = m.acked.nextClear(i+1, m.nchunks) {
		if m.retx.test(i) {
			return 0
		}
		newest = max(newest, m.sentAt[i])
	}
	return newest
}

// lessAckDelay is an RTT sample for the congestion controller: rtt (from
// the ACK's arrival) less the time the receiver says it held the ACK
// (delay, microseconds), as QUIC takes ack_delay off, but not below half
// the least whole sample seen (least). QUIC's floor is the least itself;
// that holds the receiver's own steady delay, so a host that always reads
// late would keep it in every sample. Half of it lets a receiver's steady
// delay of up to the path's own round trip come off, yet one delay
// overstated (a peer's bug, a wall clock stepped between the kernel's
// stamp and the read) can lower the controller's base RTT, and its
// window's ceiling with it, by half at most, not to nothing.
func lessAckDelay(rtt monotime.Duration, delay uint16, least monotime.Duration) monotime.Duration {
	d := monotime.Duration(delay) * monotime.Microsecond
	return max(rtt-d, min(rtt, least/2))
}

// finish reports m delivered and frees its slot.
func (s *sender) finish(m *sendMsg) {
	s.stats.AckedBytes += m.geo.MsgLen
	if s.choice != nil {
		s.choice.loss.noteResolved(m.npkts - m.resolved)
	}
	s.inflight -= m.inflight
	s.c.emit(EventSendDone, m.seq, nil)
	s.release(m)
}

func (s *sender) fail(m *sendMsg, err error) {
	s.inflight -= m.inflight
	s.c.emit(EventSendFailed, m.seq, err)
	s.release(m)
}

func (s *sender) release(m *sendMsg) {
	s.waitCoding(m) // the workers may still read its data
	s.cancelUnconfirmed(m)
	m.data, m.scheme, m.code = nil, nil, nil
	s.c.ep.sendPool.put(m.sendActive)
	m.used, m.sendActive = false, nil
	s.live--
	s.unfinished--
}

func (s *sender) failAll() {
	for i := range s.slots {
		if s.slots[i].used {
			s.fail(&s.slots[i], ErrClosed)
		}
	}
	s.retx.clear()
	if s.timers != nil {
		s.timers.clear()
	}
}

// poll writes the next retransmission or first-pass packet into buf, if
// the congestion controller lets one leave now.
func (s *sender) poll(now monotime.Time, buf []byte) int {
	if s.ccBlocked(now) {
		s.chrono.note(now, sendBusy)
		return 0
	}
	n := 0
	if s.retx.len() > 0 { // checked here: the call alone costs on every packet
		n = s.pollRetransmit(now, buf)
	}
	if n == 0 {
		s.chrono.held = sendIdle
		n = s.pollFirstPass(now, buf)
	}
	if n > 0 {
		s.ccSent(now, n+len(s.c.ep.payload))
		s.chrono.note(now, sendBusy)
		return n
	}
	if s.chrono.state == sendBusy && s.chrono.held == sendIdle {
		s.ccAppLimited(now)
	}
	s.chrono.note(now, s.chrono.held)
	return 0
}

func (s *sender) pollFirstPass(now monotime.Time, buf []byte) int {
	for s.txSeq != s.nextSeq {
		m := &s.slots[s.txSeq&s.c.slotMask]
		if !m.used || m.seq != s.txSeq || m.passDone {
			s.txSeq++
			continue
		}
		if !m.granted {
			s.chrono.held = sendCredit
			return 0
		}
		if m.inParity {
			return s.sendParity(now, m, buf)
		}
		p := m.next
		size := int64(m.geo.PayloadLen(p))
		if uint64(p)*uint64(m.geo.MTU)+uint64(size) > m.credit {
			s.chrono.held = sendCredit // the receiver has not granted this far yet
			return 0
		}
		if limit := s.c.cfg.MaxBytesInFlight; limit > 0 && s.inflight > 0 && s.inflight+size > limit {
			s.chrono.held = sendInflight
			s.stallBackstop(now, m)
			return 0
		}
		if s.ccGate(m, p) && s.ccHolds(s.chunkBytes(m, p>>s.c.shift)) {
			s.chrono.held = sendWindow
			s.stallBackstop(now, m)
			return 0
		}
		s.endStall(m)
		m.next++
		if p >= m.high {
			if m.high == 0 {
				m.firstAt = now
			}
			m.high = p + 1
			// Nothing acknowledges scheme none's packets: counted in
			// flight, they would close the window for good.
			if m.scheme.Acknowledged() {
				m.inflight += size
				s.inflight += size
			}
		}
		if m.code != nil && s.c.ep.codec != nil && m.data != nil && p == s.subStart(m, m.sub) {
			s.codeAhead(m)
		}
		s.c.mp.path = s.c.pickPath(now)
		n := s.encodeData(now, m, p, buf, 0)
		s.stats.DataPackets++
		s.stats.DataBytes += uint64(size)
		if m.next == m.npkts || m.next&(1<<s.c.shift-1) == 0 {
			s.chunkSent(now, m, p>>s.c.shift)
		}
		if m.code != nil && (m.next == m.npkts || m.next == s.subEnd(m, m.sub)) {
			s.startParity(m)
		} else if m.next == m.npkts {
			s.passEnd(now, m)
		}
		return n
	}
	return 0
}

// passEnd runs when m's first pass has put every packet on the wire.
func (s *sender) passEnd(now monotime.Time, m *sendMsg) {
	m.passDone = true
	if !m.scheme.Acknowledged() && !m.open {
		s.finish(m) // nothing will say the packets arrived
		return
	}
	if m.scheme.Backstop() {
		s.armBackstop(now, m)
	}
}

func (s *sender) encodeData(now monotime.Time, m *sendMsg, p uint32, buf []byte, flags uint8) int {
	off := uint64(p) * uint64(m.geo.MTU)
	end := min(off+uint64(m.geo.MTU), m.geo.MsgLen)
	s.dataSent(now, m, p, s.c.mp.path, int(end-off))
	if s.awaiting == 0 {
		s.awaiting = now
	}
	if p == m.npkts-1 {
		flags |= wire.FlagLast
	}
	n := wire.EncodeDataHeader(buf, s.c.peerID, flags, s.c.msgID(m.seq), p, m.imm, &m.geo)
	if m.data == nil { // a virtual message: zeros of the right length
		s.c.ep.payload = s.zeroPayload(int(end - off))
	} else {
		s.c.ep.payload = m.data[off:end]
	}
	return n
}

// zeroPayload returns n zero bytes, the payload of virtual messages. The
// endpoint keeps one buffer for all its connections: with a thousand peers
// a buffer each was most of a simulated host's memory.
func (s *sender) zeroPayload(n int) []byte {
	e := s.c.ep
	if len(e.zeros) < n {
		e.zeros = make([]byte, max(n, s.c.cfg.MTU))
	}
	return e.zeros[:n]
}
