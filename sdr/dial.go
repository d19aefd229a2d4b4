package sdr

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/netip"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/datapath/udp"
)

var udpAddrZero netip.AddrPort

// resolve parses "host:port" with a literal IP address, or "localhost".
func resolve(addr string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err == nil {
		return ap, nil
	}
	host, port, ok := cutLast(addr, ':')
	if ok && (host == "localhost" || host == "") {
		if ap, err := netip.ParseAddrPort("127.0.0.1:" + port); err == nil {
			if host == "" {
				ap = netip.AddrPortFrom(netip.IPv4Unspecified(), ap.Port())
			}
			return ap, nil
		}
	}
	return netip.AddrPort{}, fmt.Errorf("sdr: address %q: want IP:port (like 127.0.0.1:4793 or [::1]:4793), localhost:port or :port", addr)
}

func cutLast(s string, sep byte) (string, string, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == sep {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// Dial opens a connection to a listener at addr ("IP:port"). It fails
// when ctx ends or the peer does not answer within Config.HandshakeTimeout.
func Dial(ctx context.Context, addr string, cfg *Config) (*Conn, error) {
	c := cfg.orDefault()
	cc, err := c.check()
	if err != nil {
		return nil, err
	}
	peer, err := resolve(addr)
	if err != nil {
		return nil, err
	}
	if cc.PathMTU != nil {
		// Asked here, not on the endpoint's goroutine: the route is the
		// caller's (its network namespace's).
		m := cc.PathMTU(peer)
		cc.PathMTU = func(netip.AddrPort) int { return m }
	}
	local := netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	if peer.Addr().Is6() && !peer.Addr().Is4In6() {
		local = netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
	}
	e, err := newEndpoint(c.newBind(), local, c)
	if err != nil {
		return nil, fmt.Errorf("sdr: dial %s: %w", addr, err)
	}
	e.owned = true
	established := make(chan error, 1)
	var conn *core.Conn
	if err := e.call(func() {
		if conn, err = e.core.Dial(e.now(), peer, cc); err == nil {
			e.onEstablished[conn] = established
		}
	}); err != nil {
		return nil, err
	}
	if err != nil {
		e.stop(nil)
		return nil, fmt.Errorf("sdr: dial %s: %w", addr, err)
	}
	select {
	case err = <-established:
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		// A peer that answered, but never as sdrnet, is something else.
		var foreign uint64
		_ = e.call(func() { st := e.core.Stats(); foreign = st.Malformed + st.UnknownConn })
		e.stop(nil)
		err = publicErr(err, peer)
		switch {
		case !errors.Is(err, core.ErrHandshakeTimeout):
		case foreign > 0:
			err = fmt.Errorf("%w: %v answered %d times, but not as sdrnet: is something else listening there?", err, peer, foreign)
		default:
			err = fmt.Errorf("%w: no answer from %v", err, peer)
		}
		return nil, fmt.Errorf("sdr: dial %s: %w", addr, err)
	}
	var c2 *Conn
	_ = e.call(func() { c2 = e.conns[conn] })
	return c2, nil
}

// Listener accepts connections on one address.
type Listener struct {
	e *endpoint
}

// Listen listens for connections on addr ("IP:port", ":port" for all
// addresses; port 0 picks one).
func Listen(addr string, cfg *Config) (*Listener, error) {
	c := cfg.orDefault()
	cc, err := c.check()
	if err != nil {
		return nil, err
	}
	local, err := resolve(addr)
	if err != nil {
		return nil, err
	}
	var probe *udp.RouteProbe
	if cc.PathMTU != nil {
		if probe, err = listenerRoutes(&cc); err != nil {
			return nil, fmt.Errorf("sdr: listen %s: %w", addr, err)
		}
	}
	e, err := newEndpoint(c.newBind(), local, c)
	if err != nil {
		if probe != nil {
			probe.Close()
		}
		return nil, fmt.Errorf("sdr: listen %s: %w", addr, err)
	}
	e.accepted = make(chan *Conn, 64)
	// The cookie secret of the listener's stateless retry (no state for a
	// peer before it proves its address): fresh for each listener.
	lc := core.ListenConfig{Secret: make([]byte, 32), MaxConns: c.MaxConns, MaxHalfOpen: c.MaxHalfOpen}
	_, _ = rand.Read(lc.Secret) // never fails (crypto/rand panics rather)
	if cerr := e.call(func() { e.routes, err = probe, e.core.ListenWith(cc, lc) }); cerr != nil {
		if probe != nil {
			probe.Close()
		}
		return nil, cerr
	}
	if err != nil {
		e.stop(nil)
		return nil, err
	}
	return &Listener{e: e}, nil
}

// Accept waits for the next connection.
func (l *Listener) Accept(ctx context.Context) (*Conn, error) {
	select {
	case c, ok := <-l.e.accepted:
		if !ok {
			return nil, l.e.stopErr()
		}
		return c, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.e.stopped:
		return nil, l.e.stopErr()
	}
}

// StopAccepting makes the listener take no new connection: a dialer that
// proves its address is refused (its Dial fails with core.ErrRefused),
// one that does not is only sent a Retry. The connections accepted and
// taken by Accept keep working; those still queued for Accept are closed.
// A single-peer receiver calls it once it has its peer.
func (l *Listener) StopAccepting() {
	_ = l.e.call(func() {
		l.e.core.StopAccepting()
		for {
			select {
			case c, ok := <-l.e.accepted:
				if !ok {
					return
				}
				_ = c.core.Close(1, "not accepting")
			default:
				return
			}
		}
	})
}

// Stats returns what the listener's endpoint dropped (datagrams that
// failed to decode or named no connection), how it answered HELLOs
// (Retries, BadCookies, Refused, Unanswered) and how many connections it
// holds (Conns, HalfOpen).
func (l *Listener) Stats() ListenerStats {
	var s ListenerStats
	_ = l.e.call(func() { s = listenerStats(l.e.core.Stats()) })
	return s
}

// Addr returns the address the listener receives on.
func (l *Listener) Addr() netip.AddrPort { return l.e.local }

// Close stops listening and closes every accepted connection.
func (l *Listener) Close() error {
	_ = l.e.call(func() {
		for _, c := range l.e.conns {
			_ = c.core.Close(0, "listener closed")
		}
	})
	_ = l.e.call(func() {}) // let the CLOSEs leave
	l.e.stop(nil)
	return nil
}
