package wire_test

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"slices"
	"testing"

	"github.com/sdrnet/sdrnet/internal/wire"
)

// sentinels are the only errors a decoder may return: callers switch on
// them, so a wrapped or ad-hoc error would be a bug.
var sentinels = []error{wire.ErrTruncated, wire.ErrVersion, wire.ErrType,
	wire.ErrInconsistent, wire.ErrAuthTag, wire.ErrBufferSmall}

func checkSentinel(t *testing.T, what string, err error) {
	t.Helper()
	for _, s := range sentinels {
		if err == s {
			return
		}
	}
	t.Fatalf("%s returned %v, which is not a package sentinel", what, err)
}

// roundTrip parses b and, if it is valid, re-encodes the value into a
// buffer of exactly len(b). Every byte of a valid packet is either a field
// or a reserved byte that must be zero, so the re-encoding has to reproduce
// b exactly and parse back to the same value.
func roundTrip[T any](t *testing.T, b []byte, parse func([]byte) (T, error),
	enc func(T, []byte) (int, error), eq func(T, T) bool) error {
	t.Helper()
	v, err := parse(b)
	if err != nil {
		return err
	}
	buf := make([]byte, len(b))
	n, err := enc(v, buf)
	if err != nil {
		t.Fatalf("re-encoding %+v: %v\ninput %x", v, err, b)
	}
	if !bytes.Equal(buf[:n], b) {
		t.Fatalf("re-encoding %+v changed the bytes\nin  %x\nout %x", v, b, buf[:n])
	}
	w, err := parse(buf[:n])
	if err != nil {
		t.Fatalf("re-encoded %+v does not parse: %v", v, err)
	}
	if !eq(v, w) {
		t.Fatalf("re-encoded value parses as %+v, want %+v", w, v)
	}
	return nil
}

var roundTrips = []struct {
	typ   wire.Type
	check func(*testing.T, []byte) error
}{
	{wire.TypeData, func(t *testing.T, b []byte) error {
		return roundTrip(t, b, wire.ParseData, func(d wire.Data, buf []byte) (int, error) { return d.Encode(buf) }, dataEqual)
	}},
	{wire.TypeParity, func(t *testing.T, b []byte) error {
		return roundTrip(t, b, wire.ParseParity, func(p wire.Parity, buf []byte) (int, error) { return p.Encode(buf) }, parityEqual)
	}},
	{wire.TypeAck, func(t *testing.T, b []byte) error {
		return roundTrip(t, b, wire.ParseAck, func(a wire.Ack, buf []byte) (int, error) {
			return wire.EncodeAck(buf, &a, ackWords(a))
		}, ackEqual)
	}},
	{wire.TypeNack, func(t *testing.T, b []byte) error {
		return roundTrip(t, b, wire.ParseNack, func(n wire.Nack, buf []byte) (int, error) {
			return wire.EncodeNack(buf, &n, nackRanges(n))
		}, nackEqual)
	}},
	{wire.TypeCTS, func(t *testing.T, b []byte) error {
		return roundTrip(t, b, wire.ParseCTS, func(c wire.CTS, buf []byte) (int, error) { return c.Encode(buf) },
			func(a, b wire.CTS) bool { return a == b })
	}},
	{wire.TypeClose, func(t *testing.T, b []byte) error {
		return roundTrip(t, b, wire.ParseClose, func(c wire.Close, buf []byte) (int, error) { return c.Encode(buf) }, closeEqual)
	}},
	{wire.TypeHello, func(t *testing.T, b []byte) error { return handshakeRoundTrip(t, b, wire.TypeHello) }},
	{wire.TypeAccept, func(t *testing.T, b []byte) error { return handshakeRoundTrip(t, b, wire.TypeAccept) }},
	{wire.TypePing, func(t *testing.T, b []byte) error {
		return roundTrip(t, b, wire.ParsePing, func(p wire.Ping, buf []byte) (int, error) { return p.Encode(buf) },
			func(a, b wire.Ping) bool { return a == b })
	}},
}

// handshakeRoundTrip parses b as a HELLO or ACCEPT and, if that succeeds,
// checks that it re-encodes to the same bytes.
// Like the other parsers it answers ErrType for any other packet type,
// the other handshake type included.
func handshakeRoundTrip(t *testing.T, b []byte, want wire.Type) error {
	if hdr, err := wire.ParseHeader(b); err == nil && hdr.Type != want {
		return wire.ErrType
	}
	h, typ, err := wire.ParseHandshake(b)
	if err != nil {
		return err
	}
	if typ != want {
		t.Fatalf("ParseHandshake type %v, want %v", typ, want)
	}
	buf := make([]byte, len(b))
	n, err := h.Encode(buf, typ)
	if err != nil || !bytes.Equal(buf[:n], b) {
		t.Fatalf("re-encoding %+v gave %x (%v), want %x", h, buf[:n], err, b)
	}
	return nil
}

func ackWords(a wire.Ack) []uint64 {
	w := make([]uint64, a.Words())
	for i := range w {
		w[i] = a.Word(i)
	}
	return w
}

func nackRanges(n wire.Nack) []wire.Range {
	r := make([]wire.Range, n.Len())
	for i := range r {
		r[i] = n.Range(i)
	}
	return r
}

// The equality helpers compare payloads by content: a decoded payload is
// never nil, an encoder's input may be.

func dataEqual(a, b wire.Data) bool {
	pa, pb := a.Payload, b.Payload
	a.Payload, b.Payload = nil, nil
	return reflect.DeepEqual(a, b) && bytes.Equal(pa, pb)
}

func parityEqual(a, b wire.Parity) bool {
	pa, pb := a.Payload, b.Payload
	a.Payload, b.Payload = nil, nil
	return reflect.DeepEqual(a, b) && bytes.Equal(pa, pb)
}

func ackEqual(a, b wire.Ack) bool {
	return a.Conn == b.Conn && a.Flags == b.Flags && a.Msg == b.Msg && a.Cum == b.Cum &&
		a.Base == b.Base && a.Delay == b.Delay && slices.Equal(ackWords(a), ackWords(b)) &&
		a.PktChunk == b.PktChunk && a.PktBits == b.PktBits
}

func nackEqual(a, b wire.Nack) bool {
	return a.Conn == b.Conn && a.Flags == b.Flags && a.Msg == b.Msg && a.Reason == b.Reason &&
		a.Unit == b.Unit && slices.Equal(nackRanges(a), nackRanges(b))
}

func closeEqual(a, b wire.Close) bool {
	return a.Conn == b.Conn && a.Flags == b.Flags && a.Code == b.Code && bytes.Equal(a.Reason, b.Reason)
}

// FuzzParse hands arbitrary bytes to every parser, not just the one the
// header names, because a receiver may be buggy about dispatch too.
func FuzzParse(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{wire.Version})
	for _, s := range validPackets(f) {
		f.Add(s.pkt)
		f.Add(s.pkt[:len(s.pkt)-1])
		f.Add(s.pkt[:wire.CommonLen])
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h, herr := wire.ParseHeader(b)
		if herr != nil {
			checkSentinel(t, "ParseHeader", herr)
		}
		for _, rt := range roundTrips {
			err := rt.check(t, b)
			switch {
			case herr != nil:
				// Each parser must agree with ParseHeader on a bad header.
				if err != herr {
					t.Fatalf("Parse%v = %v, ParseHeader = %v", rt.typ, err, herr)
				}
			case h.Type != rt.typ:
				if err != wire.ErrType {
					t.Fatalf("Parse%v of a %v packet = %v, want %v", rt.typ, h.Type, err, wire.ErrType)
				}
			case err != nil:
				checkSentinel(t, "Parse"+rt.typ.String(), err)
			}
		}
	})
}

// The oracles restate each packet's validity rules from the format's
// documentation, in arithmetic that cannot overflow, so FuzzEncode can tell
// a decoder that rejects a good packet or accepts a bad one.

func packets(g wire.Geometry) uint64 {
	n := g.MsgLen / uint64(g.MTU)
	if g.MsgLen%uint64(g.MTU) != 0 {
		n++
	}
	return n
}

func geometryValid(g wire.Geometry) bool {
	return g.MsgLen > 0 && g.MTU > 0 && g.ChunkShift <= wire.MaxChunkShift && packets(g) <= 1<<32 &&
		(g.K == 0) == (g.M == 0)
}

func dataValid(d wire.Data) bool {
	if !geometryValid(d.Geometry) || uint64(d.Packet) >= packets(d.Geometry) {
		return false
	}
	last := uint64(d.Packet) == packets(d.Geometry)-1
	want := uint64(d.MTU)
	if last {
		want = d.MsgLen - uint64(d.Packet)*uint64(d.MTU)
	}
	return uint64(len(d.Payload)) == want && last == (d.Flags&wire.FlagLast != 0)
}

func parityValid(p wire.Parity) bool {
	if !geometryValid(p.Geometry) || p.K == 0 || p.M == 0 || p.Index >= p.M || uint64(p.Stripe) >= 1<<p.ChunkShift {
		return false
	}
	chunks := packets(p.Geometry) >> p.ChunkShift
	if packets(p.Geometry)&(1<<p.ChunkShift-1) != 0 {
		chunks++
	}
	return uint64(p.Sub)*uint64(p.K) < chunks && len(p.Payload) == int(p.MTU)
}

func ackValid(a wire.Ack, words []uint64) bool {
	return len(words) <= wire.MaxAckWords && uint64(a.Base)+64*uint64(len(words)) <= 1<<32
}

func nackValid(n wire.Nack, ranges []wire.Range) bool {
	if n.Reason < wire.NackGap || n.Reason > wire.NackDecoded || n.Unit > wire.UnitChunk || len(ranges) >= 1<<16 {
		return false
	}
	for _, r := range ranges {
		if r.Count == 0 || uint64(r.Start)+uint64(r.Count) > 1<<32 {
			return false
		}
	}
	return true
}

// encodeParse encodes v with enc into a roomy buffer, checks the encoder's
// size handling, and parses the result. It reports whether the packet
// parsed, and the parsed value; a rejected encode parses as false.
func encodeParse[T any](t *testing.T, enc func([]byte) (int, error), parse func([]byte) (T, error),
	size int) (T, bool) {
	t.Helper()
	var zero T
	n, err := enc(make([]byte, size+8))
	if err != nil {
		// Encoders only refuse what the format cannot express.
		if err != wire.ErrInconsistent {
			t.Fatalf("encode into %d bytes: %v", size+8, err)
		}
		return zero, false
	}
	if n != size {
		t.Fatalf("encode length %d, want %d", n, size)
	}
	if n2, err := enc(make([]byte, size-1)); err != wire.ErrBufferSmall || n2 != 0 {
		t.Fatalf("encode into %d of %d bytes = %d, %v; want %v", size-1, size, n2, err, wire.ErrBufferSmall)
	}
	buf := make([]byte, size)
	if _, err := enc(buf); err != nil {
		t.Fatalf("encode into exactly %d bytes: %v", size, err)
	}
	v, err := parse(buf)
	if err != nil {
		checkSentinel(t, "parse", err)
		return zero, false
	}
	return v, true
}

// words and ranges turn fuzzed bytes into a bitmap or range list, so the
// fuzzer controls their length and content through one argument.
func words(b []byte) []uint64 {
	w := make([]uint64, len(b)/8)
	for i := range w {
		w[i] = binary.BigEndian.Uint64(b[8*i:])
	}
	return w
}

func ranges(b []byte) []wire.Range {
	r := make([]wire.Range, len(b)/8)
	for i := range r {
		r[i] = wire.Range{Start: binary.BigEndian.Uint32(b[8*i:]), Count: binary.BigEndian.Uint32(b[8*i+4:])}
	}
	return r
}

// FuzzEncode builds a packet from fuzzed field values, which reaches valid
// packets far more often than mutating raw bytes does. Whatever the encoder
// writes, the decoder must either reject it or return exactly the encoded
// fields, and it must accept precisely the packets the oracle calls valid.
//
// Arguments are spread over the packet types: x is the packet, sub-message,
// cumulative point, NACK reason/unit or CLOSE code; w the parity
// K/M/index/stripe or ACK base; y and z the message length and the
// MTU/shift/scheme, or CTS buffer length and credit.
func FuzzEncode(f *testing.F) {
	f.Add(uint8(wire.TypeData), wire.FlagLast, uint64(7), uint32(0x00010002), uint32(2), uint64(0), uint64(2500), uint64(1000), make([]byte, 500))
	f.Add(uint8(wire.TypeData), wire.FlagLast, uint64(7), uint32(0x00010002), uint32(2), uint64(0xdeadbeef<<32|1), uint64(2500), uint64(1000), make([]byte, 500))
	f.Add(uint8(wire.TypeData), wire.FlagLast, uint64(7), uint32(0), uint32(1<<32-1), uint64(0), uint64(1<<32), uint64(1), []byte{1})
	f.Add(uint8(wire.TypeParity), uint8(0), uint64(7), uint32(0), uint32(1), uint64(1<<32|1<<16|2<<8|1), uint64(2500), uint64(1000|1<<16), make([]byte, 1000))
	f.Add(uint8(wire.TypeParity), uint8(0), uint64(7), uint32(0), uint32(2), uint64(1<<32|1<<16|2<<8|1), uint64(2500), uint64(1000|1<<16), make([]byte, 1000))
	f.Add(uint8(wire.TypeAck), wire.FlagDone, uint64(7), uint32(0), uint32(3), uint64(1<<32-64), uint64(0), uint64(0), bytes.Repeat([]byte{0xFF}, 8))
	f.Add(uint8(wire.TypeNack), uint8(0), uint64(7), uint32(0), uint32(wire.NackGap), uint64(0), uint64(0), uint64(0), []byte{0, 0, 0, 1, 0, 0, 0, 2})
	f.Add(uint8(wire.TypeCTS), uint8(0), uint64(7), uint32(0), uint32(0), uint64(0), uint64(1<<20), uint64(1<<16), []byte(nil))
	f.Add(uint8(wire.TypeCTS), uint8(0), uint64(0xfedcba9876543210), uint32(0), uint32(0), uint64(0), uint64(1), uint64(0), []byte(nil))
	f.Add(uint8(wire.TypeClose), uint8(0), uint64(7), uint32(0), uint32(42), uint64(0), uint64(0), uint64(0), []byte("bye"))

	f.Fuzz(func(t *testing.T, typ, flags uint8, conn uint64, msg, x uint32, w, y, z uint64, payload []byte) {
		m := wire.MsgID{Slot: uint16(msg >> 16), Gen: uint16(msg)}
		g := wire.Geometry{MsgLen: y, MTU: uint16(z), ChunkShift: uint8(z >> 16), Scheme: uint8(z >> 24)}
		// Every byte selects some type; 1..6 keep their own meaning so the
		// seeds read naturally.
		switch wire.Type((typ-1)%6 + 1) {
		case wire.TypeData:
			// w: bit 0 says the message has an immediate value, bits
			// 32..63 are it; without the flag it is sent as zero.
			g.HasImm = w&1 != 0
			in := wire.Data{Conn: conn, Flags: flags, Msg: m, Packet: x, Imm: uint32(w >> 32), Geometry: g, Payload: payload}
			got, ok := encodeParse(t, in.Encode, wire.ParseData, wire.MessageLen+len(payload))
			if ok != dataValid(in) {
				t.Fatalf("ParseData accepted=%v, oracle says valid=%v for %+v", ok, !ok, in)
			}
			if !g.HasImm {
				in.Imm = 0
			}
			if ok && !dataEqual(got, in) {
				t.Fatalf("ParseData = %+v, want %+v", got, in)
			}
		case wire.TypeParity:
			// z: bit 32 flags an immediate value, bits 33..63 are it.
			g.K, g.M, g.HasImm = uint8(w), uint8(w>>8), z>>32&1 != 0
			in := wire.Parity{Conn: conn, Flags: flags, Msg: m, Sub: x, Imm: uint32(z >> 33), Geometry: g,
				Index: uint8(w >> 16), Stripe: uint32(w >> 32), Payload: payload}
			got, ok := encodeParse(t, in.Encode, wire.ParseParity, wire.ParityLen+len(payload))
			if ok != parityValid(in) {
				t.Fatalf("ParseParity accepted=%v, oracle says valid=%v for %+v", ok, !ok, in)
			}
			if !g.HasImm {
				in.Imm = 0
			}
			if ok && !parityEqual(got, in) {
				t.Fatalf("ParseParity = %+v, want %+v", got, in)
			}
		case wire.TypeAck:
			in, ws := wire.Ack{Conn: conn, Flags: flags, Msg: m, Cum: x, Base: uint32(w), Delay: uint16(w >> 32)}, words(payload)
			size := wire.AckLen + 8*len(ws)
			if flags&wire.FlagPacketBits != 0 {
				in.PktChunk, in.PktBits = uint32(y), z
				size += wire.AckPacketBitsLen
			}
			got, ok := encodeParse(t, func(b []byte) (int, error) { return wire.EncodeAck(b, &in, ws) },
				wire.ParseAck, size)
			if ok != ackValid(in, ws) {
				t.Fatalf("ParseAck accepted=%v, oracle says valid=%v for %+v %x", ok, !ok, in, ws)
			}
			if ok && (got.Conn != in.Conn || got.Flags != in.Flags || got.Msg != in.Msg || got.Cum != in.Cum ||
				got.Base != in.Base || got.Delay != in.Delay || got.PktChunk != in.PktChunk || got.PktBits != in.PktBits ||
				!slices.Equal(ackWords(got), ws)) {
				t.Fatalf("ParseAck = %+v %x, want %+v %x", got, ackWords(got), in, ws)
			}
		case wire.TypeNack:
			in := wire.Nack{Conn: conn, Flags: flags, Msg: m, Reason: wire.NackReason(x), Unit: wire.Unit(x >> 8)}
			rs := ranges(payload)
			got, ok := encodeParse(t, func(b []byte) (int, error) { return wire.EncodeNack(b, &in, rs) },
				wire.ParseNack, wire.NackLen+8*len(rs))
			if ok != nackValid(in, rs) {
				t.Fatalf("ParseNack accepted=%v, oracle says valid=%v for %+v %v", ok, !ok, in, rs)
			}
			if ok && (got.Conn != in.Conn || got.Flags != in.Flags || got.Msg != in.Msg || got.Reason != in.Reason ||
				got.Unit != in.Unit || !slices.Equal(nackRanges(got), rs)) {
				t.Fatalf("ParseNack = %+v %v, want %+v %v", got, nackRanges(got), in, rs)
			}
		case wire.TypeCTS:
			in := wire.CTS{Conn: conn, Flags: flags, Msg: m, BufLen: y, Credit: z}
			got, ok := encodeParse(t, in.Encode, wire.ParseCTS, wire.CTSLen)
			if ok != (in.BufLen != 0) {
				t.Fatalf("ParseCTS accepted=%v for %+v", ok, in)
			}
			if ok && got != in {
				t.Fatalf("ParseCTS = %+v, want %+v", got, in)
			}
		case wire.TypeClose:
			in := wire.Close{Conn: conn, Flags: flags, Code: x, Reason: payload}
			got, ok := encodeParse(t, in.Encode, wire.ParseClose, wire.CloseLen+len(payload))
			if ok != (len(payload) <= wire.MaxCloseReason) {
				t.Fatalf("ParseClose accepted=%v for a %d-byte reason", ok, len(payload))
			}
			if ok && !closeEqual(got, in) {
				t.Fatalf("ParseClose = %+v, want %+v", got, in)
			}
		}
	})
}

// FuzzStreamFrame: a stream frame decoder never panics, and what it
// accepts encodes back to the same bytes.
func FuzzStreamFrame(f *testing.F) {
	for _, fr := range []wire.StreamFrame{
		{Kind: wire.StreamData, Offset: 1 << 20, Declared: 5 << 20},
		{Kind: wire.StreamEnd, Offset: 77, Declared: 77, Digest: [32]byte{1, 2, 3}},
		{Kind: wire.StreamVerdict, Offset: 77, Verdict: wire.VerdictDigest},
	} {
		b := make([]byte, wire.StreamEndLen)
		n, _ := fr.EncodeHeader(b)
		f.Add(append(b[:n:n], "payload"[:min(7, int(fr.Kind-1)*7)]...))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, payload, err := wire.ParseStreamFrame(b)
		if err != nil {
			return
		}
		out := make([]byte, len(b))
		n, err := fr.EncodeHeader(out)
		if err != nil {
			t.Fatalf("EncodeHeader(%+v): %v", fr, err)
		}
		copy(out[n:], payload)
		if !bytes.Equal(out[:n+len(payload)], b) {
			t.Fatalf("re-encoded %x, decoded from %x", out, b)
		}
	})
}

// FuzzHandshake builds a HELLO or ACCEPT from fuzzed fields. The decoder
// must accept exactly the handshakes the format allows - a sender and a
// parameter in every field, a chunk of at most 2^MaxChunkShift packets, K
// and M both set or both zero, and the listener's connection id 0 on a
// HELLO and only there; on a HELLO only FlagCookie, which appends the
// cookie; on an ACCEPT FlagRetry (no sender, only a cookie) or FlagRefuse
// (no sender, no parameters), not both - and return the fields it was
// given; a truncated or over-long copy is rejected.
func FuzzHandshake(f *testing.F) {
	f.Add(true, uint8(0), uint64(0), uint64(7), uint8(16), uint8(2), uint8(32), uint8(8), uint16(4096), uint8(4), uint32(1024), uint64(12345), uint32(0), uint64(0), uint8(0), []byte(nil))
	f.Add(false, uint8(0), uint64(0xfedcba9876543210), uint64(1<<63|9), uint8(1), uint8(0), uint8(0), uint8(0), uint16(64), uint8(0), uint32(1), uint64(0), uint32(0), uint64(0), uint8(0), []byte(nil))
	f.Add(false, uint8(0), uint64(7), uint64(9), uint8(1), uint8(0), uint8(0), uint8(0), uint16(64), uint8(0), uint32(1), uint64(0), uint32(0), uint64(0), uint8(0), []byte(nil))
	f.Add(true, uint8(0xff), uint64(1), uint64(0), uint8(0), uint8(0), uint8(1), uint8(0), uint16(0), uint8(255), uint32(0), uint64(1<<63), uint32(1), uint64(2), uint8(0), []byte(nil))
	f.Add(true, wire.FlagCookie, uint64(0), uint64(7), uint8(1), uint8(0), uint8(0), uint8(0), uint16(4096), uint8(0), uint32(8), uint64(5), uint32(99), uint64(0xfeed), uint8(0), []byte(nil))
	f.Add(false, wire.FlagRetry, uint64(7), uint64(0), uint8(0), uint8(0), uint8(0), uint8(0), uint16(0), uint8(0), uint32(0), uint64(0), uint32(99), uint64(0xfeed), uint8(0), []byte(nil))
	f.Add(false, wire.FlagRefuse, uint64(7), uint64(0), uint8(0), uint8(0), uint8(0), uint8(0), uint16(0), uint8(0), uint32(0), uint64(5), uint32(0), uint64(0), uint8(0), []byte(nil))
	f.Add(false, wire.FlagRetry|wire.FlagRefuse, uint64(7), uint64(0), uint8(0), uint8(0), uint8(0), uint8(0), uint16(0), uint8(0), uint32(0), uint64(5), uint32(0), uint64(0), uint8(0), []byte(nil))
	f.Add(true, wire.FlagKeys, uint64(0), uint64(7), uint8(1), uint8(0), uint8(0), uint8(0), uint16(4096), uint8(4), uint32(16), uint64(1), uint32(0), uint64(0), uint8(wire.ProtectFull), make([]byte, 32))
	f.Add(false, wire.FlagKeys, uint64(7), uint64(9), uint8(1), uint8(0), uint8(0), uint8(0), uint16(4096), uint8(4), uint32(16), uint64(1), uint32(0), uint64(0), uint8(wire.ProtectHeader), make([]byte, 48))
	f.Fuzz(func(t *testing.T, hello bool, flags uint8, conn, source uint64, paths, scheme, k, m uint8,
		mtu uint16, shift uint8, maxMsgs uint32, echo uint64, ctime uint32, mac uint64, kprot uint8, kmsg []byte) {
		typ := wire.TypeAccept
		if hello {
			typ = wire.TypeHello
		}
		in := wire.Handshake{Conn: conn, Flags: flags, Source: source, Paths: paths, Scheme: scheme, K: k, M: m,
			MTU: mtu, ChunkShift: shift, MaxMsgs: maxMsgs, Echo: echo,
			Cookie: wire.Cookie{Time: ctime}}
		binary.BigEndian.PutUint64(in.Cookie.MAC[3:], mac)
		keys := flags&wire.FlagKeys != 0
		if keys {
			in.Keys = wire.KeyExchange{Protection: wire.Protection(kprot), Msg: kmsg}
		}
		plain := flags &^ wire.FlagKeys
		keysEncodable := !keys || (len(kmsg) >= 1 && len(kmsg) <= wire.MaxKeyMsg && (hello || plain&(wire.FlagRetry|wire.FlagRefuse) == 0))
		keysValid := !keys || (keysEncodable && kprot >= 1 && kprot <= 2)
		params := source != 0 && paths != 0 && mtu != 0 && shift <= wire.MaxChunkShift && maxMsgs != 0 && (k == 0) == (m == 0)
		want := in // what the decoder must return when valid
		var valid bool
		switch {
		case hello:
			valid = flags&^(wire.FlagCookie|wire.FlagKeys) == 0 && conn == 0 && params && keysValid
			if flags&wire.FlagCookie == 0 {
				want.Cookie = wire.Cookie{}
			}
		case plain == 0:
			valid = conn != 0 && params && keysValid
			want.Cookie = wire.Cookie{}
		case flags == wire.FlagRetry:
			valid = conn != 0 && source == 0
			want = wire.Handshake{Conn: conn, Flags: flags, Cookie: in.Cookie}
		case flags == wire.FlagRefuse:
			valid = conn != 0 && source == 0 && paths == 0 && scheme == 0 && k == 0 && m == 0 && mtu == 0 && shift == 0 && maxMsgs == 0
			want.Cookie = wire.Cookie{}
		}
		buf := make([]byte, wire.HelloCookieLen+2+wire.MaxKeyMsg+1)
		n, err := in.Encode(buf, typ)
		if !keysEncodable {
			if err == nil {
				t.Fatalf("Encode(%+v, %v) took an impossible key exchange", in, typ)
			}
			return
		}
		if err != nil || n != in.Len(typ) {
			t.Fatalf("Encode(%+v, %v) = %d, %v", in, typ, n, err)
		}
		got, gotType, err := wire.ParseHandshake(buf[:n])
		if (err == nil) != valid {
			t.Fatalf("ParseHandshake of %+v (%v): error %v, oracle says valid=%v", in, typ, err, valid)
		}
		if err != nil {
			checkSentinel(t, "ParseHandshake", err)
		} else if !reflect.DeepEqual(got, want) || gotType != typ {
			t.Fatalf("ParseHandshake = %+v %v, want %+v %v", got, gotType, want, typ)
		}
		for _, l := range []int{n - 1, n + 1} {
			if _, _, err := wire.ParseHandshake(buf[:l]); err == nil {
				t.Fatalf("ParseHandshake accepted a %d-byte handshake", l)
			}
		}
	})
}
