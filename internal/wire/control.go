package wire

// Ack acknowledges part of a message: everything below Cum, and the units
// whose bits are set in a bitmap window that starts at Base. The unit is a
// chunk when FlagChunkUnits is set, else a packet.
//
//	12..15 message      16..19 cumulative    20..23 bitmap base
//	24..25 bitmap words (0..32)   26..27 delay (microseconds)   28.. bitmap
type Ack struct {
	Conn  uint64
	Flags uint8
	Msg   MsgID
	Cum   uint32
	Base  uint32
	// Delay is how long, in microseconds, the receiver held this ACK
	// after the newest packet it reports arrived (its host's read and
	// processing time, up to 65.535 ms), or 0: the sender takes it off
	// the round trip it measures, as QUIC's ack_delay.
	Delay uint16
	bits  []byte
	// With FlagPacketBits: packet j of chunk PktChunk arrived when bit j of
	// PktBits is set (chunks of up to 64 packets). 12 more bytes on the
	// wire, after the chunk bitmap.
	PktChunk uint32
	PktBits  uint64
}

// AckPacketBitsLen is the length of an ACK's packet bitmap trailer.
const AckPacketBitsLen = 12

// Covers reports whether the ACK says unit i arrived: below the cumulative
// point, or set in the bitmap window.
func (a *Ack) Covers(i uint32) bool {
	if i < a.Cum {
		return true
	}
	if i < a.Base || uint64(i-a.Base) >= 64*uint64(a.Words()) {
		return false
	}
	d := i - a.Base
	return a.Word(int(d/64))&(1<<(d%64)) != 0
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
	if a.Flags&FlagPacketBits != 0 {
		n += AckPacketBitsLen
	}
	if len(b) < n {
		return 0, ErrBufferSmall
	}
	putHeader(b, TypeAck, a.Flags, a.Conn)
	putMsg(b, a.Msg)
	be.PutUint32(b[16:], a.Cum)
	be.PutUint32(b[20:], a.Base)
	be.PutUint16(b[24:], uint16(len(words)))
	be.PutUint16(b[26:], a.Delay)
	for i, w := range words {
		be.PutUint64(b[AckLen+8*i:], w)
	}
	if a.Flags&FlagPacketBits != 0 {
		t := b[AckLen+8*len(words):]
		be.PutUint32(t, a.PktChunk)
		be.PutUint64(t[4:], a.PktBits)
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
	words := int(be.Uint16(b[24:]))
	if words > MaxAckWords {
		return Ack{}, ErrInconsistent
	}
	want := AckLen + 8*words
	if h.Flags&FlagPacketBits != 0 {
		want += AckPacketBitsLen
	}
	if len(b) != want {
		if len(b) < want {
			return Ack{}, ErrTruncated
		}
		return Ack{}, ErrInconsistent
	}
	a := Ack{Conn: h.Conn, Flags: h.Flags, Msg: getMsg(b), Cum: be.Uint32(b[16:]),
		Base: be.Uint32(b[20:]), Delay: be.Uint16(b[26:]), bits: b[AckLen : AckLen+8*words]}
	if h.Flags&FlagPacketBits != 0 {
		t := b[AckLen+8*words:]
		a.PktChunk, a.PktBits = be.Uint32(t), be.Uint64(t[4:])
	}
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
	// NackDecoded: these packets were lost but erasure decoding rebuilt
	// them; nothing is to be resent. A multipath sender learns from it
	// which paths lose packets the code hides.
	NackDecoded NackReason = 6
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
//	12..15 message   16 reason   17 unit   18..19 number of ranges
//	20..   ranges: start uint32, count uint32
type Nack struct {
	Conn   uint64
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
	b[16], b[17] = byte(n.Reason), byte(n.Unit)
	be.PutUint16(b[18:], uint16(len(ranges)))
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
	n := Nack{Conn: h.Conn, Flags: h.Flags, Msg: getMsg(b), Reason: NackReason(b[16]), Unit: Unit(b[17])}
	count := int(be.Uint16(b[18:]))
	if n.Reason < NackGap || n.Reason > NackDecoded || n.Unit > UnitChunk {
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
//	12..15 message   16..23 buffer length   24..31 credit in bytes
type CTS struct {
	Conn   uint64
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
	be.PutUint64(b[16:], c.BufLen)
	be.PutUint64(b[24:], c.Credit)
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
	c := CTS{Conn: h.Conn, Flags: h.Flags, Msg: getMsg(b), BufLen: be.Uint64(b[16:]), Credit: be.Uint64(b[24:])}
	if c.BufLen == 0 {
		return CTS{}, ErrInconsistent
	}
	return c, nil
}

// Close ends a connection, with an application error code and a reason.
//
//	12..15 error code   16..17 reason length   18.. reason (UTF-8)
type Close struct {
	Conn   uint64
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
	be.PutUint32(b[12:], c.Code)
	be.PutUint16(b[16:], uint16(len(c.Reason)))
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
	rl := int(be.Uint16(b[16:]))
	if rl > MaxCloseReason {
		return Close{}, ErrInconsistent
	}
	if len(b) != CloseLen+rl {
		if len(b) < CloseLen+rl {
			return Close{}, ErrTruncated
		}
		return Close{}, ErrInconsistent
	}
	return Close{Conn: h.Conn, Flags: h.Flags, Code: be.Uint32(b[12:]), Reason: b[CloseLen:]}, nil
}
