package core

import (
	"errors"

	"github.com/sdrnet/sdrnet/internal/wire"
)

// Packet protection (internal/wire's protect.go has the format). Keys come
// from the handshake; the core only seals and opens with them, through the
// AEAD interface flynn/noise's cipher suites implement, so no cryptography
// is written here.

// PacketCipher is one direction's AEAD with an explicit nonce, as
// github.com/flynn/noise's Cipher: Encrypt appends ciphertext and tag to
// out; Decrypt appends the plaintext, or fails if anything was altered.
type PacketCipher interface {
	Encrypt(out []byte, n uint64, ad, plaintext []byte) []byte
	Decrypt(out []byte, n uint64, ad, ciphertext []byte) ([]byte, error)
}

// Errors of opening a protected packet.
var (
	ErrUnprotected = errors.New("core: packet not protected as the connection requires")
	ErrForged      = errors.New("core: packet failed authentication")
	ErrReplayed    = errors.New("core: packet number already seen (replay)")
)

// ProtectStats counts what protection rejected.
type ProtectStats struct {
	Unprotected, Forged, Replayed uint64
}

// protection is a connection's keys, packet numbers and replay window.
type protection struct {
	mode       wire.Protection
	seal, open PacketCipher
	next       uint64  // our next packet number
	window     replays // the peer's packet numbers seen
	ad         []byte  // scratch: associated data
	stats      ProtectStats
}

// Protect makes the connection seal every packet it sends and accept only
// packets sealed by its peer, from now on: mode header or full, seal the
// cipher of our direction, open the peer's. The handshake calls it once
// keys are agreed; calling it again replaces the keys.
func (c *Conn) Protect(mode wire.Protection, seal, open PacketCipher) {
	c.use()
	if mode == wire.ProtectNone {
		c.prot = nil
		return
	}
	c.prot = &protection{mode: mode, seal: seal, open: open, ad: make([]byte, 0, wire.ParityLen+8)}
}

// ProtectStats returns what the connection's protection rejected.
func (c *Conn) ProtectStats() ProtectStats {
	if c.connBody == nil || c.prot == nil {
		return ProtectStats{}
	}
	return c.prot.stats
}

// TrailerLen is what protection adds to every packet; a driver's buffers
// hold a full packet plus this.
const TrailerLen = wire.TrailerLen

// sealInto protects the packet buf[:n] followed by payload (which may
// alias an application's message) and returns the protected length. In
// full mode the payload is copied behind the header to be encrypted, and
// nothing is left to gather; buf must hold n + len(payload) + TrailerLen.
func (p *protection) sealInto(buf []byte, n int, payload []byte) (int, []byte) {
	pn := p.next
	p.next++
	wire.SetProtection(buf, p.mode)
	switch p.mode {
	case wire.ProtectFull:
		n += copy(buf[n:cap(buf)], payload)
		p.ad = wire.PutPacketNumber(append(p.ad[:0], buf[:wire.CommonLen]...), pn)
		body := buf[wire.CommonLen:n]
		out := p.seal.Encrypt(body[:0], pn, p.ad, body)
		n = wire.CommonLen + len(out)
		return len(wire.PutPacketNumber(buf[:n], pn)), nil
	default: // header: the tag covers the headers; a payload rides in clear after them
		auth := wire.AuthenticatedLen(buf[:n])
		p.ad = wire.PutPacketNumber(append(p.ad[:0], buf[:auth]...), pn)
		if len(payload) > 0 {
			n += copy(buf[n:cap(buf)], payload) // the trailer must follow the payload
		}
		out := p.seal.Encrypt(buf[n:n], pn, p.ad, nil)
		n += len(out)
		return len(wire.PutPacketNumber(buf[:n], pn)), nil
	}
}

// openInPlace checks a packet received for a protected connection and
// returns it as the decoders take it: trailer removed, body decrypted,
// protection byte cleared.
func (p *protection) openInPlace(b []byte) ([]byte, error) {
	if wire.ProtectionOf(b) != p.mode {
		p.stats.Unprotected++
		return nil, ErrUnprotected
	}
	pn, sealed, ok := wire.PacketNumber(b)
	if !ok {
		p.stats.Forged++
		return nil, ErrForged
	}
	if len(sealed) < wire.CommonLen+wire.TagLen {
		p.stats.Forged++
		return nil, ErrForged
	}
	if !p.window.fresh(pn) {
		p.stats.Replayed++
		return nil, ErrReplayed
	}
	switch p.mode {
	case wire.ProtectFull:
		p.ad = wire.PutPacketNumber(append(p.ad[:0], sealed[:wire.CommonLen]...), pn)
		body := sealed[wire.CommonLen:]
		plain, err := p.open.Decrypt(body[:0], pn, p.ad, body)
		if err != nil {
			p.stats.Forged++
			return nil, ErrForged
		}
		b = sealed[:wire.CommonLen+len(plain)]
	default:
		end := len(sealed) - wire.TagLen
		if end < wire.CommonLen {
			p.stats.Forged++
			return nil, ErrForged
		}
		inClear := sealed[:end]
		p.ad = wire.PutPacketNumber(append(p.ad[:0], inClear[:wire.AuthenticatedLen(inClear)]...), pn)
		if _, err := p.open.Decrypt(nil, pn, p.ad, sealed[end:]); err != nil {
			p.stats.Forged++
			return nil, ErrForged
		}
		b = inClear
	}
	p.window.mark(pn)
	wire.SetProtection(b, wire.ProtectNone)
	return b, nil
}

// replays is a sliding window over the last 1024 packet numbers
// (RFC 4303's anti-replay window, wider for sprayed, reordered packets).
type replays struct {
	top  uint64 // highest number seen, plus one
	bits [16]uint64
}

const replayWindow = 64 * 16

// fresh reports whether pn may be accepted: above the window's top, or in
// the window and not seen.
func (w *replays) fresh(pn uint64) bool {
	if pn >= w.top {
		return true
	}
	if w.top-pn > replayWindow {
		return false // too old to tell: reject
	}
	return w.bits[(pn/64)%16]&(1<<(pn%64)) == 0
}

// mark records pn as seen. Sliding the window up frees the bits of the
// numbers that leave it for the numbers that enter.
func (w *replays) mark(pn uint64) {
	if pn >= w.top {
		if pn-w.top >= replayWindow {
			w.bits = [16]uint64{}
		} else {
			for i := w.top; i <= pn; i++ {
				w.bits[(i/64)%16] &^= 1 << (i % 64)
			}
		}
		w.top = pn + 1
	}
	w.bits[(pn/64)%16] |= 1 << (pn % 64)
}
