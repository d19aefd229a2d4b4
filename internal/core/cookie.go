package core

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"net/netip"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// Admission: what a listening endpoint does with a HELLO, and what state
// it may hold for peers it has not heard from properly.
//
// A listener creates no state for a HELLO until its sender has proved it
// receives at its source address: a HELLO without a valid cookie is
// answered with a Retry (an ACCEPT with wire.FlagRetry) carrying a cookie,
// HMAC-SHA256 keyed by the listener's secret over the dialer's address
// and port, its connection id and the coarse time of issue, and no more
// bytes than the HELLO it answers (nothing to amplify). Only a HELLO that
// echoes a valid cookie, issued to that address, port and id no longer
// than CookieLifetime ago, creates a connection. The Retry waits in a
// small fixed queue of stateless answers until PollTransmit sends it; a
// HELLO that finds the queue full, or comes past RetryRate, is dropped
// unanswered (the dialer repeats it).
//
// A connection created so is half-open until the listener hears from the
// dialer on it (the dialer confirms with a PONG as soon as the ACCEPT
// arrives): at most MaxHalfOpen are, and one unconfirmed after
// HalfOpenTimeout is closed. At most MaxConns connections exist on the
// endpoint. A verified dialer over either bound, or arriving once the
// endpoint stopped accepting, is told so with a Refusal (an ACCEPT with
// wire.FlagRefuse) and its Dial fails with ErrRefused. Closed connections
// are removed from the endpoint (reaped) once their CLOSE is sent, so
// their memory returns.
//
// The core reads no randomness: the secret comes from the driver (sdr
// draws it from crypto/rand). Without one, the secret is derived from
// Config.Seed, which keeps simulations and tests deterministic but lets
// anyone who knows the seed forge cookies: a listener on a real network
// must be given a secret.

// Defaults of ListenConfig's zero value.
const (
	// DefaultCookieLifetime is how long a Retry's cookie stays valid:
	// several handshake round trips, short enough that a captured cookie
	// soon expires.
	DefaultCookieLifetime = 5 * monotime.Second
	// DefaultMaxConns bounds a listening endpoint's connections. A
	// connection with the default 1024 receive slots holds about 0.85 MB,
	// so the bound is about 220 MB.
	DefaultMaxConns = 256
	// DefaultMaxHalfOpen bounds accepted connections the dialer has not
	// confirmed yet (about 27 MB at the default configuration).
	DefaultMaxHalfOpen = 32
	// MaxPendingAnswers bounds the Retries and Refusals waiting to be
	// sent: the only per-HELLO memory of a listener, fixed at Listen.
	MaxPendingAnswers = 256
	// DefaultRetryRate bounds the Retries a listener sends per second
	// (bursts of MaxPendingAnswers): far more than honest dialers need,
	// far less than a flood, whose HELLOs beyond it cost only their
	// reading and decoding. A dialer left unanswered repeats its HELLO.
	DefaultRetryRate = 10_000
)

// cookieTick is the granularity of a cookie's time.
const cookieTick = monotime.Millisecond

// ListenConfig sets how a listening endpoint admits connections. The zero
// value works (see the package's admission notes for what it means
// without a Secret).
type ListenConfig struct {
	// Secret keys the cookies' MAC; at least 16 bytes when set. Nil:
	// derived from the connection Config's Seed (deterministic; for
	// simulations and tests only).
	Secret []byte
	// CookieLifetime is how long a cookie is accepted after it was
	// issued; zero means DefaultCookieLifetime.
	CookieLifetime monotime.Duration
	// MaxConns bounds the endpoint's connections; zero means
	// DefaultMaxConns.
	MaxConns int
	// MaxHalfOpen bounds accepted connections not yet confirmed by their
	// dialer; zero means DefaultMaxHalfOpen.
	MaxHalfOpen int
	// HalfOpenTimeout closes an accepted connection its dialer has not
	// confirmed this long; zero means the Config's HandshakeTimeout.
	HalfOpenTimeout monotime.Duration
	// RetryRate bounds the Retries sent per second; zero means
	// DefaultRetryRate, negative no bound.
	RetryRate int
}

// ErrRefused says the listener turned the dial away: it is not accepting,
// or its connection limits are reached.
var ErrRefused = errors.New("core: connection refused by the listener")

func (lc ListenConfig) withDefaults(cfg *Config) (ListenConfig, error) {
	if lc.CookieLifetime == 0 {
		lc.CookieLifetime = DefaultCookieLifetime
	}
	if lc.MaxConns == 0 {
		lc.MaxConns = DefaultMaxConns
	}
	if lc.MaxHalfOpen == 0 {
		lc.MaxHalfOpen = DefaultMaxHalfOpen
	}
	if lc.HalfOpenTimeout == 0 {
		lc.HalfOpenTimeout = cfg.HandshakeTimeout
	}
	if lc.RetryRate == 0 {
		lc.RetryRate = DefaultRetryRate
	}
	switch {
	case lc.Secret != nil && len(lc.Secret) < 16:
		return lc, errors.New("core: cookie secret shorter than 16 bytes")
	case lc.CookieLifetime < cookieTick || lc.CookieLifetime > 1<<31*cookieTick:
		return lc, errors.New("core: cookie lifetime out of range 1ms..24 days")
	case lc.MaxConns < 0 || lc.MaxHalfOpen < 0 || lc.HalfOpenTimeout < 0:
		return lc, errors.New("core: negative connection limit or timeout")
	}
	if lc.Secret == nil {
		var seed [8]byte
		binary.BigEndian.PutUint64(seed[:], cfg.Seed)
		sum := sha256.Sum256(append([]byte("sdrnet cookie secret from seed "), seed[:]...))
		lc.Secret = sum[:]
	}
	return lc, nil
}

// cookieJar mints and checks cookies without allocating.
type cookieJar struct {
	mac      hash.Hash
	lifetime uint64 // in ticks
	in       [34]byte
	sum      [sha256.Size]byte
}

func newCookieJar(secret []byte, lifetime monotime.Duration) *cookieJar {
	return &cookieJar{mac: hmac.New(sha256.New, secret), lifetime: uint64(lifetime / cookieTick)}
}

func cookieTime(now monotime.Time) uint64 { return uint64(now) / uint64(cookieTick) }

// compute returns the MAC of (from, source, issued).
func (j *cookieJar) compute(from netip.AddrPort, source, issued uint64) []byte {
	a := from.Addr().As16() // an IPv4 address and its IPv4-mapped form are one
	copy(j.in[:16], a[:])
	binary.BigEndian.PutUint16(j.in[16:], from.Port())
	binary.BigEndian.PutUint64(j.in[18:], source)
	binary.BigEndian.PutUint64(j.in[26:], issued)
	j.mac.Reset()
	j.mac.Write(j.in[:])
	return j.mac.Sum(j.sum[:0])[:wire.CookieMACLen]
}

// mint issues a cookie for a dialer with id source at from.
func (j *cookieJar) mint(now monotime.Time, from netip.AddrPort, source uint64) wire.Cookie {
	t := cookieTime(now)
	c := wire.Cookie{Time: uint32(t)}
	copy(c.MAC[:], j.compute(from, source, t))
	return c
}

// valid says c was minted for (from, source) at most the lifetime ago.
// The wire carries the low 32 bits of the issue time; the whole time is
// rebuilt from now and covered by the MAC, so a cookie never comes back
// to life when the 32 bits wrap.
func (j *cookieJar) valid(now monotime.Time, from netip.AddrPort, source uint64, c *wire.Cookie) bool {
	t := cookieTime(now)
	age := uint64(uint32(t) - c.Time)
	if age > j.lifetime || age > t {
		return false
	}
	return hmac.Equal(j.compute(from, source, t-age), c.MAC[:])
}

// admission is a listening endpoint's state besides its connections,
// allocated once at Listen: nothing in it grows with HELLOs.
type admission struct {
	lc   ListenConfig
	jar  *cookieJar
	stop bool // accepting no new connections
	// tokens is the Retries that may be sent now, refilled at RetryRate
	// up to MaxPendingAnswers; filled is when it was last refilled.
	tokens int
	filled monotime.Time
	// answers is a fixed ring of Retries and Refusals to send.
	answers      []answer
	ahead, asize int
}

type answer struct {
	to netip.AddrPort
	h  wire.Handshake
}

// ListenWith is Listen with admission settings: each HELLO with a valid
// cookie from a new peer creates a connection with cfg and raises
// EventAccepted, within lc's limits.
func (e *Endpoint) ListenWith(cfg Config, lc ListenConfig) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	lc, err = lc.withDefaults(&cfg)
	if err != nil {
		return err
	}
	e.listen = &cfg
	e.adm = &admission{lc: lc, jar: newCookieJar(lc.Secret, lc.CookieLifetime), answers: make([]answer, MaxPendingAnswers),
		tokens: MaxPendingAnswers}
	if e.accepted == nil {
		e.accepted = make(map[acceptKey]*Conn)
	}
	if e.halfOpen == nil {
		e.halfOpen = make(map[*Conn]monotime.Time)
	}
	return nil
}

// StopAccepting makes a listening endpoint refuse every new connection;
// the ones it has keep working (a repeated HELLO of one is still
// answered).
func (e *Endpoint) StopAccepting() {
	if e.adm != nil {
		e.adm.stop = true
	}
}

// takeToken says whether a Retry may be sent now, and counts it.
func (a *admission) takeToken(now monotime.Time) bool {
	if a.lc.RetryRate < 0 {
		return true
	}
	if a.tokens == 0 && now > a.filled {
		per := monotime.Second / monotime.Duration(a.lc.RetryRate) // time per token
		n := int64(now.Sub(a.filled) / max(per, 1))
		if n > 0 {
			a.tokens = int(min(n, MaxPendingAnswers))
			a.filled = a.filled.Add(monotime.Duration(n) * per)
			if a.tokens == MaxPendingAnswers {
				a.filled = now
			}
		}
	}
	if a.tokens == 0 {
		return false
	}
	a.tokens--
	return true
}

// queueAnswer queues a stateless answer; false when the queue is full.
func (a *admission) queueAnswer(to netip.AddrPort, h *wire.Handshake) bool {
	if a.asize == len(a.answers) {
		return false
	}
	i := a.ahead + a.asize
	if i >= len(a.answers) {
		i -= len(a.answers)
	}
	a.answers[i] = answer{to: to, h: *h}
	a.asize++
	return true
}

// pollAnswer writes the next stateless answer into buf.
func (e *Endpoint) pollAnswer(buf []byte, t *Transmit) bool {
	a := e.adm
	if a == nil || a.asize == 0 {
		return false
	}
	an := &a.answers[a.ahead]
	a.ahead++
	if a.ahead == len(a.answers) {
		a.ahead = 0
	}
	a.asize--
	n, err := an.h.Encode(buf, wire.TypeAccept)
	if err != nil {
		return false
	}
	*t = Transmit{Addr: an.to, Len: n}
	return true
}

// hello handles a HELLO from a dialer at from.
func (e *Endpoint) hello(now monotime.Time, from netip.AddrPort, h *wire.Handshake) error {
	if e.listen == nil {
		return ErrNotListening
	}
	a := e.adm
	if h.Flags&wire.FlagCookie == 0 || !a.jar.valid(now, from, h.Source, &h.Cookie) {
		if h.Flags&wire.FlagCookie != 0 {
			e.stats.BadCookies++
		}
		if a.asize == len(a.answers) || !a.takeToken(now) {
			e.stats.Unanswered++
			return nil
		}
		r := wire.Handshake{Conn: h.Source, Flags: wire.FlagRetry, Cookie: a.jar.mint(now, from, h.Source)}
		a.queueAnswer(from, &r)
		e.stats.Retries++
		return nil
	}
	key := acceptKey{from, h.Source}
	if c := e.accepted[key]; c != nil && !c.closed {
		c.hs.acceptEcho, c.hs.acceptDue = h.Echo, true // our ACCEPT was lost
		c.heard(now)
		return nil
	}
	if a.stop || len(e.conns) >= a.lc.MaxConns || len(e.halfOpen) >= a.lc.MaxHalfOpen {
		e.stats.Refused++
		r := wire.Handshake{Conn: h.Source, Flags: wire.FlagRefuse, Echo: h.Echo}
		if !a.queueAnswer(from, &r) {
			e.stats.Unanswered++
		}
		return ErrRefused
	}
	if err := e.admit(now, from, h, key); err != nil {
		// A key exchange that fails (another pre-shared key, no key
		// exchange offered) is refused: the dialer learns it at once.
		e.stats.Refused++
		r := wire.Handshake{Conn: h.Source, Flags: wire.FlagRefuse, Echo: h.Echo}
		if !a.queueAnswer(from, &r) {
			e.stats.Unanswered++
		}
		return err
	}
	return nil
}

// confirm notes that the dialer of c has spoken on it.
func (e *Endpoint) confirm(c *Conn) {
	if len(e.halfOpen) != 0 {
		delete(e.halfOpen, c)
	}
}

// halfOpenTimeout is the earliest deadline of a half-open connection.
func (e *Endpoint) halfOpenTimeout() monotime.Time {
	t := monotime.Never
	for _, d := range e.halfOpen {
		t = min(t, d)
	}
	return t
}

// expireHalfOpen closes the half-open connections whose dialer did not
// confirm them in time, in creation order (deterministic).
func (e *Endpoint) expireHalfOpen(now monotime.Time) {
	if len(e.halfOpen) == 0 || e.halfOpenTimeout() > now {
		return
	}
	for _, c := range e.order {
		if d, ok := e.halfOpen[c]; ok && d <= now {
			delete(e.halfOpen, c)
			e.stats.HalfOpenExpired++
			if !c.closed {
				c.closing = &closing{queued: true, code: 2, reason: "handshake not confirmed"}
				c.shutdown(ErrHandshakeTimeout)
			}
		}
	}
}

// reap removes closed connections whose CLOSE has left from the
// endpoint, so that their memory returns. Later datagrams for them count
// as UnknownConn.
func (e *Endpoint) reap() {
	e.reapDue = false
	j := 0
	for i, c := range e.order {
		if !c.closed || c.connBody != nil && c.closing != nil && c.closing.queued {
			e.order[j] = c
			j++
			continue
		}
		if e.conns[c.id] == c {
			delete(e.conns, c.id)
		}
		e.unplace(c)
		if key := (acceptKey{c.peer, c.peerID}); e.accepted[key] == c {
			delete(e.accepted, key)
		}
		delete(e.halfOpen, c)
		delete(e.retried, c)
		if e.last == c {
			e.last = nil
		}
		if i < e.next {
			e.next--
		}
		e.stats.Reaped++
	}
	clear(e.order[j:])
	e.order = e.order[:j]
	if e.next >= j {
		e.next = 0
	}
	e.renumber()
}
