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
// A Hello goes to connection id 0, the listener. A listener creates no
// state for a Hello until its sender has proved it receives at its source
// address (QUIC's stateless retry): it answers a Hello without a valid
// cookie with a Retry, and the dialer repeats its Hello with the cookie.
//
// HELLO, flags: FlagCookie. Without it the Hello is the 32 bytes above;
// with it a cookie follows (HelloCookieLen bytes in all):
//
//	32..35 cookie time (the listener's coarse clock when it issued it)
//	36..51 cookie MAC
//
// ACCEPT, flags: none, FlagRetry or FlagRefuse (not both). A plain
// Accept is the 32 bytes above. A Retry (ACCEPT with FlagRetry) goes to
// the dialer's connection id, names no sender and carries only a cookie,
// in 32 bytes, so it is never larger than the Hello it answers:
//
//	8..11  0 (no connection exists yet)
//	12..15 cookie time
//	16..31 cookie MAC
//
// With FlagKeys (a HELLO, or a plain ACCEPT) a key exchange follows what
// is above: the protection asked for (HELLO) or agreed (ACCEPT), then one
// message of the handshake that derives the connection's keys (a Noise
// handshake message, opaque here):
//
//	+0     protection (protect.go)
//	+1     message length L (1..255)
//	+2..   the message
//
// A Refusal (ACCEPT with FlagRefuse) tells a dialer whose address the
// listener has verified that it takes no connection from it: sender 0,
// bytes 12..23 zero, 24..31 the echoed timestamp.
type Handshake struct {
	Conn       uint32 // destination: 0 for a Hello
	Flags      uint8
	Source     uint32 // the sender's own connection id; 0 in a Retry or Refusal
	Paths      uint8
	Scheme     uint8
	K, M       uint8
	MTU        uint16
	ChunkShift uint8
	MaxMsgs    uint32
	Echo       uint64
	// Cookie is the address-validation token of a Retry and of a Hello
	// with FlagCookie; zero otherwise.
	Cookie Cookie
	// Keys is the key exchange of a HELLO or ACCEPT with FlagKeys.
	Keys KeyExchange
}

// KeyExchange is one step of the handshake that keys a connection.
type KeyExchange struct {
	Protection Protection
	Msg        []byte // aliases the decoded buffer
}

// MaxKeyMsg bounds a key-exchange message.
const MaxKeyMsg = 255

// Cookie is a listener's address-validation token: when it was issued and
// a MAC only the listener can compute. Its meaning is the listener's
// business; the wire only carries it.
type Cookie struct {
	Time uint32 // the listener's coarse clock at issue
	MAC  [CookieMACLen]byte
}

// Handshake flags.
const (
	// FlagCookie says a HELLO carries the cookie of a Retry.
	FlagCookie uint8 = 1 << 0
	// FlagRetry makes an ACCEPT a Retry: repeat the Hello with this cookie.
	FlagRetry uint8 = 1 << 0
	// FlagRefuse makes an ACCEPT a Refusal: no connection.
	FlagRefuse uint8 = 1 << 1
	// FlagKeys says a HELLO or a plain ACCEPT carries a key exchange.
	FlagKeys uint8 = 1 << 2
)

// Handshake lengths.
const (
	// HandshakeLen is the length of a HELLO without a cookie and of every
	// ACCEPT (Retry and Refusal included).
	HandshakeLen = 32
	// CookieMACLen is the length of a cookie's MAC.
	CookieMACLen = 16
	// CookieLen is the length of a cookie on the wire.
	CookieLen = 4 + CookieMACLen
	// HelloCookieLen is the length of a HELLO with FlagCookie.
	HelloCookieLen = HandshakeLen + CookieLen
)

// Len returns the length of h encoded as a packet of type t.
func (h *Handshake) Len(t Type) int {
	n := HandshakeLen
	if t == TypeHello && h.Flags&FlagCookie != 0 {
		n = HelloCookieLen
	}
	if h.Flags&FlagKeys != 0 {
		n += 2 + len(h.Keys.Msg)
	}
	return n
}

// keysAt is where the key exchange of a handshake of type t and flags
// starts.
func keysAt(t Type, flags uint8) int {
	if t == TypeHello && flags&FlagCookie != 0 {
		return HelloCookieLen
	}
	return HandshakeLen
}

// Encode writes h as a packet of type t (TypeHello or TypeAccept). A Retry
// carries only Conn, Flags and Cookie.
func (h *Handshake) Encode(b []byte, t Type) (int, error) {
	if t != TypeHello && t != TypeAccept {
		return 0, ErrType
	}
	n := h.Len(t)
	if h.Flags&FlagKeys != 0 && (len(h.Keys.Msg) == 0 || len(h.Keys.Msg) > MaxKeyMsg ||
		t == TypeAccept && h.Flags&(FlagRetry|FlagRefuse) != 0) {
		return 0, ErrInconsistent
	}
	if len(b) < n {
		return 0, ErrBufferSmall
	}
	putHeader(b, t, h.Flags, h.Conn)
	be.PutUint32(b[8:], h.Source)
	if t == TypeAccept && h.Flags&FlagRetry != 0 {
		h.Cookie.put(b[12:])
		return n, nil
	}
	b[12], b[13], b[14], b[15] = h.Paths, h.Scheme, h.K, h.M
	be.PutUint16(b[16:], h.MTU)
	b[18], b[19] = h.ChunkShift, 0
	be.PutUint32(b[20:], h.MaxMsgs)
	be.PutUint64(b[24:], h.Echo)
	if t == TypeHello && h.Flags&FlagCookie != 0 {
		h.Cookie.put(b[HandshakeLen:])
	}
	if h.Flags&FlagKeys != 0 {
		k := b[keysAt(t, h.Flags):]
		k[0], k[1] = byte(h.Keys.Protection), byte(len(h.Keys.Msg))
		copy(k[2:], h.Keys.Msg)
	}
	return n, nil
}

func (c *Cookie) put(b []byte) {
	be.PutUint32(b, c.Time)
	copy(b[4:CookieLen], c.MAC[:])
}

func getCookie(b []byte) Cookie {
	c := Cookie{Time: be.Uint32(b)}
	copy(c.MAC[:], b[4:CookieLen])
	return c
}

// ParseHandshake decodes a HELLO or ACCEPT (a Retry or Refusal included).
func ParseHandshake(b []byte) (Handshake, Type, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Handshake{}, 0, err
	}
	if h.Type != TypeHello && h.Type != TypeAccept {
		return Handshake{}, 0, ErrType
	}
	want := keysAt(h.Type, h.Flags)
	switch {
	case h.Type == TypeHello && h.Flags&^(FlagCookie|FlagKeys) != 0,
		h.Type == TypeAccept && (h.Flags&^(FlagRetry|FlagRefuse|FlagKeys) != 0 || h.Flags == FlagRetry|FlagRefuse ||
			h.Flags&FlagKeys != 0 && h.Flags&(FlagRetry|FlagRefuse) != 0):
		if len(b) < HandshakeLen {
			return Handshake{}, 0, ErrTruncated
		}
		return Handshake{}, 0, ErrInconsistent
	}
	var keys KeyExchange
	if h.Flags&FlagKeys != 0 {
		if len(b) < want+2 {
			return Handshake{}, 0, ErrTruncated
		}
		keys.Protection = Protection(b[want])
		l := int(b[want+1])
		if keys.Protection < ProtectHeader || keys.Protection > ProtectFull || l == 0 {
			return Handshake{}, 0, ErrInconsistent
		}
		keys.Msg = b[want+2 : min(want+2+l, len(b))]
		want += 2 + l
	}
	if len(b) != want {
		if len(b) < want {
			return Handshake{}, 0, ErrTruncated
		}
		return Handshake{}, 0, ErrInconsistent
	}
	if (h.Type == TypeHello) != (h.Conn == 0) {
		return Handshake{}, 0, ErrInconsistent
	}
	if h.Type == TypeAccept && h.Flags&FlagRetry != 0 {
		if be.Uint32(b[8:]) != 0 {
			return Handshake{}, 0, ErrInconsistent
		}
		return Handshake{Conn: h.Conn, Flags: h.Flags, Cookie: getCookie(b[12:])}, h.Type, nil
	}
	hs := Handshake{Conn: h.Conn, Flags: h.Flags, Source: be.Uint32(b[8:]),
		Paths: b[12], Scheme: b[13], K: b[14], M: b[15], MTU: be.Uint16(b[16:]),
		ChunkShift: b[18], MaxMsgs: be.Uint32(b[20:]), Echo: be.Uint64(b[24:])}
	if h.Type == TypeAccept && h.Flags&FlagRefuse != 0 {
		// A Refusal names no sender and no parameters.
		if hs.Source != 0 || be.Uint64(b[12:]) != 0 || be.Uint32(b[20:]) != 0 {
			return Handshake{}, 0, ErrInconsistent
		}
		return hs, h.Type, nil
	}
	if b[19] != 0 || hs.Source == 0 || hs.Paths == 0 || hs.MTU == 0 || hs.ChunkShift > MaxChunkShift ||
		hs.MaxMsgs == 0 || (hs.K == 0) != (hs.M == 0) {
		return Handshake{}, 0, ErrInconsistent
	}
	if h.Type == TypeHello && h.Flags&FlagCookie != 0 {
		hs.Cookie = getCookie(b[HandshakeLen:])
	}
	hs.Keys = keys
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
