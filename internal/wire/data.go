package wire

// MsgID names a message on a connection: the receive slot it occupies and
// the generation of that slot. A slot is reused once its message completes;
// the generation tells a late packet of the old message from the new one.
type MsgID struct {
	Slot uint16
	Gen  uint16
}

func getMsg(b []byte) MsgID { return MsgID{Slot: be.Uint16(b[12:]), Gen: be.Uint16(b[14:])} }

func putMsg(b []byte, m MsgID) {
	be.PutUint16(b[12:], m.Slot)
	be.PutUint16(b[14:], m.Gen)
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
	// HasImm says the message carries a 32-bit immediate value (the
	// packet's Imm), which every packet of it repeats, so whichever packet
	// arrives first, or decoding, delivers it.
	HasImm bool
}

// MaxHeaderLen is the longest header of a packet that carries a payload:
// PARITY's. Every header that precedes a payload is a multiple of 8
// bytes long, so the payload lies 8-byte aligned wherever the datagram
// does: copying it out from an odd offset costs twice as much.
const MaxHeaderLen = ParityLen

// geoFlagImm in byte 34 says the packet's immediate value is the message's.
const geoFlagImm = 1

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

// read reads the geometry of a header into g, field by field: a Geometry
// built elsewhere and copied in whole stalls the fields' next reads on
// store forwarding, on every packet.
func (g *Geometry) read(b []byte) bool {
	_ = b[35]
	g.MsgLen, g.Scheme, g.ChunkShift, g.MTU = be.Uint64(b[20:]), b[28], b[29], be.Uint16(b[30:])
	g.K, g.M, g.HasImm = b[32], b[33], b[34] == geoFlagImm
	return b[34]&^geoFlagImm == 0 && b[35] == 0 && g.valid()
}

// getImm reads the immediate value at b[at:], which must be zero when g
// has none.
func getImm(b []byte, g *Geometry, at int) (uint32, bool) {
	imm := be.Uint32(b[at:])
	return imm, g.HasImm || imm == 0
}

// putGeometry writes g's bytes (20..35).
func putGeometry(b []byte, g *Geometry) {
	_ = b[35]
	be.PutUint64(b[20:], g.MsgLen)
	b[28] = g.Scheme
	b[29] = g.ChunkShift
	be.PutUint16(b[30:], g.MTU)
	b[32], b[33], b[34], b[35] = g.K, g.M, 0, 0
	if g.HasImm {
		b[34] = geoFlagImm
	}
}

// putImm writes the immediate value at b[at:]: imm if g has one, else 0.
func putImm(b []byte, g *Geometry, imm uint32, at int) {
	if !g.HasImm {
		imm = 0
	}
	be.PutUint32(b[at:], imm)
}

// Data is a DATA packet: one MTU-sized piece of a message.
//
//	12..13 message slot      14..15 generation
//	16..19 packet index      20..27 message length
//	28     scheme            29     log2 packets per chunk
//	30..31 MTU               32     K (erasure code data chunks, or 0)
//	33     M (parity chunks, or 0)   34 flags (bit 0: immediate)
//	35     reserved (0)
//	36..39 immediate value (0 unless flagged)
//	40..   payload
type Data struct {
	Conn   uint64
	Flags  uint8
	Msg    MsgID
	Packet uint32
	Imm    uint32 // the message's immediate value, where Geometry.HasImm
	Geometry
	Payload []byte // aliases the decoded buffer
}

// HeaderLen returns the length of d's header, MessageLen.
func (d *Data) HeaderLen() int { return MessageLen }

// Encode writes d into b and returns the packet length.
func (d *Data) Encode(b []byte) (int, error) {
	h := d.HeaderLen()
	n := h + len(d.Payload)
	if len(b) < n {
		return 0, ErrBufferSmall
	}
	d.EncodeHeader(b)
	copy(b[h:], d.Payload)
	return n, nil
}

// EncodeHeader writes only the HeaderLen-byte header of d into b, which
// must be that long, and returns its length; the payload goes on the wire
// right after it. A datapath that gathers header and payload (writev,
// GSO) saves a copy.
func (d *Data) EncodeHeader(b []byte) int {
	return EncodeDataHeader(b, d.Conn, d.Flags, d.Msg, d.Packet, d.Imm, &d.Geometry)
}

// EncodeDataHeader is EncodeHeader from the fields themselves, for the
// sender's per-packet path: building a Data first copies the geometry.
func EncodeDataHeader(b []byte, conn uint64, flags uint8, msg MsgID, packet, imm uint32, g *Geometry) int {
	_ = b[MessageLen-1] // one bounds check for the fixed part
	putHeader(b, TypeData, flags, conn)
	putMsg(b, msg)
	be.PutUint32(b[16:], packet)
	putGeometry(b, g)
	putImm(b, g, imm, 36)
	return MessageLen
}

// ParseData decodes a DATA packet and checks that the packet index and
// payload length agree with the geometry.
func ParseData(b []byte) (Data, error) {
	var d Data
	if err := d.Decode(b); err != nil {
		return Data{}, err
	}
	return d, nil
}

// shortErr is the error of a packet of type want too short for its
// header: whatever is wrong with its common header first.
func shortErr(b []byte, want Type) error {
	h, err := ParseHeader(b)
	switch {
	case err != nil:
		return err
	case h.Type != want:
		return ErrType
	}
	return ErrTruncated
}

// ParseDataSplit decodes a DATA packet whose header and payload lie in
// separate buffers, as a simulator that never gathers them hands it over.
// header must be exactly the header's length (HeaderLen).
func ParseDataSplit(header, payload []byte) (Data, error) {
	var d Data
	if err := d.DecodeSplit(header, payload); err != nil {
		return Data{}, err
	}
	return d, nil
}

// DecodeSplit is ParseDataSplit into d, which the per-packet path keeps
// on its stack: a Data returned by value through calls cost a
// store-forwarding stall per packet. On error d holds garbage.
func (d *Data) DecodeSplit(header, payload []byte) error {
	h, err := ParseHeader(header)
	if err != nil {
		return err
	}
	if h.Type != TypeData {
		return ErrType
	}
	if len(header) != MessageLen {
		if len(header) < MessageLen {
			return ErrTruncated
		}
		return ErrInconsistent
	}
	ok := d.Geometry.read(header)
	imm, immOK := getImm(header, &d.Geometry, 36)
	pkt := be.Uint32(header[16:])
	exists, last := d.has(pkt)
	if !ok || !immOK || !exists {
		return ErrInconsistent
	}
	if want := d.PayloadLen(pkt); len(payload) != want {
		if len(payload) < want {
			return ErrTruncated
		}
		return ErrInconsistent
	}
	if last != (h.Flags&FlagLast != 0) {
		return ErrInconsistent
	}
	d.Conn, d.Flags, d.Msg, d.Packet = h.Conn, h.Flags, getMsg(header), pkt
	d.Imm, d.Payload = imm, payload
	return nil
}

// Decode is ParseData into d (see DecodeSplit).
func (d *Data) Decode(b []byte) error {
	if len(b) < MessageLen {
		return shortErr(b, TypeData)
	}
	return d.DecodeSplit(b[:MessageLen], b[MessageLen:])
}

// Parity is a PARITY packet: packet Stripe of parity chunk Index of
// sub-message Sub, coded over the same packet of the sub-message's K data
// chunks.
//
//	12..35 as DATA, with 16..19 holding the sub-message index
//	36     parity index    37..39 reserved (0)
//	40..43 stripe (packet index within the chunk)
//	44..47 immediate value (as DATA's)
//	48..   payload (always MTU bytes)
type Parity struct {
	Conn  uint64
	Flags uint8
	Msg   MsgID
	Sub   uint32
	Imm   uint32 // as DATA's
	Geometry
	Index   uint8
	Stripe  uint32
	Payload []byte
}

// HeaderLen returns the length of p's header, ParityLen.
func (p *Parity) HeaderLen() int { return ParityLen }

// Encode writes p into b and returns the packet length.
func (p *Parity) Encode(b []byte) (int, error) {
	h := p.HeaderLen()
	n := h + len(p.Payload)
	if len(b) < n {
		return 0, ErrBufferSmall
	}
	p.EncodeHeader(b)
	copy(b[h:], p.Payload)
	return n, nil
}

// EncodeHeader writes only the HeaderLen-byte header of p into b, which
// must be that long, and returns its length; the payload follows it on
// the wire.
func (p *Parity) EncodeHeader(b []byte) int {
	_ = b[ParityLen-1]
	putHeader(b, TypeParity, p.Flags, p.Conn)
	putMsg(b, p.Msg)
	be.PutUint32(b[16:], p.Sub)
	putGeometry(b, &p.Geometry)
	b[36], b[37], b[38], b[39] = p.Index, 0, 0, 0
	be.PutUint32(b[40:], p.Stripe)
	putImm(b, &p.Geometry, p.Imm, 44)
	return ParityLen
}

// ParseParity decodes a PARITY packet.
func ParseParity(b []byte) (Parity, error) {
	if len(b) < ParityLen {
		return Parity{}, shortErr(b, TypeParity)
	}
	return ParseParitySplit(b[:ParityLen], b[ParityLen:])
}

// ParseParitySplit decodes a PARITY packet whose header (exactly its
// HeaderLen bytes) and payload lie in separate buffers.
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
	p := Parity{Conn: h.Conn, Flags: h.Flags, Msg: getMsg(b), Sub: be.Uint32(b[16:]),
		Index: b[36], Stripe: be.Uint32(b[40:]), Payload: payload}
	ok := p.Geometry.read(b)
	imm, immOK := getImm(b, &p.Geometry, 44)
	p.Imm = imm
	if !ok || !immOK || p.K == 0 || p.Index >= p.M || b[37] != 0 || b[38] != 0 || b[39] != 0 ||
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
