package core

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"testing"

	"github.com/flynn/noise"
	"golang.org/x/crypto/chacha20poly1305"

	"github.com/sdrnet/sdrnet/internal/wire"
)

// cipherPair returns the two directions' ciphers of a connection (fixed
// keys here: the test is about framing).
func cipherPair(t testing.TB) (PacketCipher, PacketCipher) {
	t.Helper()
	var k1, k2 [32]byte
	k1[0], k2[0] = 1, 2
	a, err := chacha20poly1305.New(k1[:])
	if err != nil {
		t.Fatal(err)
	}
	b, err := chacha20poly1305.New(k2[:])
	if err != nil {
		t.Fatal(err)
	}
	return NewAEADCipher(a), NewAEADCipher(b)
}

// TestAEADCipherMatchesNoise: our allocation-free adapter seals exactly
// as flynn/noise's own cipher does with the same key and nonce.
func TestAEADCipherMatchesNoise(t *testing.T) {
	var key [32]byte
	key[3] = 7
	theirs := noise.NewCipherSuite(noise.DH25519, noise.CipherChaChaPoly, noise.HashBLAKE2s).Cipher(key)
	a, _ := chacha20poly1305.New(key[:])
	ours := NewAEADCipher(a)
	for _, n := range []uint64{0, 1, 1 << 40} {
		x := theirs.Encrypt(nil, n, []byte("ad"), []byte("payload"))
		y := ours.Encrypt(nil, n, []byte("ad"), []byte("payload"))
		if !bytes.Equal(x, y) {
			t.Fatalf("nonce %d: noise %x, ours %x", n, x, y)
		}
		if p, err := ours.Decrypt(nil, n, []byte("ad"), x); err != nil || string(p) != "payload" {
			t.Fatalf("nonce %d: %q, %v", n, p, err)
		}
	}
}

// gcmPair is cipherPair with AES-GCM, the AEAD package sdr's Noise
// handshake keys.
func gcmPair(t testing.TB) (PacketCipher, PacketCipher) {
	t.Helper()
	mk := func(k byte) PacketCipher {
		var key [32]byte
		key[0] = k
		block, err := aes.NewCipher(key[:])
		if err != nil {
			t.Fatal(err)
		}
		g, err := cipher.NewGCM(block)
		if err != nil {
			t.Fatal(err)
		}
		return NewAEADCipher(g)
	}
	return mk(1), mk(2)
}

// protectedPair returns a sender's and a receiver's protection that share
// keys.
func protectedPair(t testing.TB, mode wire.Protection) (*protection, *protection) {
	a2b, b2a := cipherPair(t)
	return protectedWith(mode, a2b, b2a)
}

func protectedWith(mode wire.Protection, a2b, b2a PacketCipher) (*protection, *protection) {
	a := &Conn{connBody: new(connBody)}
	a.Protect(mode, a2b, b2a)
	b := &Conn{connBody: new(connBody)}
	b.Protect(mode, b2a, a2b)
	return a.prot, b.prot
}

// samplePackets are one packet of each kind: header and payload.
func samplePackets(t testing.TB) []struct {
	name    string
	hdr     []byte
	payload []byte
} {
	t.Helper()
	payload := bytes.Repeat([]byte{0xAB}, 1000)
	data := make([]byte, wire.MessageLen)
	d := wire.Data{Conn: 9, Msg: wire.MsgID{Slot: 1, Gen: 2}, Packet: 0,
		Geometry: wire.Geometry{MsgLen: 1000, MTU: 4096, Scheme: 2}, Payload: payload}
	d.EncodeHeader(data)
	ack := make([]byte, 64)
	n, _ := wire.EncodeAck(ack, &wire.Ack{Conn: 9, Flags: wire.FlagChunkUnits, Cum: 3}, []uint64{7})
	cts := make([]byte, wire.CTSLen)
	c := wire.CTS{Conn: 9, BufLen: 1 << 20, Credit: 1 << 20}
	_, _ = c.Encode(cts)
	cl := make([]byte, 64)
	m, _ := (&wire.Close{Conn: 9, Code: 0}).Encode(cl)
	return []struct {
		name    string
		hdr     []byte
		payload []byte
	}{
		{"DATA", data, payload}, {"ACK", ack[:n], nil}, {"CTS", cts, nil}, {"CLOSE", cl[:m], nil},
	}
}

func TestProtectRoundTrip(t *testing.T) {
	for _, mode := range []wire.Protection{wire.ProtectHeader, wire.ProtectFull} {
		for _, pk := range samplePackets(t) {
			snd, rcv := protectedPair(t, mode)
			buf := make([]byte, len(pk.hdr), 8192)
			copy(buf, pk.hdr)
			n, rest := snd.sealInto(buf, len(pk.hdr), pk.payload)
			if rest != nil || n != len(pk.hdr)+len(pk.payload)+wire.TrailerLen {
				t.Fatalf("%v %s: sealed %d bytes, %d left to gather", mode, pk.name, n, len(rest))
			}
			want := append(append([]byte(nil), pk.hdr...), pk.payload...)
			if mode == wire.ProtectFull && bytes.Contains(buf[:n], pk.payload) && len(pk.payload) > 0 {
				t.Fatalf("%v %s: payload sent in clear", mode, pk.name)
			}
			got, err := rcv.openInPlace(buf[:n])
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%v %s: opened %x, %v; want %x", mode, pk.name, got, err, want)
			}
		}
	}
}

// TestProtectRejects alters, replays, strips and downgrades sealed
// packets: each is rejected and counted, and what header mode leaves
// unauthenticated (a data packet's payload) is said so by the test.
func TestProtectRejects(t *testing.T) {
	for _, mode := range []wire.Protection{wire.ProtectHeader, wire.ProtectFull} {
		for _, pk := range samplePackets(t) {
			seal := func(snd *protection) []byte {
				buf := make([]byte, len(pk.hdr), 8192)
				copy(buf, pk.hdr)
				n, _ := snd.sealInto(buf, len(pk.hdr), pk.payload)
				return buf[:n]
			}
			for _, tc := range []struct {
				name  string
				alter func(b []byte) []byte
				want  error
			}{
				{"header bit", func(b []byte) []byte { b[5] ^= 1; return b }, ErrForged},
				{"flags", func(b []byte) []byte { b[2] ^= wire.FlagRetransmit; return b }, ErrForged},
				{"last header byte", func(b []byte) []byte { b[len(pk.hdr)-1] ^= 0x80; return b }, ErrForged},
				{"tag", func(b []byte) []byte { b[len(b)-9] ^= 1; return b }, ErrForged},
				{"packet number", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, ErrForged},
				{"truncated", func(b []byte) []byte { return b[:len(b)-30] }, ErrForged},
				{"stripped", func(b []byte) []byte { wire.SetProtection(b, wire.ProtectNone); return b }, ErrUnprotected},
				{"downgraded", func(b []byte) []byte { wire.SetProtection(b, 3-mode); return b }, ErrUnprotected},
			} {
				snd, rcv := protectedPair(t, mode)
				if _, err := rcv.openInPlace(tc.alter(seal(snd))); !errors.Is(err, tc.want) {
					t.Errorf("%v %s %s: %v, want %v", mode, pk.name, tc.name, err, tc.want)
				}
			}
			snd, rcv := protectedPair(t, mode)
			b := seal(snd)
			replay := append([]byte(nil), b...)
			if _, err := rcv.openInPlace(b); err != nil {
				t.Fatal(err)
			}
			if _, err := rcv.openInPlace(replay); !errors.Is(err, ErrReplayed) {
				t.Errorf("%v %s replayed: %v", mode, pk.name, err)
			}
			if st := rcv.stats; st.Replayed != 1 {
				t.Errorf("%v %s: stats %+v", mode, pk.name, st)
			}
			if len(pk.payload) > 0 {
				snd, rcv := protectedPair(t, mode)
				b := seal(snd)
				b[len(pk.hdr)] ^= 1 // the payload's first byte
				_, err := rcv.openInPlace(b)
				if mode == wire.ProtectFull && !errors.Is(err, ErrForged) {
					t.Errorf("full %s: altered payload: %v", pk.name, err)
				}
				if mode == wire.ProtectHeader && err != nil {
					t.Errorf("header %s: header mode does not cover payloads, yet: %v", pk.name, err)
				}
			}
		}
	}
}

func TestReplayWindow(t *testing.T) {
	var w replays
	accept := func(pn uint64) bool {
		if !w.fresh(pn) {
			return false
		}
		w.mark(pn)
		return true
	}
	for _, tc := range []struct {
		pn   uint64
		want bool
	}{
		{0, true}, {0, false}, {5, true}, {3, true}, {3, false}, {4, true},
		{2000, true}, {2000 - replayWindow + 1, true}, {2000 - replayWindow, false}, {1500, true}, {1500, false},
		{1 << 40, true}, {1<<40 - 1, true}, {1<<40 - 1, false}, {1999, false},
	} {
		if got := accept(tc.pn); got != tc.want {
			t.Errorf("packet %d: accepted %v, want %v", tc.pn, got, tc.want)
		}
	}
}

func TestProtectAllocs(t *testing.T) {
	for _, mode := range []wire.Protection{wire.ProtectHeader, wire.ProtectFull} {
		snd, rcv := protectedPair(t, mode)
		pk := samplePackets(t)[0]
		buf := make([]byte, 0, 8192)
		allocs := testing.AllocsPerRun(1000, func() {
			b := append(buf[:0], pk.hdr...)
			n, _ := snd.sealInto(b, len(pk.hdr), pk.payload)
			if _, err := rcv.openInPlace(b[:n]); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per packet", mode, allocs)
		}
	}
}

// BenchmarkProtect is the per-packet cost of each mode, sealing and
// opening one 4 KiB data packet with AES-GCM (what sdr keys).
func BenchmarkProtect(b *testing.B) {
	for _, mode := range []wire.Protection{wire.ProtectNone, wire.ProtectHeader, wire.ProtectFull} {
		b.Run(mode.String(), func(b *testing.B) {
			pk := samplePackets(b)[0]
			pk.payload = bytes.Repeat([]byte{1}, 4096)
			buf := make([]byte, 0, 8192)
			b.SetBytes(int64(len(pk.payload)))
			b.ReportAllocs()
			if mode == wire.ProtectNone {
				for b.Loop() {
					_ = append(append(buf[:0], pk.hdr...), pk.payload...)
				}
				return
			}
			a2b, b2a := gcmPair(b)
			snd, rcv := protectedWith(mode, a2b, b2a)
			for b.Loop() {
				bb := append(buf[:0], pk.hdr...)
				n, _ := snd.sealInto(bb, len(pk.hdr), pk.payload)
				if _, err := rcv.openInPlace(bb[:n]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
