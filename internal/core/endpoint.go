// Package core is sdrnet's sans-IO protocol engine: SDR-style messages over a
// receive bitmap, with the reliability scheme of each message plugged in
// from internal/reliability.
//
// An Endpoint owns connections and demultiplexes datagrams to them. It does
// no I/O and reads no clock: the driver (the UDP datapath, the simulator or
// a test) feeds it datagrams and the current time, and pulls datagrams,
// timer deadlines and events out of it. The same inputs give the same
// outputs, bit for bit.
package core

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/netip"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// Path is a path entropy: the UDP source port on a real network, the ECMP
// hash input in the simulator.
type Path uint16

// Transmit describes a datagram PollTransmit wrote into the caller's buffer.
// The datagram is buf[:Len] followed by Payload. Payload, when not empty,
// aliases the application's message (it is never copied to be sent) and
// stays valid until that message's send completes or fails; a driver
// gathers the two (writev, UDP GSO) or copies them into one buffer.
type Transmit struct {
	// Addr is where the datagram goes: Conn.Peer(), or for a listener's
	// stateless answer to a HELLO (a Retry or Refusal) the HELLO's
	// source, with Conn nil.
	Addr    netip.AddrPort
	Conn    *Conn
	Path    Path
	Len     int
	Payload []byte
	// Data is true for DATA and PARITY packets, false for control packets
	// (a fabric may queue those ahead of data).
	Data bool
}

// EndpointStats counts datagrams the endpoint could not hand to a
// connection, what a listener did with HELLOs, and (Conns, HalfOpen) how
// many connections the endpoint holds now.
type EndpointStats struct {
	Malformed   uint64 // failed to decode
	UnknownConn uint64 // named no connection of this endpoint
	// Retries counts HELLOs without a valid cookie, answered with a
	// Retry and no state.
	Retries uint64
	// BadCookies counts the HELLOs among those whose cookie was forged,
	// expired, or issued to another address, port or connection id.
	BadCookies uint64
	// Refused counts verified HELLOs turned away: connection limits
	// reached, or the endpoint stopped accepting.
	Refused uint64
	// Unanswered counts HELLOs dropped because the queue of stateless
	// answers was full.
	Unanswered uint64
	// HalfOpenExpired counts accepted connections closed because their
	// dialer never confirmed them.
	HalfOpenExpired uint64
	// Reaped counts closed connections removed from the endpoint.
	Reaped uint64
	// Unsealable counts packets dropped because the driver's buffer had
	// no room for protection's trailer (see TrailerLen).
	Unsealable uint64
	// Conns and HalfOpen are the connections the endpoint holds now, and
	// of those the accepted ones not confirmed yet.
	Conns, HalfOpen int
}

// Endpoint is one side's protocol state: a set of connections.
type Endpoint struct {
	conns  map[uint64]*Conn
	order  []*Conn // in creation order, for fair and deterministic polling
	next   int     // where PollTransmit starts its round-robin
	last   *Conn   // the connection of the previous datagram: usually the next's
	gather []byte  // scratch for a split datagram that is gathered
	// Scratch its connections use one at a time, while a datagram, a
	// poll or a timeout is handled: the ranges of a NACK being written,
	// the shards of a stripe being decoded, the slots whose timers are
	// due.
	ranges  []wire.Range
	decoder ecScratch
	dueNow  bitset // a receiver's timers due (receiver.handleTimeout)
	// recvPool holds the active state of completed receives, for the
	// next message whose data begins to arrive (receiver.activate).
	recvPool pool[recvActive]
	sendPool pool[sendActive] // the same for sends (sender.release)
	// payload is the message bytes that follow the header a poll just
	// wrote: the datapath gathers them, so data is never copied to send.
	payload []byte
	zeros   []byte               // the payload of virtual messages: read only, shared by all its senders
	codec   *reliability.Workers // codes parity ahead (SetCodecWorkers); nil: inline
	// pacedWake is the earliest time a controller's pacing held a data
	// packet back until, since PacedWake last read it; 0: none.
	pacedWake monotime.Time
	nextID    uint64     // the last connection id handed out
	ids       *rand.Rand // random ids (RandomIDs); nil: in turn
	// listen holds the configuration of accepted connections; nil: not
	// listening. accepted finds them again from a repeated HELLO.
	listen   *Config
	accepted map[acceptKey]*Conn
	events   ring[Event]
	stats    EndpointStats
	credit   *creditScheduler // receiver-driven control's shared pacer (credit.go)
	// adm is a listener's admission state (cookie.go); halfOpen holds
	// its accepted connections not yet confirmed, with their deadlines.
	adm      *admission
	halfOpen map[*Conn]monotime.Time
	// retried holds the cookies of dialing connections told to retry.
	retried map[*Conn]*retryState
	reapDue bool                 // a closed connection waits to be reaped
	configs []*Config            // what NewConn's connections share (config_share.go)
	steps   [stepTable]stepState // collective steps (steps.go)
	sched   schedule             // which connections to look at (schedule.go)
	// arrived is when the datagram being handled reached the host
	// (Received.Arrived) while it is handled; 0: now.
	arrived monotime.Time
}

// NewEndpoint returns an endpoint with no connections.
func NewEndpoint() *Endpoint {
	return &Endpoint{conns: make(map[uint64]*Conn)}
}

// Errors returned by connection management.
var (
	ErrConnExists = errors.New("core: connection id already in use")
)

// NewConn adds a connection whose local id is id and whose peer, at peer,
// knows it as peerID.
func (e *Endpoint) NewConn(id, peerID uint64, peer netip.AddrPort, cfg Config) (*Conn, error) {
	if err := e.freeID(id); err != nil {
		return nil, err
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = -1 // both ends were set up by hand: no keepalives
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// Made by hand at both ends, it may stay idle, a head alone, until
	// used: unless its keepalive runs from the start, or it takes its
	// place among its endpoint's receivers of credit now.
	c := newIdleConn(e, nil, id, peerID, peer, e.sharedConfig(cfg))
	if c.cfg.IdleTimeout > 0 || c.cfg.CC.ReceiverDriven() {
		c.useBoth()
	}
	e.add(c)
	return c, nil
}

// freeID says whether id may name a new connection or peer.
func (e *Endpoint) freeID(id uint64) error {
	if _, ok := e.conns[id]; ok || id == 0 {
		return fmt.Errorf("%w: %d", ErrConnExists, id)
	}
	return nil
}

// Conn returns the connection with local id id, or nil.
func (e *Endpoint) Conn(id uint64) *Conn { return e.conns[id] }

// Stats returns the endpoint's counters.
func (e *Endpoint) Stats() EndpointStats {
	s := e.stats
	s.Conns, s.HalfOpen = len(e.conns), len(e.halfOpen)
	return s
}

// Received is one received datagram, as HandleDatagram takes it.
type Received struct {
	// Buf is the datagram; with Payload set, only its header: a
	// simulator passes a DATA or PARITY packet's payload apart, as the
	// sender's Transmit gave it, without gathering it.
	Buf, Payload []byte
	// From is the address it came from: a listening endpoint answers a
	// HELLO there.
	From netip.AddrPort
	// Path is the path it arrived on.
	Path Path
	// Arrived is when it reached the host, no later than now: on a real
	// host the kernel's receive time, the datagram then having waited
	// for the process until now. The connection times round trips from
	// it, and its ACKs tell the peer how long after it they left
	// (wire.Ack.Delay), so neither end's wait for its process reads as
	// queueing delay on the path. 0 or a time after now means now.
	Arrived monotime.Time
	// CE says its IP header was marked congestion experienced (ECN): the
	// receiver echoes the mark to the sender's controller in its next
	// ACK.
	CE bool
}

// HandleDatagram feeds one received datagram. The endpoint does not keep
// d's buffers. A datagram that fails to decode or names no connection is
// counted and dropped; the error says why.
func (e *Endpoint) HandleDatagram(now monotime.Time, d Received) error {
	// arrived is the datagram's for as long as it is handled, and only
	// then: a timer that completes a message has no datagram to answer.
	if d.Arrived > 0 && d.Arrived <= now {
		e.arrived = d.Arrived
	}
	err := e.handleDatagram(now, &d)
	e.arrived = 0
	return err
}

// arrival is when the datagram being handled reached the host: its
// Arrived, else now.
func (e *Endpoint) arrival(now monotime.Time) monotime.Time {
	if e.arrived != 0 {
		return e.arrived
	}
	return now
}

func (e *Endpoint) handleDatagram(now monotime.Time, d *Received) error {
	b, payload := d.Buf, d.Payload
	if len(b) >= wire.CommonLen && b[1] == byte(wire.TypeHello) {
		h, typ, err := wire.ParseHandshake(b)
		if err != nil || typ != wire.TypeHello {
			e.stats.Malformed++
			return errors.Join(errMalformed, err)
		}
		return e.hello(now, d.From, &h)
	}
	if len(b) >= wire.CommonLen && wire.ProtectionOf(b) != wire.ProtectNone {
		return e.handleProtected(now, d.Path, b, payload, d.CE)
	}
	h, err := wire.ParseHeader(b)
	if err != nil {
		e.stats.Malformed++
		return err
	}
	if payload != nil && h.Type != wire.TypeData && h.Type != wire.TypeParity {
		// Only DATA and PARITY are decoded in pieces; anything else is
		// gathered.
		e.gather = append(append(e.gather[:0], b...), payload...)
		b, payload = e.gather, nil
	}
	c := e.lookup(h.Conn)
	if c == nil {
		e.stats.UnknownConn++
		return ErrUnknownConn
	}
	if c.connBody != nil && c.prot != nil && !handshakePacket(b) {
		c.prot.stats.Unprotected++ // a keyed connection takes only sealed packets
		return ErrUnprotected
	}
	return e.deliver(now, d.Path, c, h, b, payload, d.CE)
}

// lookup returns connection id, remembering it: consecutive datagrams
// mostly belong to the same connection.
func (e *Endpoint) lookup(id uint64) *Conn {
	c := e.last
	if c == nil || c.id != id {
		c = e.conns[id]
		e.last = c
	}
	return c
}

// handleProtected opens a protected datagram for the connection it names,
// then delivers it.
func (e *Endpoint) handleProtected(now monotime.Time, path Path, header, payload []byte, ce bool) error {
	b := header
	if payload != nil {
		e.gather = append(append(e.gather[:0], header...), payload...)
		b = e.gather
	}
	c := e.lookup(binary.BigEndian.Uint64(b[4:]))
	if c == nil {
		e.stats.UnknownConn++
		return ErrUnknownConn
	}
	if c.connBody == nil || c.prot == nil {
		e.stats.Malformed++ // sealed, for a connection with no keys
		return ErrUnprotected
	}
	b, err := c.prot.openInPlace(b)
	if err != nil {
		return err
	}
	h, err := wire.ParseHeader(b)
	if err != nil {
		e.stats.Malformed++
		return err
	}
	return e.deliver(now, path, c, h, b, nil, ce)
}

// deliver hands a datagram, opened if it was protected, to c.
func (e *Endpoint) deliver(now monotime.Time, path Path, c *Conn, h wire.Header, b, payload []byte, ce bool) error {
	c.use()
	if ce && (h.Type == wire.TypeData || h.Type == wire.TypeParity) {
		c.receiver().ceSeen = true
	}
	e.touch(c)
	if err := c.handle(now, path, h, b, payload); err != nil {
		if errors.Is(err, errMalformed) {
			e.stats.Malformed++
		}
		return err
	}
	e.confirm(c)
	return nil
}

// ErrUnknownConn is returned for a datagram that names no connection.
var ErrUnknownConn = errors.New("core: unknown connection")

// HandleTimeout runs every timer that is due at now. A spurious call is
// harmless.
func (e *Endpoint) HandleTimeout(now monotime.Time) {
	e.fileDeadlines()
	if e.credit != nil && e.credit.due() <= now {
		e.credit.tick(now)
	}
	for _, c := range e.sched.popDue(now) {
		c.handleTimeout(now)
		e.touch(c)
	}
	e.expireHalfOpen(now)
}

// NextTimeout returns the earliest timer deadline, if any timer is armed.
func (e *Endpoint) NextTimeout() (monotime.Time, bool) {
	e.fileDeadlines()
	t := min(e.sched.nextDeadline(), e.halfOpenTimeout())
	if e.credit != nil {
		t = min(t, e.credit.due())
	}
	return t, t != monotime.Never
}

// PacedWake returns the earliest time a congestion controller's pacing
// held a data packet back until since the last call, and forgets it. A
// driver whose timers are coarse times that wait more finely than its
// other ones: a pacer spaces packets a fraction of a millisecond apart.
func (e *Endpoint) PacedWake() (monotime.Time, bool) {
	t := e.pacedWake
	e.pacedWake = 0
	return t, t != 0
}

// SetCodecWorkers has the endpoint's senders code erasure-code parity on
// w's goroutines: a sub-message's parity is started as its first data
// packet leaves and is ready, unless the workers fall behind, when its
// last one has; the sender waits for it only then. nil (the default)
// codes on the caller's goroutine when the parity is due. The parity
// bytes are the same either way; a simulator, which must not depend on
// a scheduler's timing, leaves it nil.
func (e *Endpoint) SetCodecWorkers(w *reliability.Workers) { e.codec = w }

// PollTransmit writes the next datagram to send into buf and describes it
// in *t. It returns false, leaving *t alone, when nothing is ready to send
// now. buf must hold a full packet, MTU plus wire.MaxHeaderLen bytes,
// since control and parity packets are written whole. The description is
// written into the caller's *t, not returned: a Transmit is too big for
// registers, and copying it out of the callee's frame whole stalled every
// packet on store forwarding.
func (e *Endpoint) PollTransmit(now monotime.Time, buf []byte, t *Transmit) bool {
	// Checked here, not only in pollAnswer: the call alone costs on
	// every packet.
	if e.adm != nil && e.adm.asize > 0 && e.pollAnswer(buf, t) {
		return true
	}
	if e.reapDue {
		e.reap()
	}
	// Round-robin from where the last datagram came from, over the
	// connections that may have something to send.
	n, start := len(e.order), e.next
	j := e.sched.nextSendable(start, n)
	if j < 0 {
		j = e.sched.nextSendable(0, start)
	}
	for j >= 0 {
		if size, data := e.pollConn(now, j, buf); size > 0 {
			if e.next = j + 1; e.next == n {
				e.next = 0
			}
			c := e.order[j]
			payload := e.payload
			e.payload = nil
			*t = Transmit{Addr: c.peer, Conn: c, Path: c.mp.path, Len: size, Data: data, Payload: payload}
			return true
		}
		if j >= start {
			if j = e.sched.nextSendable(j+1, n); j < 0 {
				j = e.sched.nextSendable(0, start)
			}
		} else {
			j = e.sched.nextSendable(j+1, start)
		}
	}
	if e.reapDue {
		e.reap()
	}
	return false
}

// pollConn asks the connection at place j for a datagram and returns its
// length in buf, zero when it had none.
func (e *Endpoint) pollConn(now monotime.Time, j int, buf []byte) (int, bool) {
	c := e.order[j]
	size, data := c.poll(now, buf)
	e.touch(c) // sending arms timers; so may finding nothing to send (pacing)
	if size > 0 {
		size, ok := c.sealTransmit(buf, size)
		if !ok {
			e.stats.Unsealable++
			return 0, false
		}
		return size, data
	}
	e.sched.clearSendable(j)
	if c.closed {
		e.reapDue = true
	} else if c.ud != nil {
		c.ud.settle(c) // nothing to send: maybe nothing in flight
	}
	return 0, false
}

// PollEvent returns the next event, if any.
func (e *Endpoint) PollEvent() (Event, bool) { return e.events.pop() }
