package wire_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"slices"
	"testing"

	"github.com/sdrnet/sdrnet/internal/wire"
)

// fill returns n bytes of a non-constant pattern, so a payload that was
// shifted or truncated on its way through the codec does not compare equal.
func fill(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + 1)
	}
	return b
}

// encode runs enc on a buffer with spare room filled with a canary, so the
// tests catch an encoder that needs an exactly-sized buffer or writes past
// the length it reports. The result is capped so parsers cannot see past it.
func encode(tb testing.TB, want int, enc func([]byte) (int, error)) []byte {
	tb.Helper()
	const canary = 0xAA
	buf := bytes.Repeat([]byte{canary}, want+16)
	n, err := enc(buf)
	if err != nil {
		tb.Fatalf("encode: %v", err)
	}
	if n != want {
		tb.Fatalf("encode returned length %d, want %d", n, want)
	}
	for i, c := range buf[n:] {
		if c != canary {
			tb.Fatalf("encode wrote byte %d past the packet end", i)
		}
	}
	return buf[:n:n]
}

func encodeData(tb testing.TB, d wire.Data) []byte {
	return encode(tb, wire.MessageLen+len(d.Payload), d.Encode)
}

func encodeParity(tb testing.TB, p wire.Parity) []byte {
	return encode(tb, wire.ParityLen+len(p.Payload), p.Encode)
}

func encodeAck(tb testing.TB, a wire.Ack, words []uint64) []byte {
	n := wire.AckLen + 8*len(words)
	if a.Flags&wire.FlagPacketBits != 0 {
		n += wire.AckPacketBitsLen
	}
	return encode(tb, n, func(b []byte) (int, error) { return wire.EncodeAck(b, &a, words) })
}

func encodeNack(tb testing.TB, n wire.Nack, ranges []wire.Range) []byte {
	return encode(tb, wire.NackLen+8*len(ranges), func(b []byte) (int, error) { return wire.EncodeNack(b, &n, ranges) })
}

func encodeCTS(tb testing.TB, c wire.CTS) []byte { return encode(tb, wire.CTSLen, c.Encode) }

func encodeClose(tb testing.TB, c wire.Close) []byte {
	return encode(tb, wire.CloseLen+len(c.Reason), c.Encode)
}

// parsers maps each type to its parser with the value dropped, so tests
// that only care about the error can loop over all of them.
var parsers = map[wire.Type]func([]byte) error{
	wire.TypeData:   func(b []byte) error { _, err := wire.ParseData(b); return err },
	wire.TypeParity: func(b []byte) error { _, err := wire.ParseParity(b); return err },
	wire.TypeAck:    func(b []byte) error { _, err := wire.ParseAck(b); return err },
	wire.TypeNack:   func(b []byte) error { _, err := wire.ParseNack(b); return err },
	wire.TypeCTS:    func(b []byte) error { _, err := wire.ParseCTS(b); return err },
	wire.TypeClose:  func(b []byte) error { _, err := wire.ParseClose(b); return err },
	wire.TypeHello:  func(b []byte) error { _, _, err := wire.ParseHandshake(b); return err },
	wire.TypePing:   func(b []byte) error { _, err := wire.ParsePing(b); return err },
}

func encodeHello(tb testing.TB, h wire.Handshake) []byte {
	b := make([]byte, wire.HandshakeLen)
	if _, err := h.Encode(b, wire.TypeHello); err != nil {
		tb.Fatal(err)
	}
	return b
}

func encodePing(tb testing.TB, p wire.Ping) []byte {
	b := make([]byte, wire.PingLen)
	if _, err := p.Encode(b); err != nil {
		tb.Fatal(err)
	}
	return b
}

type sample struct {
	name string
	typ  wire.Type
	pkt  []byte
}

// validPackets returns well-formed packets of every type; the negative
// tests and the fuzz seeds are mutations of these.
func validPackets(tb testing.TB) []sample {
	msg := wire.MsgID{Slot: 3, Gen: 9}
	geo := wire.Geometry{MsgLen: 2500, MTU: 1000, ChunkShift: 1, Scheme: 2}
	pgeo := wire.Geometry{MsgLen: 2500, MTU: 1000, ChunkShift: 1, Scheme: 5, K: 2, M: 1}
	return []sample{
		{"data-first", wire.TypeData, encodeData(tb, wire.Data{Conn: 1, Msg: msg, Packet: 0, Geometry: geo, Payload: fill(1000)})},
		{"data-last", wire.TypeData, encodeData(tb, wire.Data{Conn: 1, Flags: wire.FlagLast, Msg: msg, Packet: 2, Geometry: geo, Payload: fill(500)})},
		{"parity", wire.TypeParity, encodeParity(tb, wire.Parity{Conn: 1, Msg: msg, Sub: 0, Geometry: pgeo, Index: 0, Stripe: 1, Payload: fill(1000)})},
		{"ack-empty", wire.TypeAck, encodeAck(tb, wire.Ack{Conn: 2, Msg: msg, Cum: 5}, nil)},
		{"ack-bitmap", wire.TypeAck, encodeAck(tb, wire.Ack{Conn: 2, Flags: wire.FlagChunkUnits, Msg: msg, Cum: 5, Base: 64}, []uint64{0xF0F0, 1})},
		{"nack-empty", wire.TypeNack, encodeNack(tb, wire.Nack{Conn: 3, Msg: msg, Reason: wire.NackTooLarge}, nil)},
		{"nack-ranges", wire.TypeNack, encodeNack(tb, wire.Nack{Conn: 3, Msg: msg, Reason: wire.NackGap, Unit: wire.UnitChunk}, []wire.Range{{Start: 1, Count: 2}, {Start: 9, Count: 1}})},
		{"cts", wire.TypeCTS, encodeCTS(tb, wire.CTS{Conn: 4, Msg: msg, BufLen: 1 << 20, Credit: 65536})},
		{"close-empty", wire.TypeClose, encodeClose(tb, wire.Close{Conn: 5, Code: 0})},
		{"close-reason", wire.TypeClose, encodeClose(tb, wire.Close{Conn: 5, Code: 42, Reason: []byte("going away")})},
		{"hello", wire.TypeHello, encodeHello(tb, wire.Handshake{Source: 9, Paths: 4, Scheme: 5, K: 32, M: 8, MTU: 4096, ChunkShift: 4, MaxMsgs: 64, Echo: 77})},
		{"ping", wire.TypePing, encodePing(tb, wire.Ping{Conn: 6, Echo: 88})},
	}
}

func checkHeader(t *testing.T, b []byte, typ wire.Type, flags uint8, conn uint64) {
	t.Helper()
	h, err := wire.ParseHeader(b)
	if err != nil {
		t.Fatalf("ParseHeader: %v", err)
	}
	if want := (wire.Header{Type: typ, Flags: flags, Conn: conn}); h != want {
		t.Errorf("ParseHeader = %+v, want %+v", h, want)
	}
}

// checkAlias fails unless p is exactly b[off:] in place: decoders promise
// not to copy payloads.
func checkAlias(t *testing.T, p, b []byte, off int) {
	t.Helper()
	if len(p) != len(b)-off {
		t.Fatalf("payload length %d, want %d", len(p), len(b)-off)
	}
	if len(p) > 0 && &p[0] != &b[off] {
		t.Errorf("payload was copied; want it to alias the input at offset %d", off)
	}
}

func TestDataRoundTrip(t *testing.T) {
	allFlags := wire.FlagLast | wire.FlagRetransmit | wire.FlagECNEcho | wire.FlagChunkUnits | wire.FlagDone
	tests := []struct {
		name string
		d    wire.Data
	}{
		{"single packet", wire.Data{Conn: 1, Flags: wire.FlagLast, Msg: wire.MsgID{Slot: 1, Gen: 1},
			Geometry: wire.Geometry{MsgLen: 5, MTU: 1200}, Payload: fill(5)}},
		{"first of three", wire.Data{Conn: 2, Packet: 0,
			Geometry: wire.Geometry{MsgLen: 2500, MTU: 1000, ChunkShift: 1, Scheme: 1}, Payload: fill(1000)}},
		{"middle retransmit", wire.Data{Conn: 2, Flags: wire.FlagRetransmit | wire.FlagECNEcho, Packet: 1,
			Geometry: wire.Geometry{MsgLen: 2500, MTU: 1000}, Payload: fill(1000)}},
		{"short last", wire.Data{Conn: 2, Flags: wire.FlagLast, Packet: 2,
			Geometry: wire.Geometry{MsgLen: 2500, MTU: 1000}, Payload: fill(500)}},
		{"full last", wire.Data{Conn: 2, Flags: wire.FlagLast, Packet: 1,
			Geometry: wire.Geometry{MsgLen: 2000, MTU: 1000}, Payload: fill(1000)}},
		{"2^32 packets", wire.Data{Conn: 3, Flags: wire.FlagLast, Packet: 1<<32 - 1,
			Geometry: wire.Geometry{MsgLen: 1 << 32, MTU: 1}, Payload: fill(1)}},
		{"extreme fields", wire.Data{Conn: 1<<64 - 1, Flags: allFlags, Msg: wire.MsgID{Slot: 0xFFFF, Gen: 0xFFFF},
			Payload:  fill(65535),
			Geometry: wire.Geometry{MsgLen: 65535, MTU: 65535, ChunkShift: wire.MaxChunkShift, Scheme: 0xFF}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := encodeData(t, tt.d)
			checkHeader(t, b, wire.TypeData, tt.d.Flags, tt.d.Conn)
			got, err := wire.ParseData(b)
			if err != nil {
				t.Fatalf("ParseData: %v", err)
			}
			if !dataEqual(got, tt.d) {
				t.Errorf("ParseData = %+v, want %+v", got, tt.d)
			}
			checkAlias(t, got.Payload, b, wire.MessageLen)
		})
	}
}

func TestParityRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		p    wire.Parity
	}{
		{"basic", wire.Parity{Conn: 1, Msg: wire.MsgID{Slot: 2, Gen: 3}, Sub: 2, Index: 0, Stripe: 1,
			Geometry: wire.Geometry{MsgLen: 10000, MTU: 1000, ChunkShift: 1, Scheme: 3, K: 2, M: 1}, Payload: fill(1000)}},
		{"one packet chunks", wire.Parity{Conn: 1, Flags: wire.FlagRetransmit, Sub: 0,
			Geometry: wire.Geometry{MsgLen: 1, MTU: 100, K: 1, M: 4}, Index: 3, Payload: fill(100)}},
		{"extreme fields", wire.Parity{Conn: 1<<64 - 1, Flags: 0xFF, Msg: wire.MsgID{Slot: 0xFFFF, Gen: 0xFFFF}, Sub: 3,
			Index: 254, Stripe: 1<<16 - 1, Payload: fill(1),
			Geometry: wire.Geometry{MsgLen: 1 << 32, MTU: 1, ChunkShift: wire.MaxChunkShift, Scheme: 0xFF, K: 255, M: 255}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := encodeParity(t, tt.p)
			checkHeader(t, b, wire.TypeParity, tt.p.Flags, tt.p.Conn)
			got, err := wire.ParseParity(b)
			if err != nil {
				t.Fatalf("ParseParity: %v", err)
			}
			if !parityEqual(got, tt.p) {
				t.Errorf("ParseParity = %+v, want %+v", got, tt.p)
			}
			checkAlias(t, got.Payload, b, wire.ParityLen)
		})
	}
}

func TestAckRoundTrip(t *testing.T) {
	full := make([]uint64, wire.MaxAckWords)
	for i := range full {
		full[i] = uint64(i)<<32 | 0xDEADBEEF
	}
	tests := []struct {
		name  string
		a     wire.Ack
		words []uint64
	}{
		{"cumulative only", wire.Ack{Conn: 1, Msg: wire.MsgID{Slot: 1, Gen: 2}, Cum: 17}, nil},
		{"one word", wire.Ack{Conn: 1, Flags: wire.FlagECNEcho, Cum: 3, Base: 4, Delay: 1234}, []uint64{0x8000000000000001}},
		{"max words", wire.Ack{Conn: 1, Flags: wire.FlagChunkUnits | wire.FlagDone, Cum: 1 << 31, Base: 1 << 31}, full},
		{"window ends at 2^32", wire.Ack{Conn: 1<<64 - 1, Flags: 0xFF, Msg: wire.MsgID{Slot: 0xFFFF, Gen: 0xFFFF},
			Cum: 1<<32 - 1, Base: 1<<32 - 64, Delay: 1<<16 - 1, PktChunk: 9, PktBits: 0xF0F0}, []uint64{1<<64 - 1}},
		{"packet bits", wire.Ack{Conn: 2, Flags: wire.FlagChunkUnits | wire.FlagPacketBits, Cum: 3, Base: 0,
			PktChunk: 1<<32 - 1, PktBits: 1<<63 | 5}, []uint64{7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := encodeAck(t, tt.a, tt.words)
			checkHeader(t, b, wire.TypeAck, tt.a.Flags, tt.a.Conn)
			got, err := wire.ParseAck(b)
			if err != nil {
				t.Fatalf("ParseAck: %v", err)
			}
			if got.Conn != tt.a.Conn || got.Flags != tt.a.Flags || got.Msg != tt.a.Msg ||
				got.Cum != tt.a.Cum || got.Base != tt.a.Base || got.Delay != tt.a.Delay {
				t.Errorf("ParseAck = %+v, want %+v", got, tt.a)
			}
			if w := ackWords(got); !slices.Equal(w, tt.words) {
				t.Errorf("bitmap = %x, want %x", w, tt.words)
			}
			// The bitmap has no exported slice, so aliasing shows as a
			// write to the input being visible through Word.
			if len(tt.words) > 0 {
				b[wire.AckLen] ^= 0xFF
				if got.Word(0) == tt.words[0] {
					t.Errorf("bitmap was copied; want it to alias the input")
				}
			}
		})
	}
}

func TestNackRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		n      wire.Nack
		ranges []wire.Range
	}{
		{"no ranges", wire.Nack{Conn: 1, Msg: wire.MsgID{Slot: 1, Gen: 1}, Reason: wire.NackUnknown}, nil},
		{"gap", wire.Nack{Conn: 1, Reason: wire.NackGap}, []wire.Range{{Start: 4, Count: 3}}},
		{"fallback chunks", wire.Nack{Conn: 1, Flags: wire.FlagECNEcho, Reason: wire.NackFallback, Unit: wire.UnitChunk},
			[]wire.Range{{Start: 0, Count: 1}, {Start: 2, Count: 2}, {Start: 10, Count: 100}}},
		{"out of order", wire.Nack{Conn: 1, Reason: wire.NackOutOfOrder}, []wire.Range{{Start: 7, Count: 1}}},
		{"ranges end at 2^32", wire.Nack{Conn: 1<<64 - 1, Flags: 0xFF, Msg: wire.MsgID{Slot: 0xFFFF, Gen: 0xFFFF},
			Reason: wire.NackTooLarge, Unit: wire.UnitChunk},
			[]wire.Range{{Start: 1<<32 - 1, Count: 1}, {Start: 1, Count: 1<<32 - 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := encodeNack(t, tt.n, tt.ranges)
			checkHeader(t, b, wire.TypeNack, tt.n.Flags, tt.n.Conn)
			got, err := wire.ParseNack(b)
			if err != nil {
				t.Fatalf("ParseNack: %v", err)
			}
			if got.Conn != tt.n.Conn || got.Flags != tt.n.Flags || got.Msg != tt.n.Msg ||
				got.Reason != tt.n.Reason || got.Unit != tt.n.Unit {
				t.Errorf("ParseNack = %+v, want %+v", got, tt.n)
			}
			if r := nackRanges(got); !slices.Equal(r, tt.ranges) {
				t.Errorf("ranges = %v, want %v", r, tt.ranges)
			}
		})
	}
}

func TestCTSRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		c    wire.CTS
	}{
		{"basic", wire.CTS{Conn: 1, Msg: wire.MsgID{Slot: 4, Gen: 5}, BufLen: 1 << 20, Credit: 1 << 16}},
		{"zero credit", wire.CTS{Conn: 1, BufLen: 1}},
		{"extreme fields", wire.CTS{Conn: 1<<64 - 1, Flags: 0xFF, Msg: wire.MsgID{Slot: 0xFFFF, Gen: 0xFFFF},
			BufLen: 1<<64 - 1, Credit: 1<<64 - 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := encodeCTS(t, tt.c)
			checkHeader(t, b, wire.TypeCTS, tt.c.Flags, tt.c.Conn)
			got, err := wire.ParseCTS(b)
			if err != nil {
				t.Fatalf("ParseCTS: %v", err)
			}
			if got != tt.c {
				t.Errorf("ParseCTS = %+v, want %+v", got, tt.c)
			}
		})
	}
}

func TestCloseRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		c    wire.Close
	}{
		{"no reason", wire.Close{Conn: 1}},
		{"reason", wire.Close{Conn: 1, Flags: wire.FlagECNEcho, Code: 7, Reason: []byte("idle timeout")}},
		{"max reason", wire.Close{Conn: 1<<64 - 1, Flags: 0xFF, Code: 1<<32 - 1, Reason: fill(wire.MaxCloseReason)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := encodeClose(t, tt.c)
			checkHeader(t, b, wire.TypeClose, tt.c.Flags, tt.c.Conn)
			got, err := wire.ParseClose(b)
			if err != nil {
				t.Fatalf("ParseClose: %v", err)
			}
			if !closeEqual(got, tt.c) {
				t.Errorf("ParseClose = %+v, want %+v", got, tt.c)
			}
			checkAlias(t, got.Reason, b, wire.CloseLen)
		})
	}
}

// Every proper prefix of a valid packet must be reported as truncated, not
// as some other error, so a receiver can tell a short read from garbage.
func TestParseTruncated(t *testing.T) {
	for _, s := range validPackets(t) {
		t.Run(s.name, func(t *testing.T) {
			for n := range len(s.pkt) {
				if err := parsers[s.typ](s.pkt[:n:n]); !errors.Is(err, wire.ErrTruncated) {
					t.Fatalf("length %d of %d: err = %v, want %v", n, len(s.pkt), err, wire.ErrTruncated)
				}
			}
		})
	}
}

func TestParseBadHeader(t *testing.T) {
	tests := []struct {
		name string
		off  int
		val  byte
		want error
	}{
		{"version 0", 0, 0, wire.ErrVersion},
		{"version 1 (36-byte DATA headers)", 0, 1, wire.ErrVersion},
		{"version 2 (ACKs without a delay)", 0, 2, wire.ErrVersion},
		{"version 3 (no held grants)", 0, 3, wire.ErrVersion},
		{"version 5", 0, 5, wire.ErrVersion},
		{"version 255", 0, 255, wire.ErrVersion},
		{"type 0", 1, 0, wire.ErrType},
		{"type 10", 1, 10, wire.ErrType},
		{"type 255", 1, 255, wire.ErrType},
		{"auth tag 1", 3, 1, wire.ErrAuthTag},
		{"auth tag 16", 3, 16, wire.ErrAuthTag},
	}
	for _, s := range validPackets(t) {
		for _, tt := range tests {
			t.Run(s.name+"/"+tt.name, func(t *testing.T) {
				b := bytes.Clone(s.pkt)
				b[tt.off] = tt.val
				if _, err := wire.ParseHeader(b); !errors.Is(err, tt.want) {
					t.Errorf("ParseHeader: err = %v, want %v", err, tt.want)
				}
				if err := parsers[s.typ](b); !errors.Is(err, tt.want) {
					t.Errorf("Parse%v: err = %v, want %v", s.typ, err, tt.want)
				}
			})
		}
	}
}

// A parser handed a well-formed packet of another type must refuse it
// rather than misread its fields.
func TestParseWrongType(t *testing.T) {
	for _, s := range validPackets(t) {
		for typ, parse := range parsers {
			if typ == s.typ {
				continue
			}
			if err := parse(s.pkt); !errors.Is(err, wire.ErrType) {
				t.Errorf("Parse%v(%s): err = %v, want %v", typ, s.name, err, wire.ErrType)
			}
		}
	}
}

func TestParseInconsistent(t *testing.T) {
	geo := wire.Geometry{MsgLen: 2500, MTU: 1000, ChunkShift: 1}
	data := func(packet uint32, flags uint8, g wire.Geometry, payload int) []byte {
		return encodeData(t, wire.Data{Flags: flags, Packet: packet, Geometry: g, Payload: fill(payload)})
	}
	// geo has 3 packets in 2 chunks; with K=1 sub-messages 0 and 1 exist.
	pgeo := geo
	pgeo.K, pgeo.M = 1, 2
	okParity := wire.Parity{Sub: 1, Geometry: pgeo, Index: 1, Stripe: 1, Payload: fill(1000)}
	parity := func(f func(p *wire.Parity)) []byte {
		p := okParity
		f(&p)
		return encodeParity(t, p)
	}
	ack := func(base uint32, words int) []byte {
		return encodeAck(t, wire.Ack{Base: base}, make([]uint64, words))
	}
	nack := func(reason wire.NackReason, unit wire.Unit, r ...wire.Range) []byte {
		return encodeNack(t, wire.Nack{Reason: reason, Unit: unit}, r)
	}
	// patch returns a copy of b with bytes at off replaced, to forge fields
	// the encoders will not write.
	patch := func(b []byte, off int, v ...byte) []byte {
		b = bytes.Clone(b)
		copy(b[off:], v)
		return b
	}
	plus := func(b []byte, n int) []byte { return append(bytes.Clone(b), make([]byte, n)...) }

	okAck := ack(0, 2)
	ack33 := patch(plus(ack(0, wire.MaxAckWords), 8), 24, 0, 33)
	okNack := nack(wire.NackGap, wire.UnitPacket, wire.Range{Start: 1, Count: 1})
	okClose := encodeClose(t, wire.Close{Reason: []byte("x")})
	longClose := patch(encodeClose(t, wire.Close{Reason: fill(255)}), 16, 1, 0)
	longClose = append(longClose, 0)

	// The patched cases are only meaningful if what they patch was valid.
	for _, b := range [][]byte{okAck, okNack, okClose, parity(func(*wire.Parity) {})} {
		h, _ := wire.ParseHeader(b)
		if err := parsers[h.Type](b); err != nil {
			t.Fatalf("base %v packet does not parse: %v", h.Type, err)
		}
	}

	tests := []struct {
		name string
		typ  wire.Type
		in   []byte
		want error
	}{
		{"data packet index = packets", wire.TypeData, data(3, wire.FlagLast, geo, 500), wire.ErrInconsistent},
		{"data packet index max", wire.TypeData, data(1<<32-1, wire.FlagLast, geo, 500), wire.ErrInconsistent},
		{"data payload short", wire.TypeData, data(0, 0, geo, 999), wire.ErrTruncated},
		{"data payload long", wire.TypeData, data(0, 0, geo, 1001), wire.ErrInconsistent},
		{"data short last payload long", wire.TypeData, data(2, wire.FlagLast, geo, 1000), wire.ErrInconsistent},
		{"data FlagLast missing", wire.TypeData, data(2, 0, geo, 500), wire.ErrInconsistent},
		{"data FlagLast early", wire.TypeData, data(1, wire.FlagLast, geo, 1000), wire.ErrInconsistent},
		{"data msglen 0", wire.TypeData, data(0, wire.FlagLast, wire.Geometry{MTU: 1000}, 0), wire.ErrInconsistent},
		{"data mtu 0", wire.TypeData, data(0, wire.FlagLast, wire.Geometry{MsgLen: 10}, 10), wire.ErrInconsistent},
		{"data chunk shift 17", wire.TypeData, data(0, 0, wire.Geometry{MsgLen: 2500, MTU: 1000, ChunkShift: 17}, 1000), wire.ErrInconsistent},
		{"data over 2^32 packets", wire.TypeData, data(0, 0, wire.Geometry{MsgLen: 1<<32 + 1, MTU: 1}, 1), wire.ErrInconsistent},
		// MsgLen+MTU-1 wraps here; the packet count must not come out small.
		{"data msglen near 2^64", wire.TypeData, data(0, 0, wire.Geometry{MsgLen: 1<<64 - 1, MTU: 1000}, 1000), wire.ErrInconsistent},
		{"data trailing byte on last", wire.TypeData, plus(data(2, wire.FlagLast, geo, 500), 1), wire.ErrInconsistent},

		{"parity index = M", wire.TypeParity, parity(func(p *wire.Parity) { p.Index = p.M }), wire.ErrInconsistent},
		{"parity index 255", wire.TypeParity, parity(func(p *wire.Parity) { p.Index = 255 }), wire.ErrInconsistent},
		{"parity K 0", wire.TypeParity, parity(func(p *wire.Parity) { p.K = 0 }), wire.ErrInconsistent},
		{"parity M 0", wire.TypeParity, parity(func(p *wire.Parity) { p.M, p.Index = 0, 0 }), wire.ErrInconsistent},
		{"parity stripe beyond chunk", wire.TypeParity, parity(func(p *wire.Parity) { p.Stripe = 2 }), wire.ErrInconsistent},
		{"parity sub beyond message", wire.TypeParity, parity(func(p *wire.Parity) { p.Sub = 2 }), wire.ErrInconsistent},
		{"parity sub*K beyond message", wire.TypeParity, parity(func(p *wire.Parity) { p.K = 2 }), wire.ErrInconsistent},
		{"parity bad geometry", wire.TypeParity, parity(func(p *wire.Parity) { p.MsgLen = 0 }), wire.ErrInconsistent},
		{"parity payload short", wire.TypeParity, parity(func(p *wire.Parity) { p.Payload = fill(999) }), wire.ErrTruncated},
		{"parity payload long", wire.TypeParity, parity(func(p *wire.Parity) { p.Payload = fill(1001) }), wire.ErrInconsistent},
		{"parity reserved byte", wire.TypeParity, patch(parity(func(*wire.Parity) {}), 35, 1), wire.ErrInconsistent},
		{"parity index reserved byte", wire.TypeParity, patch(parity(func(*wire.Parity) {}), 37, 1), wire.ErrInconsistent},

		{"ack 33 words", wire.TypeAck, ack33, wire.ErrInconsistent},
		{"ack 0xffff words", wire.TypeAck, patch(okAck, 24, 0xFF, 0xFF), wire.ErrInconsistent},
		{"ack window beyond 2^32", wire.TypeAck, ack(1<<32-64, 2), wire.ErrInconsistent},
		{"ack trailing bytes", wire.TypeAck, plus(okAck, 8), wire.ErrInconsistent},
		{"ack trailing partial word", wire.TypeAck, plus(okAck, 1), wire.ErrInconsistent},

		{"nack zero-count range", wire.TypeNack, nack(wire.NackGap, wire.UnitPacket, wire.Range{Start: 1, Count: 1}, wire.Range{Start: 5, Count: 0}), wire.ErrInconsistent},
		{"nack range beyond 2^32", wire.TypeNack, nack(wire.NackGap, wire.UnitPacket, wire.Range{Start: 1<<32 - 1, Count: 2}), wire.ErrInconsistent},
		{"nack reason 0", wire.TypeNack, nack(0, wire.UnitPacket), wire.ErrInconsistent},
		{"nack reason 7", wire.TypeNack, nack(wire.NackDecoded+1, wire.UnitPacket), wire.ErrInconsistent},
		{"nack unit 2", wire.TypeNack, nack(wire.NackGap, wire.UnitChunk+1), wire.ErrInconsistent},
		{"nack trailing bytes", wire.TypeNack, plus(okNack, 8), wire.ErrInconsistent},

		{"cts buflen 0", wire.TypeCTS, encodeCTS(t, wire.CTS{Credit: 10}), wire.ErrInconsistent},
		{"cts trailing byte", wire.TypeCTS, plus(encodeCTS(t, wire.CTS{BufLen: 1}), 1), wire.ErrInconsistent},

		{"close reason 256", wire.TypeClose, longClose, wire.ErrInconsistent},
		{"close reason length 0xffff", wire.TypeClose, patch(okClose, 16, 0xFF, 0xFF), wire.ErrInconsistent},
		{"close trailing byte", wire.TypeClose, plus(okClose, 1), wire.ErrInconsistent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := parsers[tt.typ](tt.in); !errors.Is(err, tt.want) {
				t.Errorf("Parse%v: err = %v, want %v", tt.typ, err, tt.want)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	d := wire.Data{Packet: 0, Geometry: wire.Geometry{MsgLen: 10, MTU: 10}, Flags: wire.FlagLast, Payload: fill(10)}
	p := wire.Parity{Geometry: wire.Geometry{MsgLen: 10, MTU: 10, K: 1, M: 1}, Payload: fill(10)}
	c := wire.CTS{BufLen: 1}
	cl := wire.Close{Reason: []byte("bye")}
	var ack wire.Ack
	var nack wire.Nack
	words := []uint64{1, 2}
	ranges := []wire.Range{{Start: 0, Count: 1}}
	tests := []struct {
		name string
		enc  func([]byte) (int, error)
		size int
		want error
	}{
		{"data one short", d.Encode, wire.MessageLen + 9, wire.ErrBufferSmall},
		{"data header only", d.Encode, wire.MessageLen, wire.ErrBufferSmall},
		{"data nil", d.Encode, 0, wire.ErrBufferSmall},
		{"parity one short", p.Encode, wire.ParityLen + 9, wire.ErrBufferSmall},
		{"parity nil", p.Encode, 0, wire.ErrBufferSmall},
		{"ack one short", func(b []byte) (int, error) { return wire.EncodeAck(b, &ack, words) }, wire.AckLen + 15, wire.ErrBufferSmall},
		{"ack nil", func(b []byte) (int, error) { return wire.EncodeAck(b, &ack, nil) }, 0, wire.ErrBufferSmall},
		{"ack 33 words", func(b []byte) (int, error) { return wire.EncodeAck(b, &ack, make([]uint64, 33)) }, 4096, wire.ErrInconsistent},
		{"nack one short", func(b []byte) (int, error) { return wire.EncodeNack(b, &nack, ranges) }, wire.NackLen + 7, wire.ErrBufferSmall},
		{"nack nil", func(b []byte) (int, error) { return wire.EncodeNack(b, &nack, nil) }, 0, wire.ErrBufferSmall},
		{"nack 2^16 ranges", func(b []byte) (int, error) { return wire.EncodeNack(b, &nack, make([]wire.Range, 1<<16)) },
			wire.NackLen + 8<<16, wire.ErrInconsistent},
		{"cts one short", c.Encode, wire.CTSLen - 1, wire.ErrBufferSmall},
		{"cts nil", c.Encode, 0, wire.ErrBufferSmall},
		{"close one short", cl.Encode, wire.CloseLen + 2, wire.ErrBufferSmall},
		{"close nil", cl.Encode, 0, wire.ErrBufferSmall},
		{"close reason 256", (&wire.Close{Reason: fill(256)}).Encode, 4096, wire.ErrInconsistent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf []byte
			if tt.size > 0 {
				buf = make([]byte, tt.size)
			}
			n, err := tt.enc(buf)
			if !errors.Is(err, tt.want) || n != 0 {
				t.Errorf("encode = %d, %v; want 0, %v", n, err, tt.want)
			}
		})
	}
}

// Decoding sits on the receive path and must survive floods of garbage, so
// neither success nor rejection may allocate.
func TestParseDoesNotAllocate(t *testing.T) {
	var inputs []sample
	for _, s := range validPackets(t) {
		if err := parsers[s.typ](s.pkt); err != nil {
			t.Fatalf("%s does not parse: %v", s.name, err)
		}
		inputs = append(inputs, s, sample{s.name + "-truncated", s.typ, s.pkt[:len(s.pkt)-1]})
	}
	inputs = append(inputs, sample{"garbage", wire.TypeData, []byte{9, 9, 9, 9, 9, 9, 9, 9, 9}})
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			parse := parsers[in.typ]
			if allocs := testing.AllocsPerRun(100, func() { _ = parse(in.pkt) }); allocs != 0 {
				t.Errorf("Parse%v allocates %v times per call", in.typ, allocs)
			}
		})
	}
}

func TestTypeString(t *testing.T) {
	tests := []struct {
		typ  wire.Type
		want string
	}{
		{0, "invalid"}, {wire.TypeData, "DATA"}, {wire.TypeParity, "PARITY"}, {wire.TypeAck, "ACK"},
		{wire.TypeNack, "NACK"}, {wire.TypeCTS, "CTS"}, {wire.TypeClose, "CLOSE"}, {wire.TypeHello, "HELLO"}, {wire.TypePing, "PING"}, {10, "unknown"}, {255, "unknown"},
	}
	for _, tt := range tests {
		if got := tt.typ.String(); got != tt.want {
			t.Errorf("Type(%d).String() = %q, want %q", uint8(tt.typ), got, tt.want)
		}
	}
}

func TestMaxNackRanges(t *testing.T) {
	tests := []struct{ size, want int }{
		{-1, 0}, {0, 0}, {wire.NackLen - 1, 0}, {wire.NackLen, 0}, {wire.NackLen + 7, 0},
		{wire.NackLen + 8, 1}, {1500, (1500 - wire.NackLen) / 8}, {1 << 30, 1<<16 - 1},
	}
	for _, tt := range tests {
		if got := wire.MaxNackRanges(tt.size); got != tt.want {
			t.Errorf("MaxNackRanges(%d) = %d, want %d", tt.size, got, tt.want)
		}
		// The promise is that that many ranges encode within size bytes.
		if tt.want > 0 && wire.NackLen+8*tt.want > tt.size {
			t.Errorf("MaxNackRanges(%d) = %d does not fit", tt.size, tt.want)
		}
	}
}

// TestHighConnID: connection ids are 64 bits on the wire, so an id whose
// upper half is set must survive every packet type intact; a codec that
// still carried 32 bits would hand such a packet to another connection.
func TestHighConnID(t *testing.T) {
	const id = 0xfedcba9876543210
	const source = 0x0123456789abcdef
	msg := wire.MsgID{Slot: 1, Gen: 2}
	geo := wire.Geometry{MsgLen: 100, MTU: 100}
	pgeo := wire.Geometry{MsgLen: 100, MTU: 100, K: 1, M: 1}
	cookie := wire.Cookie{Time: 3, MAC: [wire.CookieMACLen]byte{4}}
	handshake := func(typ wire.Type, h wire.Handshake) func([]byte) (int, error) {
		return func(b []byte) (int, error) { return h.Encode(b, typ) }
	}
	params := wire.Handshake{Source: source, Paths: 1, MTU: 4096, MaxMsgs: 8}
	hello, accept := params, params
	accept.Conn = id
	ack := wire.Ack{Conn: id, Msg: msg, Cum: 1}
	nack := wire.Nack{Conn: id, Msg: msg, Reason: wire.NackGap}
	tests := []struct {
		name string
		enc  func([]byte) (int, error)
		// conns returns the destination and source ids a packet parses to.
		conns             func([]byte) (uint64, uint64, error)
		wantConn, wantSrc uint64
	}{
		{"data", (&wire.Data{Conn: id, Flags: wire.FlagLast, Msg: msg, Geometry: geo, Payload: fill(100)}).Encode,
			func(b []byte) (uint64, uint64, error) { d, err := wire.ParseData(b); return d.Conn, 0, err }, id, 0},
		{"parity", (&wire.Parity{Conn: id, Msg: msg, Geometry: pgeo, Payload: fill(100)}).Encode,
			func(b []byte) (uint64, uint64, error) { p, err := wire.ParseParity(b); return p.Conn, 0, err }, id, 0},
		{"ack", func(b []byte) (int, error) { return wire.EncodeAck(b, &ack, []uint64{1}) },
			func(b []byte) (uint64, uint64, error) { a, err := wire.ParseAck(b); return a.Conn, 0, err }, id, 0},
		{"nack", func(b []byte) (int, error) { return wire.EncodeNack(b, &nack, []wire.Range{{Start: 0, Count: 1}}) },
			func(b []byte) (uint64, uint64, error) { n, err := wire.ParseNack(b); return n.Conn, 0, err }, id, 0},
		{"cts", (&wire.CTS{Conn: id, Msg: msg, BufLen: 1}).Encode,
			func(b []byte) (uint64, uint64, error) { c, err := wire.ParseCTS(b); return c.Conn, 0, err }, id, 0},
		{"close", (&wire.Close{Conn: id, Code: 1, Reason: []byte("bye")}).Encode,
			func(b []byte) (uint64, uint64, error) { c, err := wire.ParseClose(b); return c.Conn, 0, err }, id, 0},
		{"ping", (&wire.Ping{Conn: id, Echo: 5}).Encode,
			func(b []byte) (uint64, uint64, error) { p, err := wire.ParsePing(b); return p.Conn, 0, err }, id, 0},
		{"hello", handshake(wire.TypeHello, hello), parseHandshakeConns, 0, source},
		{"hello with cookie", handshake(wire.TypeHello, wire.Handshake{Flags: wire.FlagCookie, Source: source, Paths: 1,
			MTU: 4096, MaxMsgs: 8, Cookie: cookie}), parseHandshakeConns, 0, source},
		{"accept", handshake(wire.TypeAccept, accept), parseHandshakeConns, id, source},
		{"retry", handshake(wire.TypeAccept, wire.Handshake{Conn: id, Flags: wire.FlagRetry, Cookie: cookie}),
			parseHandshakeConns, id, 0},
		{"refusal", handshake(wire.TypeAccept, wire.Handshake{Conn: id, Flags: wire.FlagRefuse, Echo: 6}),
			parseHandshakeConns, id, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf := make([]byte, 512)
			n, err := tt.enc(buf)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			b := buf[:n]
			if got := binary.BigEndian.Uint64(b[4:]); got != tt.wantConn {
				t.Errorf("bytes 4..11 = %#x, want %#x", got, tt.wantConn)
			}
			if h, err := wire.ParseHeader(b); err != nil || h.Conn != tt.wantConn {
				t.Errorf("ParseHeader = %+v, %v; want conn %#x", h, err, tt.wantConn)
			}
			conn, src, err := tt.conns(b)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if conn != tt.wantConn || src != tt.wantSrc {
				t.Errorf("parsed conn %#x source %#x, want %#x %#x", conn, src, tt.wantConn, tt.wantSrc)
			}
		})
	}
}

func parseHandshakeConns(b []byte) (uint64, uint64, error) {
	h, _, err := wire.ParseHandshake(b)
	return h.Conn, h.Source, err
}

// TestImmediateRoundTrip: a message's immediate value rides in every DATA
// and PARITY header, whole or split from its payload; a packet of a
// message without one carries zero there, and anything else is
// inconsistent.
func TestImmediateRoundTrip(t *testing.T) {
	geo := wire.Geometry{MsgLen: 10000, MTU: 4096, ChunkShift: 4, Scheme: 4, K: 32, M: 8, HasImm: true}
	payload := bytes.Repeat([]byte{7}, 4096)
	d := wire.Data{Conn: 9, Msg: wire.MsgID{Slot: 1, Gen: 2}, Packet: 1, Imm: 0xdeadbeef, Geometry: geo, Payload: payload}
	buf := make([]byte, 9000)
	n, err := d.Encode(buf)
	if err != nil || n != wire.MessageLen+4096 || d.HeaderLen() != wire.MessageLen {
		t.Fatalf("encode: %d, %v", n, err)
	}
	got, err := wire.ParseData(buf[:n])
	if err != nil || got.Geometry != geo || got.Imm != 0xdeadbeef || !bytes.Equal(got.Payload, payload) {
		t.Fatalf("parse: %+v, %v", got.Geometry, err)
	}
	if got, err := wire.ParseDataSplit(buf[:d.HeaderLen()], buf[d.HeaderLen():n]); err != nil || got.Imm != 0xdeadbeef {
		t.Fatalf("split: %v, %v", got.Imm, err)
	}
	if _, err := wire.ParseDataSplit(buf[:wire.MessageLen-4], buf[wire.MessageLen:n]); !errors.Is(err, wire.ErrTruncated) {
		t.Errorf("header cut short: %v, want wire.ErrTruncated", err)
	}
	p := wire.Parity{Conn: 9, Msg: wire.MsgID{Slot: 1}, Sub: 0, Imm: 0xdeadbeef, Geometry: geo, Index: 3, Stripe: 2, Payload: payload}
	n, err = p.Encode(buf)
	if err != nil || n != wire.ParityLen+4096 {
		t.Fatalf("encode parity: %d, %v", n, err)
	}
	gp, err := wire.ParseParity(buf[:n])
	if err != nil || gp.Geometry != geo || gp.Imm != 0xdeadbeef || gp.Index != 3 || gp.Stripe != 2 || !bytes.Equal(gp.Payload, payload) {
		t.Fatalf("parse parity: %+v, %v", gp, err)
	}
	buf[34] = 2 // an unknown header flag
	if _, err := wire.ParseParity(buf[:n]); !errors.Is(err, wire.ErrInconsistent) {
		t.Errorf("unknown header flag: %v, want wire.ErrInconsistent", err)
	}
	// Without an immediate the value is zero, and must be.
	geo.HasImm = false
	d.Geometry = geo
	if n, _ = d.Encode(buf); n != wire.MessageLen+4096 {
		t.Errorf("a message without an immediate takes %d bytes a packet", n)
	}
	if got, err := wire.ParseData(buf[:n]); err != nil || got.Imm != 0 {
		t.Errorf("no immediate: got %#x, %v; want 0, nil", got.Imm, err)
	}
	buf[39] = 1
	if _, err := wire.ParseData(buf[:n]); !errors.Is(err, wire.ErrInconsistent) {
		t.Errorf("immediate bytes set on a message without one: %v, want wire.ErrInconsistent", err)
	}
	p.Geometry = geo
	if n, _ = p.Encode(buf); n != wire.ParityLen+4096 {
		t.Fatalf("parity without an immediate takes %d bytes", n)
	}
	if got, err := wire.ParseParity(buf[:n]); err != nil || got.Imm != 0 {
		t.Errorf("parity, no immediate: got %#x, %v; want 0, nil", got.Imm, err)
	}
	buf[47] = 1
	if _, err := wire.ParseParity(buf[:n]); !errors.Is(err, wire.ErrInconsistent) {
		t.Errorf("immediate bytes set on parity of a message without one: %v, want wire.ErrInconsistent", err)
	}
}

// TestPayloadAligned: every header that precedes a payload is a multiple
// of 8 bytes, so a payload copied out of a received datagram starts
// 8-byte aligned (an unaligned 4 KiB copy costs about twice as much).
func TestPayloadAligned(t *testing.T) {
	for name, n := range map[string]int{"DATA": wire.MessageLen, "PARITY": wire.ParityLen, "max": wire.MaxHeaderLen} {
		if n%8 != 0 {
			t.Errorf("%s header is %d bytes, not a multiple of 8", name, n)
		}
	}
}
