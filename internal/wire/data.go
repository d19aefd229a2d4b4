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
	// packet's Imm), which every packet of it repeats in an ImmLen-byte
	// extension after the fixed header, so whichever packet arrives
	// first, or decoding, delivers it. Messages without one pay nothing.
	HasImm bool
}

// ImmLen is the length of the immediate-value extension.
const ImmLen = 4

// MaxHeaderLen is the longest header of a packet that carries a payload:
// PARITY's with the immediate extension.
const MaxHeaderLen = ParityLen + ImmLen

// geoFlagImm in byte 34 says the header has the immediate extension.
const geoFlagImm = 1

// ext returns the length of the header extension g implies.
func (g Geometry) ext() int {
	if g.HasImm {
		return ImmLen
	}
	return 0
}

// headerExt returns the extension length a packet's geometry bytes
// announce, reading only byte 34 (b must be at least 35 bytes).
func headerExt(b []byte) int {
	if b[34]&geoFlagImm != 0 {
		return ImmLen
	}
	return 0
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

// getGeometry reads the geometry of a header.
func getGeometry(b []byte) (Geometry, bool) {
	_ = b[35]
	g := Geometry{MsgLen: be.Uint64(b[20:]), Scheme: b[28], ChunkShift: b[29], MTU: be.Uint16(b[30:]),
		K: b[32], M: b[33], HasImm: b[34] == geoFlagImm}
	return g, b[34]&^geoFlagImm == 0 && b[35] == 0 && g.valid()
}

// getImm reads the immediate extension of a header whose fixed part is
// fixed bytes long, if g says it has one.
func getImm(b []byte, g *Geometry, fixed int) uint32 {
	if !g.HasImm {
		return 0
	}
	return be.Uint32(b[fixed:])
}

// putGeometry writes g's fixed bytes (20..35); the caller writes the
// immediate extension, putImm, after its own fixed header.
func putGeometry(b []byte, g Geometry) {
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

// putImm writes the immediate extension at b[fixed:] if g has one, and
// returns the header's whole length.
func putImm(b []byte, g *Geometry, imm uint32, fixed int) int {
	if !g.HasImm {
		return fixed
	}
	be.PutUint32(b[fixed:], imm)
	return fixed + ImmLen
}

// Data is a DATA packet: one MTU-sized piece of a message.
//
//	12..13 message slot      14..15 generation
//	16..19 packet index      20..27 message length
//	28     scheme            29     log2 packets per chunk
//	30..31 MTU               32     K (erasure code data chunks, or 0)
//	33     M (parity chunks, or 0)   34 flags (bit 0: immediate)
//	35     reserved (0)
//	36..39 immediate value, when flagged
//	36..   payload (40.. with the immediate)
type Data struct {
	Conn   uint64
	Flags  uint8
	Msg    MsgID
	Packet uint32
	Imm    uint32 // the message's immediate value, where Geometry.HasImm
	Geometry
	Payload []byte // aliases the decoded buffer
}

// HeaderLen returns the length of d's header: MessageLen, plus the
// immediate extension when the message has one.
func (d *Data) HeaderLen() int { return MessageLen + d.ext() }

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
	_ = b[MessageLen-1] // one bounds check for the fixed part
	putHeader(b, TypeData, d.Flags, d.Conn)
	putMsg(b, d.Msg)
	be.PutUint32(b[16:], d.Packet)
	putGeometry(b, d.Geometry)
	return putImm(b, &d.Geometry, d.Imm, MessageLen)
}

// ParseData decodes a DATA packet and checks that the packet index and
// payload length agree with the geometry.
func ParseData(b []byte) (Data, error) {
	h, err := headerEnd(b, MessageLen, TypeData)
	if err != nil {
		return Data{}, err
	}
	return ParseDataSplit(b[:h], b[h:])
}

// headerEnd returns where the header of a packet of type want, whose
// fixed part is fixed bytes long, ends in b (after the immediate
// extension, if flagged); or the error of a packet too short for it.
func headerEnd(b []byte, fixed int, want Type) (int, error) {
	h := fixed
	if len(b) >= h {
		h += headerExt(b)
	}
	if len(b) < h {
		return 0, shortErr(b, want)
	}
	return h, nil
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
	h, err := ParseHeader(header)
	if err != nil {
		return Data{}, err
	}
	if h.Type != TypeData {
		return Data{}, ErrType
	}
	if len(header) < MessageLen {
		return Data{}, ErrTruncated
	}
	if want := MessageLen + headerExt(header); len(header) != want {
		if len(header) < want {
			return Data{}, ErrTruncated
		}
		return Data{}, ErrInconsistent
	}
	geo, ok := getGeometry(header)
	d := Data{Conn: h.Conn, Flags: h.Flags, Msg: getMsg(header), Packet: be.Uint32(header[16:]),
		Imm: getImm(header, &geo, MessageLen), Geometry: geo, Payload: payload}
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
//	12..35 as DATA, with 16..19 holding the sub-message index
//	36     parity index    37..39 reserved (0)
//	40..43 stripe (packet index within the chunk)
//	44..47 immediate value, when flagged (as DATA)
//	44..   payload (always MTU bytes; 48.. with the immediate)
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

// HeaderLen returns the length of p's header: ParityLen, plus the
// immediate extension when the message has one.
func (p *Parity) HeaderLen() int { return ParityLen + p.ext() }

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
	putGeometry(b, p.Geometry)
	b[36], b[37], b[38], b[39] = p.Index, 0, 0, 0
	be.PutUint32(b[40:], p.Stripe)
	return putImm(b, &p.Geometry, p.Imm, ParityLen)
}

// ParseParity decodes a PARITY packet.
func ParseParity(b []byte) (Parity, error) {
	h, err := headerEnd(b, ParityLen, TypeParity)
	if err != nil {
		return Parity{}, err
	}
	return ParseParitySplit(b[:h], b[h:])
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
	if len(header) < ParityLen {
		return Parity{}, ErrTruncated
	}
	if want := ParityLen + headerExt(header); len(header) != want {
		if len(header) < want {
			return Parity{}, ErrTruncated
		}
		return Parity{}, ErrInconsistent
	}
	b := header
	geo, ok := getGeometry(b)
	p := Parity{Conn: h.Conn, Flags: h.Flags, Msg: getMsg(b), Sub: be.Uint32(b[16:]),
		Imm: getImm(b, &geo, ParityLen), Geometry: geo, Index: b[36], Stripe: be.Uint32(b[40:]), Payload: payload}
	if !ok || p.K == 0 || p.Index >= p.M || b[37] != 0 || b[38] != 0 || b[39] != 0 ||
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
