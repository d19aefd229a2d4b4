package wire

// Packet protection. A connection whose handshake agreed on keys protects
// every packet after it: byte 3 of the common header names the protection
// and a trailer follows the packet.
//
//	0..11    common header, byte 3 = ProtectHeader or ProtectFull
//	12..n-25 body: in clear (header mode) or encrypted (full mode)
//	n-24..   16-byte AEAD tag, then the 8-byte packet number
//
// The packet number is the AEAD nonce: each direction of a connection
// counts its packets from 0 and never reuses a number, and the receiver's
// replay window rejects a number seen before. Full mode encrypts the body
// and authenticates it with the common header and the packet number;
// header mode encrypts nothing and authenticates a packet's headers - all
// of a control packet, the first MessageLen (DATA) or ParityLen (PARITY)
// bytes of a data packet - which stops blind injection and forged control
// at the cost of one tag per packet, while payloads travel unauthenticated.

// Protection is what byte 3 of the common header says of a packet.
type Protection uint8

// Protections.
const (
	ProtectNone   Protection = 0
	ProtectHeader Protection = 1
	ProtectFull   Protection = 2
)

var protectionNames = [...]string{"none", "header", "full"}

func (p Protection) String() string {
	if int(p) < len(protectionNames) {
		return protectionNames[p]
	}
	return "unknown"
}

// ParseProtection reads a protection's name.
func ParseProtection(s string) (Protection, bool) {
	for i, n := range protectionNames {
		if n == s {
			return Protection(i), true
		}
	}
	return 0, false
}

// Trailer sizes.
const (
	TagLen     = 16
	TrailerLen = TagLen + 8
)

// ProtectionOf returns the protection a packet claims, without checking it.
func ProtectionOf(b []byte) Protection {
	if len(b) < CommonLen {
		return ProtectNone
	}
	return Protection(b[3])
}

// SetProtection writes the protection into a packet's common header.
func SetProtection(b []byte, p Protection) { b[3] = byte(p) }

// PacketNumber returns the packet number of a protected packet, and the
// packet without its trailer; false if it is too short to have one.
func PacketNumber(b []byte) (uint64, []byte, bool) {
	if len(b) < CommonLen+TrailerLen {
		return 0, nil, false
	}
	n := len(b) - 8
	return be.Uint64(b[n:]), b[:n], true
}

// PutPacketNumber appends a packet number to b.
func PutPacketNumber(b []byte, pn uint64) []byte { return be.AppendUint64(b, pn) }

// AuthenticatedLen is how many leading bytes of a packet of type t header
// mode authenticates: the headers of data packets, all of the rest.
func AuthenticatedLen(b []byte) int {
	if len(b) < CommonLen {
		return len(b)
	}
	switch Type(b[1]) {
	case TypeData:
		return min(len(b), MessageLen)
	case TypeParity:
		return min(len(b), ParityLen)
	}
	return len(b)
}
