package wire

// Hello opens a connection; Accept answers it. Both carry the sender's
// connection id and its parameters, and a timestamp the answer echoes so
// the dialer measures the first RTT.
//
//	8..11  sender's connection id
//	12     paths      13 scheme      14 K      15 M
//	16..17 MTU        18 log2 packets per chunk      19 reserved (0)
//	20..23 max messages in flight
//	24..31 timestamp (Hello: the dialer's clock; Accept: echoed)
//
// A Hello goes to connection id 0, the listener.
type Handshake struct {
	Conn       uint32 // destination: 0 for a Hello
	Flags      uint8
	Source     uint32 // the sender's own connection id
	Paths      uint8
	Scheme     uint8
	K, M       uint8
	MTU        uint16
	ChunkShift uint8
	MaxMsgs    uint32
	Echo       uint64
}

// HandshakeLen is the length of a HELLO or ACCEPT.
const HandshakeLen = 32

// Encode writes h as a packet of type t (TypeHello or TypeAccept).
func (h *Handshake) Encode(b []byte, t Type) (int, error) {
	if t != TypeHello && t != TypeAccept {
		return 0, ErrType
	}
	if len(b) < HandshakeLen {
		return 0, ErrBufferSmall
	}
	putHeader(b, t, h.Flags, h.Conn)
	be.PutUint32(b[8:], h.Source)
	b[12], b[13], b[14], b[15] = h.Paths, h.Scheme, h.K, h.M
	be.PutUint16(b[16:], h.MTU)
	b[18], b[19] = h.ChunkShift, 0
	be.PutUint32(b[20:], h.MaxMsgs)
	be.PutUint64(b[24:], h.Echo)
	return HandshakeLen, nil
}

// ParseHandshake decodes a HELLO or ACCEPT.
func ParseHandshake(b []byte) (Handshake, Type, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Handshake{}, 0, err
	}
	if h.Type != TypeHello && h.Type != TypeAccept {
		return Handshake{}, 0, ErrType
	}
	if len(b) != HandshakeLen {
		if len(b) < HandshakeLen {
			return Handshake{}, 0, ErrTruncated
		}
		return Handshake{}, 0, ErrInconsistent
	}
	hs := Handshake{Conn: h.Conn, Flags: h.Flags, Source: be.Uint32(b[8:]),
		Paths: b[12], Scheme: b[13], K: b[14], M: b[15], MTU: be.Uint16(b[16:]),
		ChunkShift: b[18], MaxMsgs: be.Uint32(b[20:]), Echo: be.Uint64(b[24:])}
	if b[19] != 0 || hs.Source == 0 || hs.Paths == 0 || hs.MTU == 0 || hs.ChunkShift > MaxChunkShift ||
		hs.MaxMsgs == 0 || (hs.K == 0) != (hs.M == 0) || (h.Type == TypeHello) != (hs.Conn == 0) {
		return Handshake{}, 0, ErrInconsistent
	}
	return hs, h.Type, nil
}

// Ping keeps an idle connection alive and measures its RTT; the answer
// has FlagPong set and echoes the timestamp.
//
//	8..15 timestamp
type Ping struct {
	Conn  uint32
	Flags uint8
	Echo  uint64
}

// FlagPong marks the answer to a PING.
const FlagPong uint8 = 1 << 0

// PingLen is the length of a PING.
const PingLen = 16

// Encode writes p.
func (p *Ping) Encode(b []byte) (int, error) {
	if len(b) < PingLen {
		return 0, ErrBufferSmall
	}
	putHeader(b, TypePing, p.Flags, p.Conn)
	be.PutUint64(b[8:], p.Echo)
	return PingLen, nil
}

// ParsePing decodes a PING.
func ParsePing(b []byte) (Ping, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Ping{}, err
	}
	if h.Type != TypePing {
		return Ping{}, ErrType
	}
	if len(b) != PingLen {
		if len(b) < PingLen {
			return Ping{}, ErrTruncated
		}
		return Ping{}, ErrInconsistent
	}
	return Ping{Conn: h.Conn, Flags: h.Flags, Echo: be.Uint64(b[8:])}, nil
}
