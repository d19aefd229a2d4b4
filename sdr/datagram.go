package sdr

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/sdrnet/sdrnet/internal/core"
)

// Datagram is a datagram endpoint: one socket (and one set of paths) that
// exchanges messages with any number of peers, with no connection and no
// handshake per peer, as CSA-UD's unreliable datagram QPs do. Each peer
// costs what loss recovery needs; the message slots come from a pool
// shared by all peers while messages are in flight. Peers find each other by address: both ends must listen on a
// specific address (not 0.0.0.0), the one the other names in Peer.
//
// Datagram endpoints run without packet protection: there is no handshake
// to agree keys, so Config.Auth must be "none", and they belong on
// networks where nobody forges packets. Use Dial and Listen where that is
// not so.
type Datagram struct {
	e  *endpoint
	ud *core.Datagram
}

// ErrDatagramAuth says a datagram endpoint was asked for protection.
var ErrDatagramAuth = errors.New(`sdr: datagram endpoints have no handshake to agree keys: set Config.Auth to "none" (trusted networks only) or use Dial and Listen`)

// ListenDatagram opens a datagram endpoint on addr ("IP:port"; port 0
// picks one). cfg.MaxMsgs is each peer's messages in flight per direction
// (zero: core.DefaultDatagramWindow).
func ListenDatagram(addr string, cfg *Config) (*Datagram, error) {
	c := cfg.orDefault()
	if c.Auth != "none" {
		return nil, ErrDatagramAuth
	}
	if c.MaxMsgs == 0 {
		c.MaxMsgs = core.DefaultDatagramWindow
	}
	local, err := resolve(addr)
	if err != nil {
		return nil, err
	}
	if local.Addr().IsUnspecified() {
		return nil, fmt.Errorf("sdr: listen datagram %s: name the address peers reach (they derive this endpoint's id from it), not %v", addr, local.Addr())
	}
	if c.MTU == 0 {
		c.MTU = interfacePayload(local.Addr())
		if c.ChunkSize != 0 {
			c.ChunkSize = core.ChunkFor(c.MTU, c.ChunkSize)
		}
	}
	cc, err := c.check()
	if err != nil {
		return nil, err
	}
	e, err := newEndpoint(c.newBind(), local, c)
	if err != nil {
		return nil, fmt.Errorf("sdr: listen datagram %s: %w", addr, err)
	}
	d := &Datagram{e: e}
	if cerr := e.call(func() { d.ud, err = e.core.NewDatagram(cc) }); cerr != nil {
		return nil, cerr
	}
	if err != nil {
		e.stop(nil)
		return nil, fmt.Errorf("sdr: listen datagram %s: %w", addr, err)
	}
	return d, nil
}

// Addr returns the address the endpoint receives on.
func (d *Datagram) Addr() netip.AddrPort { return d.e.local }

// Peer returns the Conn that exchanges messages with the datagram endpoint
// at addr, adding the peer on first use. Nothing is sent to add it: the
// peer's own Peer call, naming this endpoint, makes the other half. Its
// Send and PostRecv work as on any Conn; the n-th message one side sends
// to the other lands in the n-th buffer the other posted for it.
func (d *Datagram) Peer(addr string) (*Conn, error) {
	peer, err := resolve(addr)
	if err != nil {
		return nil, err
	}
	var c *Conn
	cerr := d.e.call(func() {
		id := core.AddrID(peer)
		if cc := d.ud.Peer(id); cc != nil {
			c = d.e.conns[cc]
			return
		}
		var cc *core.Conn
		if cc, err = d.ud.AddPeer(id, core.AddrID(d.e.local), peer); err == nil {
			c = d.e.wrap(cc)
		}
	})
	if cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, fmt.Errorf("sdr: datagram peer %s: %w", addr, err)
	}
	if c == nil {
		return nil, fmt.Errorf("sdr: datagram peer %s: %w", addr, ErrConnClosed)
	}
	return c, nil
}

// DatagramStats counts a datagram endpoint's peers and its pool of
// message slots.
type DatagramStats struct {
	Peers int // peers added
	// Leased is how many peers hold message slots now (a peer's sending
	// and receiving halves lease apart and count once each).
	Leased int
	// Blocks is the slot blocks the pool has made: its high-water mark of
	// peers with messages in flight, whatever the number of peers.
	Blocks int
	Leases uint64 // blocks leased so far
}

// Stats returns the endpoint's counters.
func (d *Datagram) Stats() DatagramStats {
	var s core.DatagramStats
	_ = d.e.call(func() { s = d.ud.Stats() })
	return DatagramStats(s)
}

// Close fails every message in flight and closes the socket; peers are
// not told (there is no connection to close).
func (d *Datagram) Close() error {
	_ = d.e.call(func() {
		for _, c := range d.e.conns {
			c.closed(ErrConnClosed)
		}
	})
	d.e.stop(nil)
	return nil
}
