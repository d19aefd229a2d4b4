package wire_test

import (
	"errors"
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
	}
	for _, tt := range tests {
		buf := make([]byte, wire.HandshakeLen)
		n, err := tt.h.Encode(buf, tt.typ)
		if err != nil || n != wire.HandshakeLen {
			t.Fatalf("Encode = %d, %v", n, err)
		}
		got, typ, err := wire.ParseHandshake(buf)
		if err != nil || typ != tt.typ || got != tt.h {
			t.Fatalf("ParseHandshake = %+v %v %v, want %+v %v", got, typ, err, tt.h, tt.typ)
		}
		for i := range n {
			if _, _, err := wire.ParseHandshake(buf[:i]); err == nil {
				t.Fatalf("truncated to %d bytes: no error", i)
			}
		}
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
	}
	for _, tt := range tests {
		h := ok
		tt.edit(&h)
		buf := make([]byte, wire.HandshakeLen)
		if _, err := h.Encode(buf, tt.typ); err != nil {
			t.Fatal(err)
		}
		if _, _, err := wire.ParseHandshake(buf); !errors.Is(err, wire.ErrInconsistent) {
			t.Errorf("%s: err = %v, want ErrInconsistent", tt.name, err)
		}
	}
	if _, err := ok.Encode(make([]byte, 40), wire.TypeData); !errors.Is(err, wire.ErrType) {
		t.Errorf("Encode as DATA: %v", err)
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
