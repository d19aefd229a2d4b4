package wire_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/sdrnet/sdrnet/internal/wire"
)

func TestHandshakeRoundTrip(t *testing.T) {
	tests := []struct {
		typ wire.Type
		h   wire.Handshake
	}{
		{wire.TypeHello, wire.Handshake{Source: 7, Paths: 16, Scheme: 5, K: 32, M: 8, MTU: 4096, ChunkShift: 4, MaxMsgs: 1024, Echo: 1 << 50}},
		{wire.TypeAccept, wire.Handshake{Conn: 7, Source: 9, Paths: 1, Scheme: 3, MTU: 1500, MaxMsgs: 1, Echo: 3}},
		{wire.TypeHello, wire.Handshake{Flags: wire.FlagCookie, Source: 7, Paths: 1, MTU: 4096, MaxMsgs: 8, Echo: 9,
			Cookie: wire.Cookie{Time: 0xdeadbeef, MAC: [16]byte{1, 2, 3, 15: 16}}}},
		{wire.TypeAccept, wire.Handshake{Conn: 7, Flags: wire.FlagRetry, Cookie: wire.Cookie{Time: 1, MAC: [16]byte{15: 0xff}}}},
		{wire.TypeAccept, wire.Handshake{Conn: 7, Flags: wire.FlagRefuse, Echo: 1 << 40}},
	}
	for _, tt := range tests {
		buf := make([]byte, wire.HelloCookieLen+8)
		n, err := tt.h.Encode(buf, tt.typ)
		if err != nil || n != tt.h.Len(tt.typ) {
			t.Fatalf("Encode = %d, %v", n, err)
		}
		got, typ, err := wire.ParseHandshake(buf[:n])
		if err != nil || typ != tt.typ || !reflect.DeepEqual(got, tt.h) {
			t.Fatalf("ParseHandshake = %+v %v %v, want %+v %v", got, typ, err, tt.h, tt.typ)
		}
		for i := range n {
			if _, _, err := wire.ParseHandshake(buf[:i]); err == nil {
				t.Fatalf("truncated to %d bytes: no error", i)
			}
		}
		if _, _, err := wire.ParseHandshake(buf[:n+1]); !errors.Is(err, wire.ErrInconsistent) {
			t.Fatalf("one byte too long: %v", err)
		}
	}
}

// TestHandshakeLengths checks the anti-amplification rule: a Retry, the
// only thing a listener sends to an unverified address, is never longer
// than the smallest Hello.
func TestHandshakeLengths(t *testing.T) {
	hello := wire.Handshake{Source: 7, Paths: 1, MTU: 4096, MaxMsgs: 8}
	retry := wire.Handshake{Conn: 7, Flags: wire.FlagRetry}
	if r, h := retry.Len(wire.TypeAccept), hello.Len(wire.TypeHello); r > h {
		t.Fatalf("Retry is %d bytes, Hello %d", r, h)
	}
	hello.Flags = wire.FlagCookie
	if n := hello.Len(wire.TypeHello); n != wire.HelloCookieLen {
		t.Fatalf("Hello with cookie: %d bytes", n)
	}
	if _, err := hello.Encode(make([]byte, wire.HandshakeLen), wire.TypeHello); !errors.Is(err, wire.ErrBufferSmall) {
		t.Fatalf("Hello with cookie into %d bytes: %v", wire.HandshakeLen, err)
	}
}

func TestHandshakeInconsistent(t *testing.T) {
	ok := wire.Handshake{Source: 7, Paths: 1, MTU: 4096, MaxMsgs: 8}
	tests := []struct {
		name string
		typ  wire.Type
		edit func(*wire.Handshake)
	}{
		{"hello to a connection", wire.TypeHello, func(h *wire.Handshake) { h.Conn = 3 }},
		{"accept to the listener", wire.TypeAccept, func(h *wire.Handshake) {}},
		{"no source", wire.TypeHello, func(h *wire.Handshake) { h.Source = 0 }},
		{"no paths", wire.TypeHello, func(h *wire.Handshake) { h.Paths = 0 }},
		{"no MTU", wire.TypeHello, func(h *wire.Handshake) { h.MTU = 0 }},
		{"chunk shift 17", wire.TypeHello, func(h *wire.Handshake) { h.ChunkShift = 17 }},
		{"K without M", wire.TypeHello, func(h *wire.Handshake) { h.K = 4 }},
		{"no messages", wire.TypeHello, func(h *wire.Handshake) { h.MaxMsgs = 0 }},
		{"unknown hello flag", wire.TypeHello, func(h *wire.Handshake) { h.Flags = 1 << 1 }},
		{"unknown accept flag", wire.TypeAccept, func(h *wire.Handshake) { h.Conn, h.Flags = 3, 1<<3 }},
		{"key exchange of no protection", wire.TypeHello, func(h *wire.Handshake) {
			h.Flags, h.Keys = wire.FlagKeys, wire.KeyExchange{Msg: []byte{1}}
		}},
		{"key exchange of protection 3", wire.TypeHello, func(h *wire.Handshake) {
			h.Flags, h.Keys = wire.FlagKeys, wire.KeyExchange{Protection: 3, Msg: []byte{1}}
		}},
		{"retry and refuse", wire.TypeAccept, func(h *wire.Handshake) { h.Conn, h.Flags = 3, wire.FlagRetry|wire.FlagRefuse }},
		{"retry with a sender", wire.TypeAccept, func(h *wire.Handshake) { h.Conn, h.Flags = 3, wire.FlagRetry }},
		{"retry to the listener", wire.TypeAccept, func(h *wire.Handshake) { h.Flags, h.Source = wire.FlagRetry, 0 }},
		{"refusal with a sender", wire.TypeAccept, func(h *wire.Handshake) { h.Conn, h.Flags = 3, wire.FlagRefuse }},
		{"refusal with parameters", wire.TypeAccept, func(h *wire.Handshake) { h.Conn, h.Flags, h.Source = 3, wire.FlagRefuse, 0 }},
		{"cookie hello to a connection", wire.TypeHello, func(h *wire.Handshake) { h.Conn, h.Flags = 3, wire.FlagCookie }},
	}
	for _, tt := range tests {
		h := ok
		tt.edit(&h)
		buf := make([]byte, wire.HelloCookieLen+3)
		n, err := h.Encode(buf, tt.typ)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := wire.ParseHandshake(buf[:n]); !errors.Is(err, wire.ErrInconsistent) {
			t.Errorf("%s: err = %v, want ErrInconsistent", tt.name, err)
		}
	}
	if _, err := ok.Encode(make([]byte, 40), wire.TypeData); !errors.Is(err, wire.ErrType) {
		t.Errorf("Encode as DATA: %v", err)
	}
}

// TestHandshakeKeys: a key exchange rides in a HELLO (with or without a
// cookie) and in a plain ACCEPT, and nowhere else.
func TestHandshakeKeys(t *testing.T) {
	kx := wire.KeyExchange{Protection: wire.ProtectFull, Msg: bytes.Repeat([]byte{7}, 48)}
	for _, tc := range []struct {
		name string
		typ  wire.Type
		h    wire.Handshake
	}{
		{"hello", wire.TypeHello, wire.Handshake{Flags: wire.FlagKeys, Source: 7, Paths: 1, MTU: 4096, MaxMsgs: 8, Keys: kx}},
		{"hello with cookie", wire.TypeHello, wire.Handshake{Flags: wire.FlagKeys | wire.FlagCookie, Source: 7, Paths: 1,
			MTU: 4096, MaxMsgs: 8, Cookie: wire.Cookie{Time: 9}, Keys: kx}},
		{"accept", wire.TypeAccept, wire.Handshake{Conn: 3, Flags: wire.FlagKeys, Source: 7, Paths: 1, MTU: 4096, MaxMsgs: 8,
			Keys: wire.KeyExchange{Protection: wire.ProtectHeader, Msg: []byte{1, 2, 3}}}},
	} {
		buf := make([]byte, 512)
		n, err := tc.h.Encode(buf, tc.typ)
		if err != nil || n != tc.h.Len(tc.typ) {
			t.Fatalf("%s: Encode = %d, %v", tc.name, n, err)
		}
		got, typ, err := wire.ParseHandshake(buf[:n])
		if err != nil || typ != tc.typ || !reflect.DeepEqual(got, tc.h) {
			t.Fatalf("%s: %+v %v %v, want %+v", tc.name, got, typ, err, tc.h)
		}
		if _, _, err := wire.ParseHandshake(buf[:n-1]); err == nil {
			t.Fatalf("%s: a key exchange cut short was accepted", tc.name)
		}
	}
	retry := wire.Handshake{Conn: 3, Flags: wire.FlagRetry | wire.FlagKeys, Keys: kx}
	if _, err := retry.Encode(make([]byte, 512), wire.TypeAccept); err == nil {
		t.Fatal("a Retry took a key exchange")
	}
}

func TestPingRoundTrip(t *testing.T) {
	p := wire.Ping{Conn: 5, Flags: wire.FlagPong, Echo: 12345}
	buf := make([]byte, wire.PingLen+3)
	n, err := p.Encode(buf)
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.ParsePing(buf[:n])
	if err != nil || got != p {
		t.Fatalf("ParsePing = %+v %v", got, err)
	}
	if _, err := wire.ParsePing(buf[:n+1]); !errors.Is(err, wire.ErrInconsistent) {
		t.Fatalf("trailing byte: %v", err)
	}
}
