package core

import (
	"errors"

	"github.com/sdrnet/sdrnet/internal/wire"
)

// Keying a connection. The dialer's HELLO carries the first message of a
// key-exchange handshake and the listener's ACCEPT the answer (wire's
// FlagKeys); each side then protects every packet with the keys the
// exchange derived (protect.go). The exchange itself is not the core's:
// package sdr runs a Noise handshake (github.com/flynn/noise) behind the
// KeyExchange interface, so the core holds no key material but the
// ciphers it is handed, and stays deterministic.

// KeyExchange is one side's part of a connection's key exchange.
type KeyExchange interface {
	// Initiate returns the dialer's message. It is called once; a HELLO
	// sent again carries the same bytes.
	Initiate() ([]byte, error)
	// Respond reads the dialer's message on the listener and returns the
	// answer, and the ciphers for what the listener sends and receives.
	Respond(msg []byte) (answer []byte, seal, open PacketCipher, err error)
	// Finish reads the listener's answer on the dialer and returns the
	// ciphers for what the dialer sends and receives.
	Finish(answer []byte) (seal, open PacketCipher, err error)
}

// Errors of keying a connection.
var (
	ErrNoKeys      = errors.New("core: the peer offers no key exchange, and this side requires protection")
	ErrDowngrade   = errors.New("core: the peer agreed to weaker protection than this side requires")
	ErrKeyExchange = errors.New("core: key exchange failed")
)

// initiateKeys starts a dialer's key exchange, if it is to have one.
func (c *Conn) initiateKeys() error {
	if c.cfg.Keys == nil {
		return nil
	}
	c.hs.kx = c.cfg.Keys(true)
	msg, err := c.hs.kx.Initiate()
	if err != nil {
		return errors.Join(ErrKeyExchange, err)
	}
	c.hs.kxMsg = msg
	return nil
}

// offerKeys adds the connection's key-exchange message to a HELLO or
// ACCEPT it sends.
func (c *Conn) offerKeys(h *wire.Handshake) {
	if c.hs.kxMsg == nil {
		return
	}
	mode := c.cfg.Protection
	if c.prot != nil {
		mode = c.prot.mode // the listener answers with what it agreed
	}
	h.Flags |= wire.FlagKeys
	h.Keys = wire.KeyExchange{Protection: mode, Msg: c.hs.kxMsg}
}

// finishKeys keys a dialer from the listener's ACCEPT; an error closes the
// connection.
func (c *Conn) finishKeys(h *wire.Handshake) error {
	if c.hs.kx == nil {
		return nil
	}
	if h.Flags&wire.FlagKeys == 0 {
		return ErrNoKeys
	}
	if h.Keys.Protection < c.cfg.Protection {
		return ErrDowngrade
	}
	seal, open, err := c.hs.kx.Finish(h.Keys.Msg)
	if err != nil {
		return errors.Join(ErrKeyExchange, err)
	}
	c.Protect(h.Keys.Protection, seal, open)
	c.hs.kx = nil
	return nil
}

// respondKeys keys a listener's new connection from the dialer's HELLO.
func (c *Conn) respondKeys(h *wire.Handshake) error {
	if c.cfg.Keys == nil {
		return nil // the dialer learns from our plain ACCEPT that we protect nothing
	}
	if h.Flags&wire.FlagKeys == 0 {
		return ErrNoKeys
	}
	mode := max(c.cfg.Protection, h.Keys.Protection)
	answer, seal, open, err := c.cfg.Keys(false).Respond(h.Keys.Msg)
	if err != nil {
		return errors.Join(ErrKeyExchange, err)
	}
	c.Protect(mode, seal, open)
	c.hs.kxMsg = answer
	return nil
}

// handshakePacket reports whether a packet is a HELLO or ACCEPT, which
// travel unprotected: they carry the key exchange itself.
func handshakePacket(b []byte) bool {
	return len(b) > 1 && (wire.Type(b[1]) == wire.TypeHello || wire.Type(b[1]) == wire.TypeAccept)
}

// sealTransmit protects what poll wrote into buf, for a keyed connection.
// It returns false if buf has no room for the trailer (a driver that
// sized its buffers without TrailerLen): the packet is dropped.
func (c *Conn) sealTransmit(buf []byte, n int) (int, bool) {
	if c.prot == nil || handshakePacket(buf[:n]) {
		return n, true
	}
	if n+len(c.ep.payload)+wire.TrailerLen > cap(buf) {
		c.ep.payload = nil
		return 0, false
	}
	n, c.ep.payload = c.prot.sealInto(buf[:n], n, c.ep.payload)
	return n, true
}
