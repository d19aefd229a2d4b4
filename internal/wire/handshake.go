package wire

// Hello opens a connection; Accept answers it. Both carry the sender's
// connection id and its parameters, and a timestamp the answer echoes so
// the dialer measures the first RTT.
//
//	12..19 sender's connection id
//	20     paths      21 scheme      22 K      23 M
//	24..25 MTU        26 log2 packets per chunk      27 reserved (0)
//	28..31 max messages in flight
//	32..39 timestamp (Hello: the dialer's clock; Accept: echoed)
//
// A Hello goes to connection id 0, the listener. A listener creates no
// state for a Hello until its sender has proved it receives at its source
// address (QUIC's stateless retry): it answers a Hello without a valid
// cookie with a Retry, and the dialer repeats its Hello with the cookie.
//
// HELLO, flags: FlagCookie. Without it the Hello is the 40 bytes above;
// with it a cookie follows (HelloCookieLen bytes in all):
//
//	40..43 cookie time (the listener's coarse clock when it issued it)
//	44..59 cookie MAC
//
// ACCEPT, flags: none, FlagRetry or FlagRefuse (not both). A plain
// Accept is the 40 bytes above. A Retry (ACCEPT with FlagRetry) goes to
// the dialer's connection id, names no sender and carries only a cookie,
// in 40 bytes, so it is never larger than the Hello it answers:
//
//	12..19 0 (no connection exists yet)
//	20..23 cookie time
//	24..39 cookie MAC
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
// bytes 20..31 zero, 32..39 the echoed timestamp.
type Handshake struct {
	Conn       uint64 // destination: 0 for a Hello
	Flags      uint8
	Source     uint64 // the sender's own connection id; 0 in a Retry or Refusal
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
	HandshakeLen = 40
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
	be.PutUint64(b[12:], h.Source)
	if t == TypeAccept && h.Flags&FlagRetry != 0 {
		h.Cookie.put(b[20:])
		return n, nil
	}
	b[20], b[21], b[22], b[23] = h.Paths, h.Scheme, h.K, h.M
	be.PutUint16(b[24:], h.MTU)
	b[26], b[27] = h.ChunkShift, 0
	be.PutUint32(b[28:], h.MaxMsgs)
	be.PutUint64(b[32:], h.Echo)
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
		if be.Uint64(b[12:]) != 0 {
			return Handshake{}, 0, ErrInconsistent
		}
		return Handshake{Conn: h.Conn, Flags: h.Flags, Cookie: getCookie(b[20:])}, h.Type, nil
	}
	hs := Handshake{Conn: h.Conn, Flags: h.Flags, Source: be.Uint64(b[12:]),
		Paths: b[20], Scheme: b[21], K: b[22], M: b[23], MTU: be.Uint16(b[24:]),
		ChunkShift: b[26], MaxMsgs: be.Uint32(b[28:]), Echo: be.Uint64(b[32:])}
	if h.Type == TypeAccept && h.Flags&FlagRefuse != 0 {
		// A Refusal names no sender and no parameters.
		if hs.Source != 0 || be.Uint64(b[20:]) != 0 || be.Uint32(b[28:]) != 0 {
			return Handshake{}, 0, ErrInconsistent
		}
		return hs, h.Type, nil
	}
	if b[27] != 0 || hs.Source == 0 || hs.Paths == 0 || hs.MTU == 0 || hs.ChunkShift > MaxChunkShift ||
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
//	12..19 timestamp
type Ping struct {
	Conn  uint64
	Flags uint8
	Echo  uint64
}

// FlagPong marks the answer to a PING.
const FlagPong uint8 = 1 << 0

// PingLen is the length of a PING.
const PingLen = 20

// Encode writes p.
func (p *Ping) Encode(b []byte) (int, error) {
	if len(b) < PingLen {
		return 0, ErrBufferSmall
	}
	putHeader(b, TypePing, p.Flags, p.Conn)
	be.PutUint64(b[12:], p.Echo)
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
	return Ping{Conn: h.Conn, Flags: h.Flags, Echo: be.Uint64(b[12:])}, nil
}
