package core

import (
	"errors"
	"math/bits"
	"math/rand/v2"
	"net/netip"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// Connection establishment. A dialer sends HELLO (to connection id 0) with
// its id and parameters until an ACCEPT arrives or the handshake times
// out. A listening endpoint first answers with a Retry carrying a cookie
// (see cookie.go: no state before the dialer proves its address); the
// dialer repeats its HELLO with the cookie at once, and the listener
// answers that with ACCEPT, creating the connection on the first and
// repeating the answer for duplicates (its ACCEPT may be lost). The
// dialer confirms with a PONG, which ends the connection's half-open
// time. Both ends then use the smaller MTU and message
// window. Established connections keep each other alive with PINGs and
// close when the peer stays silent past the idle timeout.

// handshake is a connection's state until it is established: the
// dialer's HELLO retries, the listener's ACCEPT to send, and the key
// exchange (keys.go).
type handshake struct {
	dialStart  monotime.Time // dialing: when Dial was called
	helloDue   monotime.Time // dialing: when to (re)send HELLO
	helloTries uint
	acceptDue  bool        // listening side: an ACCEPT is to be sent
	acceptEcho uint64      // the HELLO timestamp it echoes
	kx         KeyExchange // the dialer's key exchange until the ACCEPT
	kxMsg      []byte      // our key-exchange message: the HELLO's, or the ACCEPT's
}

// Errors of connection management.
var (
	ErrHandshakeTimeout = errors.New("core: handshake timed out")
	ErrIdleTimeout      = errors.New("core: idle timeout: nothing heard from the peer")
	ErrNotEstablished   = errors.New("core: connection not established yet")
	ErrNotListening     = errors.New("core: endpoint is not listening")
)

type connState uint8

const (
	stateEstablished connState = iota
	stateDialing
)

type acceptKey struct {
	from netip.AddrPort
	id   uint64
}

// Listen makes the endpoint accept connections with cfg and the default
// admission settings (ListenWith): each HELLO with a valid cookie from a
// new peer creates one and raises EventAccepted.
func (e *Endpoint) Listen(cfg Config) error { return e.ListenWith(cfg, ListenConfig{}) }

// allocID returns an unused local connection id: the next in turn, or a
// random one after RandomIDs. A random id spans all 64 bits: a blind
// guess names a given connection once in 2^64 tries, not once in 2^32.
func (e *Endpoint) allocID() uint64 {
	for {
		e.nextID++
		id := e.nextID
		if e.ids != nil {
			id = e.ids.Uint64()
		}
		if id != 0 && e.conns[id] == nil {
			return id
		}
	}
}

// RandomIDs makes the endpoint draw its connection ids at random from a
// generator seeded with seed, so that an attacker off the path cannot
// guess the id a packet must name. The caller supplies the seed (from
// crypto/rand on a real network); the same seed gives the same ids.
func (e *Endpoint) RandomIDs(seed [32]byte) { e.ids = rand.New(rand.NewChaCha8(seed)) }

// Dial opens a connection to peer: EventEstablished reports it ready, or
// EventClosed with ErrHandshakeTimeout after cfg.HandshakeTimeout.
func (e *Endpoint) Dial(now monotime.Time, peer netip.AddrPort, cfg Config) (*Conn, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	cfg.fitPath(peer)
	c := newConn(e, nil, e.allocID(), 0, peer, &cfg)
	if err := c.initiateKeys(); err != nil {
		return nil, err
	}
	c.state = stateDialing
	c.hs.dialStart = now
	c.hs.helloDue = now
	e.add(c)
	return c, nil
}

func (e *Endpoint) add(c *Conn) {
	e.conns[c.id] = c
	e.place(c)
}

// admit creates the connection a verified HELLO asks for; it is
// half-open until the dialer speaks on it.
func (e *Endpoint) admit(now monotime.Time, from netip.AddrPort, h *wire.Handshake, key acceptKey) error {
	cfg := *e.listen
	cfg.MTU = min(cfg.MTU, int(h.MTU))
	cfg.MaxMsgs = min(cfg.MaxMsgs, 1<<bits.TrailingZeros32(h.MaxMsgs))
	cfg.ChunkSize = ChunkFor(cfg.MTU, cfg.ChunkSize)
	cfg.fitPath(from)
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	c := newConn(e, nil, e.allocID(), h.Source, from, &cfg)
	if err := c.respondKeys(h); err != nil {
		return err
	}
	c.hs.acceptEcho, c.hs.acceptDue = h.Echo, true
	c.heard(now)
	e.add(c)
	e.accepted[key] = c
	e.halfOpen[c] = now.Add(e.adm.lc.HalfOpenTimeout)
	c.emit(EventAccepted, 0, nil)
	return nil
}

// ChunkFor is the chunk that keeps a chunk size asked for valid at mtu:
// a power-of-two multiple of it, no larger than want, at least one
// packet and at most 2^wire.MaxChunkShift.
func ChunkFor(mtu, want int) int {
	pk := min(max(want/mtu, 1), 1<<wire.MaxChunkShift)
	return mtu << (bits.Len(uint(pk)) - 1)
}

// maxRetries bounds the Retries a dial follows at once: each makes the
// dialer send a HELLO, so a forged stream of them must not drive it.
const maxRetries = 8

// retryState is a dialing connection's cookie from the listener's Retry.
type retryState struct {
	cookie wire.Cookie
	n      int // Retries followed
}

// accept handles the ACCEPT that answers our HELLO: a Retry, a Refusal
// or the connection's acceptance.
func (c *Conn) accept(now monotime.Time, h *wire.Handshake) {
	if c.state != stateDialing {
		return
	}
	switch {
	case h.Flags&wire.FlagRetry != 0:
		c.ep.retry(now, c, &h.Cookie)
		return
	case h.Flags&wire.FlagRefuse != 0:
		if sent := monotime.Time(h.Echo); sent >= c.hs.dialStart && sent <= now { // it answers a HELLO of ours
			c.shutdown(ErrRefused)
		}
		return
	}
	cfg := *c.cfg
	cfg.MTU = min(cfg.MTU, int(h.MTU))
	cfg.MaxMsgs = min(cfg.MaxMsgs, 1<<bits.TrailingZeros32(h.MaxMsgs))
	cfg.ChunkSize = ChunkFor(cfg.MTU, cfg.ChunkSize)
	if _, err := cfg.withDefaults(); err != nil {
		return // an ACCEPT we cannot honour (MTU below MinMTU, a zero window) is not our peer's
	}
	if rtt := now.Sub(monotime.Time(h.Echo)); rtt > 0 && monotime.Time(h.Echo) >= c.hs.dialStart {
		cfg.InitialRTT = rtt  // the timers' seed: the whole wait, our read included
		if cfg.BaseRTT == 0 { // the congestion controller's first estimate: the path's
			cfg.BaseRTT = c.ep.arrival(now).Sub(monotime.Time(h.Echo))
		}
	}
	c.adopt(cfg)
	if err := c.finishKeys(h); err != nil {
		c.shutdown(err)
		return
	}
	c.peerID = h.Source
	c.state = stateEstablished
	c.heard(now)
	delete(c.ep.retried, c)
	// Confirm at once: the listener holds the connection half-open until
	// it hears from us on it. A PONG with no timestamp is that word; it
	// asks for no answer and gives no RTT sample.
	c.live.pongDue, c.live.pongEcho = true, 0
	c.emit(EventEstablished, 0, nil)
}

// retry takes the cookie of a Retry to dialing connection c and repeats
// the HELLO with it now.
func (e *Endpoint) retry(now monotime.Time, c *Conn, ck *wire.Cookie) {
	if e.retried == nil {
		e.retried = make(map[*Conn]*retryState)
	}
	r := e.retried[c]
	if r == nil {
		r = &retryState{}
		e.retried[c] = r
	}
	if r.cookie == *ck || r.n >= maxRetries {
		return
	}
	r.cookie = *ck
	r.n++
	c.hs.helloDue = now
}

// adopt replaces the parameters of a connection that has no messages yet.
func (c *Conn) adopt(cfg Config) {
	c.cfg = &cfg
	c.shift = cfg.chunkShift()
	c.slotShift = uint8(bits.TrailingZeros(uint(cfg.MaxMsgs)))
	c.slotMask = uint32(cfg.MaxMsgs - 1)
	c.sender().init(c)
	c.receiver().init(c)
	c.initPaths()
}

// handshake is the HELLO or ACCEPT this connection has to send, if any.
// It is asked on every poll: the Handshake is built only when one is due.
func (c *Conn) handshake(now monotime.Time, buf []byte) int {
	switch {
	case c.hs == nil:
	case c.state == stateDialing && now >= c.hs.helloDue:
		return c.encodeHandshake(now, wire.TypeHello, buf)
	case c.hs.acceptDue:
		return c.encodeHandshake(now, wire.TypeAccept, buf)
	}
	return 0
}

func (c *Conn) encodeHandshake(now monotime.Time, t wire.Type, buf []byte) int {
	var h wire.Handshake
	if t == wire.TypeHello {
		h.Echo = uint64(now)
		if r := c.ep.retried[c]; r != nil {
			h.Flags, h.Cookie = wire.FlagCookie, r.cookie
		}
		// Every HELLO leaves from the same source port (path 0): the
		// listener's cookie is bound to it.
		c.mp.path = 0
		// Resend after a second, then back off to 4 s; a lost HELLO costs
		// little, a dead peer is found by the handshake timeout.
		c.hs.helloDue = now.Add(min(monotime.Second<<min(c.hs.helloTries, 2), 4*monotime.Second))
		c.hs.helloTries++
	} else {
		h.Conn = c.peerID
		h.Echo = c.hs.acceptEcho
		c.hs.acceptDue = false
		c.mp.path = c.ctrlPath()
	}
	h.Source = c.id
	h.Paths = uint8(c.cfg.Paths)
	h.MTU = uint16(c.cfg.MTU)
	h.ChunkShift = c.shift
	h.MaxMsgs = uint32(c.cfg.MaxMsgs)
	h.Scheme = uint8(c.cfg.Scheme.Kind())
	if code := c.cfg.Scheme.Code(); code != nil {
		h.K, h.M = uint8(code.K()), uint8(code.M())
	}
	c.offerKeys(&h)
	n, _ := h.Encode(buf, t)
	return n
}

// heard notes that the peer is alive.
func (c *Conn) heard(now monotime.Time) { c.live.lastHeard = now }

// keepalive returns the PING (or PONG) this connection has to send, if any.
func (c *Conn) keepalive(now monotime.Time, buf []byte) int {
	var flags uint8
	var echo uint64
	switch {
	case c.live.pongDue:
		flags, echo = wire.FlagPong, c.live.pongEcho
		c.live.pongDue = false
	case c.state == stateEstablished && (c.live.rttProbe || c.cfg.IdleTimeout > 0 && now >= c.pingAt()):
		echo = uint64(now)
		c.live.lastPing, c.live.rttProbe = now, false
	default:
		return 0 // asked on every poll: no Ping built
	}
	p := wire.Ping{Conn: c.peerID, Flags: flags, Echo: echo}
	n, _ := p.Encode(buf)
	return n
}

// pingAt is when to send the next keepalive: a third of the idle timeout
// after we last heard from the peer or last pinged it.
func (c *Conn) pingAt() monotime.Time {
	return max(c.live.lastHeard, c.live.lastPing).Add(c.cfg.IdleTimeout / 3)
}

func (c *Conn) onPing(now monotime.Time, p *wire.Ping) {
	if p.Flags&wire.FlagPong == 0 {
		c.live.pongDue, c.live.pongEcho = true, p.Echo
		return
	}
	if sent := monotime.Time(p.Echo); sent > 0 && sent <= now {
		c.sender().rtt.Update(now.Sub(sent))
		c.receiver().rtt.Update(now.Sub(sent))
	}
}

// LastHeard is when the connection last heard from its peer.
func (c *Conn) LastHeard() monotime.Time {
	if c.connBody == nil {
		return 0
	}
	return c.live.lastHeard
}

// lifeTimeout is the connection-management deadline: the next HELLO, the
// next keepalive, the handshake or the idle timeout.
func (c *Conn) lifeTimeout() monotime.Time {
	switch {
	case c.state == stateDialing:
		return min(c.hs.helloDue, c.hs.dialStart.Add(c.cfg.HandshakeTimeout))
	case c.cfg.IdleTimeout > 0:
		return min(c.pingAt(), c.live.lastHeard.Add(c.cfg.IdleTimeout))
	}
	return monotime.Never
}

// lifeExpire closes a connection whose handshake or peer timed out.
func (c *Conn) lifeExpire(now monotime.Time) {
	switch {
	case c.state == stateDialing && now >= c.hs.dialStart.Add(c.cfg.HandshakeTimeout):
		c.shutdown(ErrHandshakeTimeout)
	case c.state == stateEstablished && c.cfg.IdleTimeout > 0 && now >= c.live.lastHeard.Add(c.cfg.IdleTimeout):
		c.shutdown(ErrIdleTimeout)
	}
}
