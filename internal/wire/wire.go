// Package wire defines sdrnet's packet formats: how each packet type is laid
// out on the wire, encoded into a caller-owned buffer, and decoded without
// copying the payload.
//
// Every packet starts with an 8-byte common header:
//
//	0      version (1)
//	1      type (DATA, PARITY, ACK, NACK, CTS, CLOSE)
//	2      flags (per type)
//	3      authentication tag length in bytes (0 in version 1; a later
//	       version appends an AEAD tag of this length after the body)
//	4..7   destination connection id, big endian
//
// All multi-byte integers are big endian. Decoders never panic: truncated,
// oversized, unknown-version or inconsistent input is an error value.
package wire

import (
	"encoding/binary"
	"errors"
)

// Version is the only protocol version this package speaks.
const Version = 1

// Type is a packet type.
type Type uint8

// Packet types.
const (
	TypeData   Type = 1
	TypeParity Type = 2
	TypeAck    Type = 3
	TypeNack   Type = 4
	TypeCTS    Type = 5
	TypeClose  Type = 6
)

var typeNames = [...]string{"invalid", "DATA", "PARITY", "ACK", "NACK", "CTS", "CLOSE"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "unknown"
}

// Flags, interpreted per packet type.
const (
	// FlagLast marks the last packet of a message (DATA).
	FlagLast uint8 = 1 << 0
	// FlagRetransmit marks a retransmitted DATA packet.
	FlagRetransmit uint8 = 1 << 1
	// FlagECNEcho tells the peer that a packet it sent arrived CE-marked.
	FlagECNEcho uint8 = 1 << 2
	// FlagChunkUnits says an ACK's cumulative point and bitmap count chunks,
	// not packets.
	FlagChunkUnits uint8 = 1 << 3
	// FlagDone says the whole message arrived (ACK).
	FlagDone uint8 = 1 << 4
)

// Header lengths.
const (
	CommonLen = 8
	// MessageLen is the length of the DATA header, which PARITY extends.
	MessageLen = 32
	ParityLen  = 40
	AckLen     = 24
	NackLen    = 16
	CTSLen     = 28
	CloseLen   = 14
	// MaxAckWords bounds an ACK's SACK bitmap: 32 words, 2048 units.
	MaxAckWords = 32
	// MaxCloseReason bounds the reason text of a CLOSE.
	MaxCloseReason = 255
)

// Decoding errors. They are values, so a flood of garbage costs no
// allocation.
var (
	ErrTruncated    = errors.New("wire: packet truncated")
	ErrVersion      = errors.New("wire: unknown protocol version")
	ErrType         = errors.New("wire: unknown packet type")
	ErrInconsistent = errors.New("wire: inconsistent header fields")
	ErrAuthTag      = errors.New("wire: authentication tag present but not supported in version 1")
	ErrBufferSmall  = errors.New("wire: buffer too small")
)

var be = binary.BigEndian

// Header is the common header of every packet.
type Header struct {
	Type  Type
	Flags uint8
	Conn  uint32 // destination connection id
}

// ParseHeader decodes the common header and checks the version and type.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < CommonLen {
		return Header{}, ErrTruncated
	}
	if b[0] != Version {
		return Header{}, ErrVersion
	}
	t := Type(b[1])
	if t < TypeData || t > TypeClose {
		return Header{}, ErrType
	}
	if b[3] != 0 {
		return Header{}, ErrAuthTag
	}
	return Header{Type: t, Flags: b[2], Conn: be.Uint32(b[4:])}, nil
}

func putHeader(b []byte, t Type, flags uint8, conn uint32) {
	b[0] = Version
	b[1] = byte(t)
	b[2] = flags
	b[3] = 0
	be.PutUint32(b[4:], conn)
}

// MsgID names a message on a connection: the receive slot it occupies and
// the generation of that slot. A slot is reused once its message completes;
// the generation tells a late packet of the old message from the new one.
type MsgID struct {
	Slot uint16
	Gen  uint16
}

func getMsg(b []byte) MsgID { return MsgID{Slot: be.Uint16(b[8:]), Gen: be.Uint16(b[10:])} }

func putMsg(b []byte, m MsgID) {
	be.PutUint16(b[8:], m.Slot)
	be.PutUint16(b[10:], m.Gen)
}

// Geometry is how a message is cut into packets and chunks. Every DATA and
// PARITY packet carries it, so a receiver needs no prior agreement on it
// and can check that all packets of a message agree.
type Geometry struct {
	MsgLen     uint64 // message length in bytes, at least 1
	MTU        uint16 // payload bytes per packet
	ChunkShift uint8  // log2 of packets per chunk
	Scheme     uint8  // reliability scheme, see internal/reliability
	// K and M are the erasure code's data and parity chunks per
	// sub-message; both zero when the message is not erasure coded.
	K, M uint8
}

// MaxChunkShift bounds packets per chunk at 2^16.
const MaxChunkShift = 16

// Packets returns the number of packets in the message.
func (g Geometry) Packets() uint64 { return (g.MsgLen + uint64(g.MTU) - 1) / uint64(g.MTU) }

// PayloadLen returns the payload length of packet i.
func (g Geometry) PayloadLen(i uint32) int {
	off := uint64(i) * uint64(g.MTU)
	if rest := g.MsgLen - off; rest < uint64(g.MTU) {
		return int(rest)
	}
	return int(g.MTU)
}

// valid checks the geometry without dividing: decoding is on the per-packet
// path and a 64-bit division costs more than the rest of it.
func (g Geometry) valid() bool {
	return g.MsgLen > 0 && g.MTU > 0 && g.ChunkShift <= MaxChunkShift &&
		g.MsgLen <= uint64(g.MTU)<<32 && (g.K == 0) == (g.M == 0)
}

// has reports whether packet i exists, and whether it is the last one.
func (g Geometry) has(i uint32) (exists, last bool) {
	off := uint64(i) * uint64(g.MTU)
	return off < g.MsgLen, off+uint64(g.MTU) >= g.MsgLen
}

func getGeometry(b []byte) (Geometry, bool) {
	g := Geometry{MsgLen: be.Uint64(b[16:]), Scheme: b[24], ChunkShift: b[25], MTU: be.Uint16(b[26:]),
		K: b[28], M: b[29]}
	return g, b[30] == 0 && b[31] == 0 && g.valid()
}

func putGeometry(b []byte, g Geometry) {
	be.PutUint64(b[16:], g.MsgLen)
	b[24] = g.Scheme
	b[25] = g.ChunkShift
	be.PutUint16(b[26:], g.MTU)
	b[28], b[29], b[30], b[31] = g.K, g.M, 0, 0
}

// Data is a DATA packet: one MTU-sized piece of a message.
//
//	8..9   message slot      10..11 generation
//	12..15 packet index      16..23 message length
//	24     scheme            25     log2 packets per chunk
//	26..27 MTU               28     K (erasure code data chunks, or 0)
//	29     M (parity chunks, or 0)   30..31 reserved (0)
//	32..   payload
type Data struct {
	Conn   uint32
	Flags  uint8
	Msg    MsgID
	Packet uint32
	Geometry
	Payload []byte // aliases the decoded buffer
}

// Encode writes d into b and returns the packet length.
func (d *Data) Encode(b []byte) (int, error) {
	n := MessageLen + len(d.Payload)
	if len(b) < n {
		return 0, ErrBufferSmall
	}
	d.EncodeHeader(b)
	copy(b[MessageLen:], d.Payload)
	return n, nil
}

// EncodeHeader writes only the MessageLen-byte header of d into b, which
// must be that long; the payload goes on the wire right after it. A
// datapath that gathers header and payload (writev, GSO) saves a copy.
func (d *Data) EncodeHeader(b []byte) {
	_ = b[MessageLen-1]
	putHeader(b, TypeData, d.Flags, d.Conn)
	putMsg(b, d.Msg)
	be.PutUint32(b[12:], d.Packet)
	putGeometry(b, d.Geometry)
}

// ParseData decodes a DATA packet and checks that the packet index and
// payload length agree with the geometry.
func ParseData(b []byte) (Data, error) {
	if len(b) < MessageLen {
		h, err := ParseHeader(b)
		switch {
		case err != nil:
			return Data{}, err
		case h.Type != TypeData:
			return Data{}, ErrType
		}
		return Data{}, ErrTruncated
	}
	return ParseDataSplit(b[:MessageLen], b[MessageLen:])
}

// ParseDataSplit decodes a DATA packet whose header and payload lie in
// separate buffers, as a simulator that never gathers them hands it over.
// header must be exactly MessageLen bytes long.
func ParseDataSplit(header, payload []byte) (Data, error) {
	h, err := ParseHeader(header)
	if err != nil {
		return Data{}, err
	}
	if h.Type != TypeData {
		return Data{}, ErrType
	}
	if len(header) != MessageLen {
		if len(header) < MessageLen {
			return Data{}, ErrTruncated
		}
		return Data{}, ErrInconsistent
	}
	geo, ok := getGeometry(header)
	d := Data{Conn: h.Conn, Flags: h.Flags, Msg: getMsg(header), Packet: be.Uint32(header[12:]),
		Geometry: geo, Payload: payload}
	exists, last := d.has(d.Packet)
	if !ok || !exists {
		return Data{}, ErrInconsistent
	}
	if want := d.PayloadLen(d.Packet); len(d.Payload) != want {
		if len(d.Payload) < want {
			return Data{}, ErrTruncated
		}
		return Data{}, ErrInconsistent
	}
	if last != (d.Flags&FlagLast != 0) {
		return Data{}, ErrInconsistent
	}
	return d, nil
}

// Parity is a PARITY packet: packet Stripe of parity chunk Index of
// sub-message Sub, coded over the same packet of the sub-message's K data
// chunks.
//
//	8..31  as DATA, with 12..15 holding the sub-message index
//	32     parity index    33..35 reserved (0)
//	36..39 stripe (packet index within the chunk)
//	40..   payload (always MTU bytes)
type Parity struct {
	Conn  uint32
	Flags uint8
	Msg   MsgID
	Sub   uint32
	Geometry
	Index   uint8
	Stripe  uint32
	Payload []byte
}

// Encode writes p into b and returns the packet length.
func (p *Parity) Encode(b []byte) (int, error) {
	n := ParityLen + len(p.Payload)
	if len(b) < n {
		return 0, ErrBufferSmall
	}
	p.EncodeHeader(b)
	copy(b[ParityLen:], p.Payload)
	return n, nil
}

// EncodeHeader writes only the ParityLen-byte header of p into b, which
// must be that long; the payload follows it on the wire.
func (p *Parity) EncodeHeader(b []byte) {
	_ = b[ParityLen-1]
	putHeader(b, TypeParity, p.Flags, p.Conn)
	putMsg(b, p.Msg)
	be.PutUint32(b[12:], p.Sub)
	putGeometry(b, p.Geometry)
	b[32], b[33], b[34], b[35] = p.Index, 0, 0, 0
	be.PutUint32(b[36:], p.Stripe)
}

// ParseParity decodes a PARITY packet.
func ParseParity(b []byte) (Parity, error) {
	if len(b) < ParityLen {
		h, err := ParseHeader(b)
		switch {
		case err != nil:
			return Parity{}, err
		case h.Type != TypeParity:
			return Parity{}, ErrType
		}
		return Parity{}, ErrTruncated
	}
	return ParseParitySplit(b[:ParityLen], b[ParityLen:])
}

// ParseParitySplit decodes a PARITY packet whose header (exactly ParityLen
// bytes) and payload lie in separate buffers.
func ParseParitySplit(header, payload []byte) (Parity, error) {
	h, err := ParseHeader(header)
	if err != nil {
		return Parity{}, err
	}
	if h.Type != TypeParity {
		return Parity{}, ErrType
	}
	if len(header) != ParityLen {
		if len(header) < ParityLen {
			return Parity{}, ErrTruncated
		}
		return Parity{}, ErrInconsistent
	}
	b := header
	geo, ok := getGeometry(b)
	p := Parity{Conn: h.Conn, Flags: h.Flags, Msg: getMsg(b), Sub: be.Uint32(b[12:]),
		Geometry: geo, Index: b[32], Stripe: be.Uint32(b[36:]), Payload: payload}
	if !ok || p.K == 0 || p.Index >= p.M || b[33] != 0 || b[34] != 0 || b[35] != 0 ||
		p.Stripe >= 1<<p.ChunkShift {
		return Parity{}, ErrInconsistent
	}
	chunks := (p.Packets() + 1<<p.ChunkShift - 1) >> p.ChunkShift
	if uint64(p.Sub)*uint64(p.K) >= chunks {
		return Parity{}, ErrInconsistent
	}
	if len(p.Payload) != int(p.MTU) {
		if len(p.Payload) < int(p.MTU) {
			return Parity{}, ErrTruncated
		}
		return Parity{}, ErrInconsistent
	}
	return p, nil
}

// Ack acknowledges part of a message: everything below Cum, and the units
// whose bits are set in a bitmap window that starts at Base. The unit is a
// chunk when FlagChunkUnits is set, else a packet.
//
//	8..11  message      12..15 cumulative    16..19 bitmap base
//	20..21 bitmap words (0..32)   22..23 reserved (0)   24.. bitmap
type Ack struct {
	Conn  uint32
	Flags uint8
	Msg   MsgID
	Cum   uint32
	Base  uint32
	bits  []byte
}

// Words returns the number of 64-bit words in the bitmap window.
func (a *Ack) Words() int { return len(a.bits) / 8 }

// Word returns bitmap word i: bit j says unit Base+64*i+j arrived.
func (a *Ack) Word(i int) uint64 { return be.Uint64(a.bits[8*i:]) }

// EncodeAck writes an ACK whose bitmap is words into b.
func EncodeAck(b []byte, a *Ack, words []uint64) (int, error) {
	if len(words) > MaxAckWords {
		return 0, ErrInconsistent
	}
	n := AckLen + 8*len(words)
	if len(b) < n {
		return 0, ErrBufferSmall
	}
	putHeader(b, TypeAck, a.Flags, a.Conn)
	putMsg(b, a.Msg)
	be.PutUint32(b[12:], a.Cum)
	be.PutUint32(b[16:], a.Base)
	be.PutUint16(b[20:], uint16(len(words)))
	be.PutUint16(b[22:], 0)
	for i, w := range words {
		be.PutUint64(b[AckLen+8*i:], w)
	}
	return n, nil
}

// ParseAck decodes an ACK.
func ParseAck(b []byte) (Ack, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Ack{}, err
	}
	if h.Type != TypeAck {
		return Ack{}, ErrType
	}
	if len(b) < AckLen {
		return Ack{}, ErrTruncated
	}
	words := int(be.Uint16(b[20:]))
	if words > MaxAckWords || be.Uint16(b[22:]) != 0 {
		return Ack{}, ErrInconsistent
	}
	if len(b) != AckLen+8*words {
		if len(b) < AckLen+8*words {
			return Ack{}, ErrTruncated
		}
		return Ack{}, ErrInconsistent
	}
	a := Ack{Conn: h.Conn, Flags: h.Flags, Msg: getMsg(b), Cum: be.Uint32(b[12:]),
		Base: be.Uint32(b[16:]), bits: b[AckLen:]}
	if uint64(a.Base)+64*uint64(words) > 1<<32 {
		return Ack{}, ErrInconsistent
	}
	return a, nil
}

// NackReason says why a NACK was sent.
type NackReason uint8

// NACK reasons.
const (
	// NackGap: the receiver saw a gap and asks for the missing units (SR-NACK).
	NackGap NackReason = 1
	// NackFallback: erasure decoding failed after the fallback timeout.
	NackFallback NackReason = 2
	// NackOutOfOrder: a go-back-N receiver saw a packet beyond the one it
	// expects; the sender resends from the first range's start.
	NackOutOfOrder NackReason = 3
	// NackTooLarge: the message is larger than the posted buffer.
	NackTooLarge NackReason = 4
	// NackUnknown: the message names no posted buffer.
	NackUnknown NackReason = 5
)

// Unit is what a NACK's ranges count.
type Unit uint8

// NACK units.
const (
	UnitPacket Unit = 0
	UnitChunk  Unit = 1
)

// Nack asks for ranges of units of a message.
//
//	8..11  message   12 reason   13 unit   14..15 number of ranges
//	16..   ranges: start uint32, count uint32
type Nack struct {
	Conn   uint32
	Flags  uint8
	Msg    MsgID
	Reason NackReason
	Unit   Unit
	ranges []byte
}

// Range is a run of Count units starting at Start.
type Range struct{ Start, Count uint32 }

// Len returns the number of ranges.
func (n *Nack) Len() int { return len(n.ranges) / 8 }

// Range returns range i.
func (n *Nack) Range(i int) Range {
	return Range{Start: be.Uint32(n.ranges[8*i:]), Count: be.Uint32(n.ranges[8*i+4:])}
}

// MaxNackRanges returns how many ranges fit in a NACK of at most size bytes.
func MaxNackRanges(size int) int {
	if size < NackLen {
		return 0
	}
	return min((size-NackLen)/8, 1<<16-1)
}

// EncodeNack writes a NACK carrying ranges into b.
func EncodeNack(b []byte, n *Nack, ranges []Range) (int, error) {
	if len(ranges) > 1<<16-1 {
		return 0, ErrInconsistent
	}
	size := NackLen + 8*len(ranges)
	if len(b) < size {
		return 0, ErrBufferSmall
	}
	putHeader(b, TypeNack, n.Flags, n.Conn)
	putMsg(b, n.Msg)
	b[12], b[13] = byte(n.Reason), byte(n.Unit)
	be.PutUint16(b[14:], uint16(len(ranges)))
	for i, r := range ranges {
		be.PutUint32(b[NackLen+8*i:], r.Start)
		be.PutUint32(b[NackLen+8*i+4:], r.Count)
	}
	return size, nil
}

// ParseNack decodes a NACK.
func ParseNack(b []byte) (Nack, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Nack{}, err
	}
	if h.Type != TypeNack {
		return Nack{}, ErrType
	}
	if len(b) < NackLen {
		return Nack{}, ErrTruncated
	}
	n := Nack{Conn: h.Conn, Flags: h.Flags, Msg: getMsg(b), Reason: NackReason(b[12]), Unit: Unit(b[13])}
	count := int(be.Uint16(b[14:]))
	if n.Reason < NackGap || n.Reason > NackUnknown || n.Unit > UnitChunk {
		return Nack{}, ErrInconsistent
	}
	if len(b) != NackLen+8*count {
		if len(b) < NackLen+8*count {
			return Nack{}, ErrTruncated
		}
		return Nack{}, ErrInconsistent
	}
	n.ranges = b[NackLen:]
	for i := range count {
		r := n.Range(i)
		if r.Count == 0 || uint64(r.Start)+uint64(r.Count) > 1<<32 {
			return Nack{}, ErrInconsistent
		}
	}
	return n, nil
}

// CTS is a receiver's clear-to-send: a buffer of BufLen bytes is posted for
// message Msg, and the sender may have Credit bytes of it in flight.
//
//	8..11 message   12..19 buffer length   20..27 credit in bytes
type CTS struct {
	Conn   uint32
	Flags  uint8
	Msg    MsgID
	BufLen uint64
	Credit uint64
}

// Encode writes c into b.
func (c *CTS) Encode(b []byte) (int, error) {
	if len(b) < CTSLen {
		return 0, ErrBufferSmall
	}
	putHeader(b, TypeCTS, c.Flags, c.Conn)
	putMsg(b, c.Msg)
	be.PutUint64(b[12:], c.BufLen)
	be.PutUint64(b[20:], c.Credit)
	return CTSLen, nil
}

// ParseCTS decodes a CTS.
func ParseCTS(b []byte) (CTS, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return CTS{}, err
	}
	if h.Type != TypeCTS {
		return CTS{}, ErrType
	}
	if len(b) != CTSLen {
		if len(b) < CTSLen {
			return CTS{}, ErrTruncated
		}
		return CTS{}, ErrInconsistent
	}
	c := CTS{Conn: h.Conn, Flags: h.Flags, Msg: getMsg(b), BufLen: be.Uint64(b[12:]), Credit: be.Uint64(b[20:])}
	if c.BufLen == 0 {
		return CTS{}, ErrInconsistent
	}
	return c, nil
}

// Close ends a connection, with an application error code and a reason.
//
//	8..11 error code   12..13 reason length   14.. reason (UTF-8)
type Close struct {
	Conn   uint32
	Flags  uint8
	Code   uint32
	Reason []byte // aliases the decoded buffer
}

// Encode writes c into b.
func (c *Close) Encode(b []byte) (int, error) {
	if len(c.Reason) > MaxCloseReason {
		return 0, ErrInconsistent
	}
	n := CloseLen + len(c.Reason)
	if len(b) < n {
		return 0, ErrBufferSmall
	}
	putHeader(b, TypeClose, c.Flags, c.Conn)
	be.PutUint32(b[8:], c.Code)
	be.PutUint16(b[12:], uint16(len(c.Reason)))
	copy(b[CloseLen:], c.Reason)
	return n, nil
}

// ParseClose decodes a CLOSE.
func ParseClose(b []byte) (Close, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Close{}, err
	}
	if h.Type != TypeClose {
		return Close{}, ErrType
	}
	if len(b) < CloseLen {
		return Close{}, ErrTruncated
	}
	rl := int(be.Uint16(b[12:]))
	if rl > MaxCloseReason {
		return Close{}, ErrInconsistent
	}
	if len(b) != CloseLen+rl {
		if len(b) < CloseLen+rl {
			return Close{}, ErrTruncated
		}
		return Close{}, ErrInconsistent
	}
	return Close{Conn: h.Conn, Flags: h.Flags, Code: be.Uint32(b[8:]), Reason: b[CloseLen:]}, nil
}
