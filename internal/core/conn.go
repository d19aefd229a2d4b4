package core

import (
	"errors"
	"math/bits"
	"net/netip"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// Errors of the connection API. Misuse is an error, never a panic.
var (
	ErrClosed          = errors.New("core: connection closed")
	ErrTooManyMessages = errors.New("core: too many messages in flight")
	ErrEmptyMessage    = errors.New("core: empty message or buffer")
	ErrMessageTooLarge = errors.New("core: message larger than the posted buffer")
	ErrUnknownHandle   = errors.New("core: unknown or completed handle")
	ErrChunkRange      = errors.New("core: chunk index out of range")
	ErrSchemeParams    = errors.New("core: erasure code has too many shards")
	ErrUnknownStep     = errors.New("core: collective step not begun (BeginStep)")
	errMalformed       = errors.New("core: malformed packet")
)

// ConnStats counts what a connection sent and received.
type ConnStats struct {
	SendCounts
	RecvCounts
	CtrlPackets uint64 // ACK, NACK, CTS, CLOSE sent
	SmoothedRTT monotime.Duration
	// SendTimes are what the sender's time went to: sending, or held
	// back by the window, the receiver or the in-flight limit.
	SendTimes
}

// SendCounts are the counters of a connection's sending half.
type SendCounts struct {
	DataPackets, DataBytes     uint64 // first transmissions
	RetxPackets, RetxBytes     uint64 // retransmissions
	ParityPackets, ParityBytes uint64
	// ParityCodedAhead counts sub-messages whose parity the endpoint's
	// codec workers coded while their data was sent (SetCodecWorkers).
	ParityCodedAhead         uint64
	AcksReceived, NacksRecvd uint64
	RTOs                     uint64 // sender retransmission timeouts
	SilentProbes             uint64 // of RTOs: probes into a silent peer, the timeout doubled
	AckedBytes               uint64 // bytes of our messages the peer has whole
}

// RecvCounts are the counters of a connection's receiving half.
type RecvCounts struct {
	RecvPackets uint64 // DATA packets accepted
	DupPackets  uint64 // DATA packets that were already there
	OutOfOrder  uint64 // DATA packets that arrived after a later one
	// Of those, first transmissions (reordered by the network, not
	// resent): how many, and how far behind the furthest packet of
	// their message they arrived, summed and at most, in packets.
	Reordered, ReorderDepth, MaxReorder uint64
	SpuriousNacks                       uint64 // NACKed packets that then arrived late, not lost
	StalePackets                        uint64 // packets of a completed message or old generation
	DroppedOutOfOrder                   uint64 // go-back-N receiver discards
	RecoveredPackets                    uint64 // rebuilt by erasure decoding
	Fallbacks                           uint64 // EC fallback NACKs sent
	RecvBytes                           uint64 // payload bytes of DATA packets accepted
}

// ctrlKind is a control packet waiting in the control queue.
type ctrlKind uint8

const (
	ctrlCTS      ctrlKind = iota + 1 // receiver: clear-to-send for seq
	ctrlAck                          // receiver: ACK progress of seq
	ctrlNack                         // receiver: NACK missing packets of seq
	ctrlDoneAck                      // receiver: whole-message ACK for an old id
	ctrlDone                         // receiver: whole-message ACK for seq, just completed
	ctrlAbort                        // sender: tell the receiver seq is too large
	ctrlDecoded                      // receiver: report packets erasure decoding rebuilt
	ctrlCredit                       // receiver: a CTS carrying more credit for seq
	ctrlHeld                         // sender: the grant for id is held until its data
	ctrlTooLarge                     // receiver: seq is larger than the buffer posted for it
)

type ctrlItem struct {
	kind ctrlKind
	seq  uint32
	id   wire.MsgID
}

// Conn is one connection: a sender and a receiver of messages to and from
// one peer.
type Conn struct {
	ep     *Endpoint
	ud     *Datagram // a datagram endpoint's peer; nil: a connection
	id     uint64
	peerID uint64
	peer   netip.AddrPort
	cfg    *Config // shared by a datagram endpoint's peers: read only

	shift     uint8 // log2 packets per chunk
	slotShift uint8 // log2 MaxMsgs
	state     connState
	closed    bool
	slotMask  uint32 // MaxMsgs-1

	// The endpoint's indexes (schedule.go): the connection's place in
	// polling order (-1 once reaped), its place in the timer heap (-1:
	// none), the deadline filed there, and whether it was touched since.
	slot, heapAt int
	filed        monotime.Time
	dirty        bool

	*connBody // nil while the connection is idle (use)
}

// connBody is what a connection holds once used. A connection made by
// hand (NewConn) is idle until it first sends, receives, closes or hears
// from its peer: a fabric's connections to every peer cost their heads
// alone until they carry something. Until then it acts as a fresh body
// would: nothing to send, no timers, zero counters.
type connBody struct {
	// hs is a dialed or accepted connection's handshake; nil for one made
	// by hand (NewConn) and for a datagram peer, which never dial.
	hs      *handshake
	live    liveness
	closing *closing // the CLOSE to send; nil until Close or a shutdown sets one

	// The sending and receiving halves, each made when first needed
	// (sender, receiver): a collective's connections mostly carry
	// messages one way, and a simulation holds millions of them.
	snd *sender
	rcv *receiver

	ctrl    ring[ctrlItem]
	schemes map[schemeKey]reliability.Scheme
	mp      multipath
	prot    *protection // nil: packets go unprotected (protect.go)

	ctrlPackets uint64 // ConnStats.CtrlPackets; each half keeps its own counts
}

// liveness is what keeps an idle connection's peer known to be there:
// when it was last heard from and the keepalive PINGs (handshake.go).
type liveness struct {
	lastHeard monotime.Time
	lastPing  monotime.Time
	pongEcho  uint64
	pongDue   bool
	rttProbe  bool // a PING is to measure the round trip for the receiver
}

// closing is a CLOSE to be sent: its code and reason.
type closing struct {
	queued bool
	code   uint32
	reason string
}

// newConn makes a connection, or with ud set a datagram endpoint's peer,
// with configuration cfg: a datagram endpoint's peers share their
// endpoint's.
func newConn(e *Endpoint, ud *Datagram, id, peerID uint64, peer netip.AddrPort, cfg *Config) *Conn {
	c := newIdleConn(e, ud, id, peerID, peer, cfg)
	c.useBoth()
	if ud == nil { // it dials or is accepted: NewConn's never do
		c.hs = new(handshake)
	}
	return c
}

// newIdleConn is newConn without the body, which use makes.
func newIdleConn(e *Endpoint, ud *Datagram, id, peerID uint64, peer netip.AddrPort, cfg *Config) *Conn {
	return &Conn{ep: e, ud: ud, id: id, peerID: peerID, peer: peer, cfg: cfg,
		shift:     cfg.chunkShift(),
		slotShift: uint8(bits.TrailingZeros(uint(cfg.MaxMsgs))),
		slotMask:  uint32(cfg.MaxMsgs - 1),
	}
}

// use makes the connection's body, once.
func (c *Conn) use() {
	if c.connBody != nil {
		return
	}
	c.connBody = new(connBody)
	c.initPaths()
}

// useBoth makes the body and both halves.
func (c *Conn) useBoth() {
	c.use()
	c.sender()
	c.receiver()
}

// sender returns the connection's sending half, made on first use.
func (c *Conn) sender() *sender {
	if c.snd == nil {
		c.snd = new(sender)
		c.snd.init(c)
	}
	return c.snd
}

// receiver returns the connection's receiving half, made on first use.
func (c *Conn) receiver() *receiver {
	if c.rcv == nil {
		c.rcv = new(receiver)
		c.rcv.init(c)
	}
	return c.rcv
}

// ID returns the connection's local id.
func (c *Conn) ID() uint64 { return c.id }

// Peer returns the peer's address.
func (c *Conn) Peer() netip.AddrPort { return c.peer }

// Config returns the connection's configuration with defaults filled in.
func (c *Conn) Config() Config { return *c.cfg }

// Stats returns the connection's counters.
func (c *Conn) Stats() ConnStats {
	if c.connBody == nil { // as a fresh body's: nothing counted, the RTT assumed
		rtt := reliability.NewRTT(c.cfg.InitialRTT)
		return ConnStats{SmoothedRTT: rtt.Smoothed()}
	}
	s := ConnStats{CtrlPackets: c.ctrlPackets}
	if c.rcv != nil {
		s.RecvCounts = c.rcv.stats
	}
	if c.snd == nil { // as a fresh sender's
		rtt := reliability.NewRTT(c.cfg.InitialRTT)
		s.SmoothedRTT = rtt.Smoothed()
		return s
	}
	s.SendCounts = c.snd.stats
	s.SmoothedRTT = c.snd.rtt.Smoothed()
	s.SendTimes = c.snd.chrono.times()
	return s
}

// msgID names sequence number seq on the wire.
func (c *Conn) msgID(seq uint32) wire.MsgID {
	return wire.MsgID{Slot: uint16(seq & c.slotMask), Gen: uint16(seq >> c.slotShift)}
}

// genAge compares the generation of id with that of seq held in the same
// slot: negative when id is older, zero when equal, positive when newer.
func (c *Conn) genAge(id wire.MsgID, seq uint32) int16 {
	return int16(id.Gen - uint16(seq>>c.slotShift))
}

func (c *Conn) emit(kind EventKind, seq uint32, err error) {
	c.ep.events.push(Event{Kind: kind, Conn: c, Msg: seq, Err: err})
}

// Close ends the connection: a CLOSE with code and reason is sent, and
// every message still in flight fails with ErrClosed.
func (c *Conn) Close(code uint32, reason string) error {
	c.ep.touch(c) // what it may send or when its timers fire changes
	if c.closed {
		return ErrClosed
	}
	c.use()
	if len(reason) > wire.MaxCloseReason {
		reason = reason[:wire.MaxCloseReason]
	}
	c.closing = &closing{queued: true, code: code, reason: reason}
	c.shutdown(nil)
	return nil
}

// shutdown fails everything in flight and stops all timers.
func (c *Conn) shutdown(cause error) {
	c.ep.touch(c)
	c.closed = true
	if c.connBody != nil {
		if c.snd != nil {
			c.snd.failAll()
		}
		if c.rcv != nil {
			c.rcv.failAll()
		}
		c.ctrl.clear()
	}
	c.emit(EventClosed, 0, cause)
}

// handle dispatches one datagram addressed to this connection.
func (c *Conn) handle(now monotime.Time, path Path, h wire.Header, b, payload []byte) error {
	if c.closed {
		return ErrClosed
	}
	if err := c.dispatch(now, h, b, payload); err != nil {
		return err
	}
	c.heard(now)
	return nil
}

func (c *Conn) dispatch(now monotime.Time, h wire.Header, b, payload []byte) error {
	if c.state == stateDialing && h.Type != wire.TypeAccept {
		return ErrNotEstablished
	}
	switch h.Type {
	case wire.TypeAccept:
		hs, _, err := wire.ParseHandshake(b)
		if err != nil {
			return errors.Join(errMalformed, err)
		}
		c.accept(now, &hs)
	case wire.TypePing:
		p, err := wire.ParsePing(b)
		if err != nil {
			return errors.Join(errMalformed, err)
		}
		c.onPing(now, &p)
	case wire.TypeHello:
		return errMalformed // HELLO goes to connection 0
	case wire.TypeData:
		var d wire.Data
		var err error
		if payload != nil {
			err = d.DecodeSplit(b, payload)
		} else {
			err = d.Decode(b)
		}
		if err != nil {
			return errors.Join(errMalformed, err)
		}
		return c.receiver().onData(now, &d)
	case wire.TypeParity:
		var p wire.Parity
		var err error
		if payload != nil {
			p, err = wire.ParseParitySplit(b, payload)
		} else {
			p, err = wire.ParseParity(b)
		}
		if err != nil {
			return errors.Join(errMalformed, err)
		}
		return c.receiver().onParity(now, &p)
	case wire.TypeAck:
		a, err := wire.ParseAck(b)
		if err != nil {
			return errors.Join(errMalformed, err)
		}
		s := c.sender()
		s.stats.AcksReceived++
		s.onAck(now, &a)
	case wire.TypeNack:
		n, err := wire.ParseNack(b)
		if err != nil {
			return errors.Join(errMalformed, err)
		}
		c.sender().stats.NacksRecvd++
		if n.Reason == wire.NackTooLarge && n.Flags&flagFromSender != 0 {
			c.receiver().onAbort(n.Msg)
		} else {
			c.sender().onNack(now, &n)
		}
	case wire.TypeCTS:
		s, err := wire.ParseCTS(b)
		if err != nil {
			return errors.Join(errMalformed, err)
		}
		if s.Flags&flagFromSender != 0 {
			c.receiver().onHeld(s.Msg)
		} else {
			c.sender().onCTS(now, &s)
		}
	case wire.TypeClose:
		cl, err := wire.ParseClose(b)
		if err != nil {
			return errors.Join(errMalformed, err)
		}
		var cause error
		if cl.Code != 0 {
			cause = &PeerClosedError{Code: cl.Code, Reason: string(cl.Reason)}
		}
		c.shutdown(cause)
	}
	return nil
}

// flagFromSender marks a NACK or CTS sent by a message's sender (an abort,
// a grant held) rather than by its receiver.
const flagFromSender = 1 << 7

// PeerClosedError reports a CLOSE with a non-zero code.
type PeerClosedError struct {
	Code   uint32
	Reason string
}

func (e *PeerClosedError) Error() string {
	return "core: peer closed the connection: code " + itoa(e.Code) + ": " + e.Reason
}

func itoa(v uint32) string {
	var b [10]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}

// poll writes the connection's next datagram into buf and returns its
// length (0: nothing to send) and whether it is data; a data packet's
// payload is left in c.ep.payload. Control packets go first, then
// retransmissions, then new data.
func (c *Conn) poll(now monotime.Time, buf []byte) (int, bool) {
	if c.connBody == nil {
		return 0, false
	}
	if c.closing != nil && c.closing.queued {
		c.closing.queued = false
		cl := wire.Close{Conn: c.peerID, Code: c.closing.code, Reason: []byte(c.closing.reason)}
		n, err := cl.Encode(buf)
		if err != nil {
			return 0, false
		}
		c.ctrlPackets++
		c.mp.path = c.ctrlPath()
		return n, false
	}
	if c.closed {
		return 0, false
	}
	// Each packet's path is picked once the packet is sure to leave
	// (pickPath's comment says why).
	if n := c.handshake(now, buf); n > 0 {
		c.ctrlPackets++
		return n, false
	}
	if c.state == stateDialing {
		return 0, false
	}
	if n := c.keepalive(now, buf); n > 0 {
		c.ctrlPackets++
		c.mp.path = c.ctrlPath()
		return n, false
	}
	for c.ctrl.len() > 0 {
		it, _ := c.ctrl.pop()
		if n := c.encodeCtrl(now, it, buf); n > 0 {
			c.ctrlPackets++
			c.mp.path = c.ctrlPath()
			return n, false
		}
	}
	if c.snd == nil {
		return 0, true
	}
	return c.snd.poll(now, buf), true
}

// encodeCtrl builds a queued control packet from current state, or returns
// 0 when it is no longer needed.
func (c *Conn) encodeCtrl(now monotime.Time, it ctrlItem, buf []byte) int {
	switch it.kind {
	case ctrlCTS:
		return c.rcv.encodeCTS(now, it.seq, buf)
	case ctrlCredit:
		return c.rcv.encodeCredit(now, it.seq, buf)
	case ctrlAck:
		return c.rcv.encodeAck(now, it.seq, buf)
	case ctrlNack:
		return c.rcv.encodeNack(now, it.seq, buf)
	case ctrlDoneAck:
		a := wire.Ack{Conn: c.peerID, Flags: wire.FlagDone | wire.FlagChunkUnits | c.rcv.echoes(), Msg: it.id}
		n, _ := wire.EncodeAck(buf, &a, nil)
		return n
	case ctrlDone:
		return c.rcv.encodeDone(now, it.seq, buf)
	case ctrlDecoded:
		return c.rcv.encodeDecoded(it.seq, buf)
	case ctrlAbort:
		nk := wire.Nack{Conn: c.peerID, Flags: flagFromSender, Msg: c.msgID(it.seq), Reason: wire.NackTooLarge}
		n, _ := wire.EncodeNack(buf, &nk, nil)
		return n
	case ctrlTooLarge:
		nk := wire.Nack{Conn: c.peerID, Msg: c.msgID(it.seq), Reason: wire.NackTooLarge}
		n, _ := wire.EncodeNack(buf, &nk, nil)
		return n
	case ctrlHeld:
		cts := wire.CTS{Conn: c.peerID, Flags: flagFromSender, Msg: it.id, BufLen: 1}
		n, _ := cts.Encode(buf)
		return n
	}
	return 0
}

func (c *Conn) handleTimeout(now monotime.Time) {
	if c.closed || c.connBody == nil {
		return
	}
	if c.lifeExpire(now); c.closed {
		return
	}
	if c.snd != nil {
		c.snd.handleTimeout(now)
	}
	if c.rcv != nil {
		c.rcv.handleTimeout(now)
	}
}

func (c *Conn) nextTimeout() monotime.Time {
	if c.closed || c.connBody == nil {
		return monotime.Never
	}
	t := c.lifeTimeout()
	if c.snd != nil {
		t = min(t, c.snd.nextTimeout())
	}
	if c.rcv != nil {
		t = min(t, c.rcv.nextTimeout())
	}
	return t
}

// schemeFor returns the reliability scheme a message's packets name (its
// kind and, for a code, K and M) as this connection configures it: the
// connection's own scheme when it matches, else that kind's defaults,
// built once per connection. It returns nil for a kind or code that does
// not exist.
func (c *Conn) schemeFor(k reliability.Kind, codeK, codeM uint8) reliability.Scheme {
	own := c.cfg.Scheme
	if own.Kind() == k {
		if code := own.Code(); code == nil || code.K() == int(codeK) && code.M() == int(codeM) {
			return own
		}
	}
	key := schemeKey{k, codeK, codeM}
	if s, ok := c.schemes[key]; ok {
		return s
	}
	s := reliability.ForWire(k, codeK, codeM)
	if s == nil {
		return nil
	}
	if c.schemes == nil {
		c.schemes = make(map[schemeKey]reliability.Scheme)
	}
	c.schemes[key] = s
	return s
}

// schemeKey names a scheme as packets do.
type schemeKey struct {
	kind         reliability.Kind
	codeK, codeM uint8
}
