// Package wire defines sdrnet's packet formats: how each packet type is laid
// out on the wire, encoded into a caller-owned buffer, and decoded without
// copying the payload.
//
// Every packet starts with a 12-byte common header:
//
//	0      version (1)
//	1      type (DATA, PARITY, ACK, NACK, CTS, CLOSE, HELLO, ACCEPT, PING)
//	2      flags (per type)
//	3      protection (protect.go): 0 none; header or full mean a trailer
//	       with an AEAD tag and a packet number follows the body, which
//	       the connection checks and removes before the decoders see it
//	4..11  destination connection id, big endian
//
// Connection ids are 64 bits so that one drawn at random cannot be found
// by an off-path sender trying ids blindly.
//
// All multi-byte integers are big endian. Decoders never panic: truncated,
// oversized, unknown-version or inconsistent input is an error value.
package wire

import (
	"encoding/binary"
	"errors"
)

// Version is the only protocol version this package speaks. Version 2
// has the 40- and 48-byte DATA and PARITY headers: a peer of version 1
// would pass the handshake and then drop every data packet, so it is
// refused at the HELLO instead. Version 3 gives the ACK's reserved bytes
// to its delay (Ack.Delay), which a version 2 peer rejects. Version 4 lets
// a message's sender answer a CTS that it holds the grant (a CTS with the
// sender's flag), which a version 3 peer would take for a CTS of its own.
const Version = 4

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
	TypeHello  Type = 7
	TypeAccept Type = 8
	TypePing   Type = 9
)

var typeNames = [...]string{"invalid", "DATA", "PARITY", "ACK", "NACK", "CTS", "CLOSE", "HELLO", "ACCEPT", "PING"}

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
	// FlagPacketBits says an ACK ends with the packet bitmap of one chunk
	// that is not whole yet (SDR's expanded chunk): which of its packets
	// arrived, so a multipath sender learns what each path delivered.
	FlagPacketBits uint8 = 1 << 5
	// FlagCompleted marks a Done ACK that answers the packet that
	// completed the message, not a stale packet of a message done
	// earlier (ACK): the sender may take an RTT sample from it.
	FlagCompleted uint8 = 1 << 6
	// FlagDupResend says a resent DATA packet arrived, since the last
	// ACK, of a chunk its first pass had made whole (ACK): a resend not
	// needed, as TCP's D-SACK reports one (RFC 2883). The sender's
	// timeout fired early, and backs off (RFC 3708). Not for Go-Back-N,
	// whose rewinds resend what may have arrived by design.
	FlagDupResend uint8 = 1 << 7
)

// Header lengths.
const (
	CommonLen = 12
	// MessageLen is the length of the DATA header, which PARITY extends.
	MessageLen = 40
	ParityLen  = 48
	AckLen     = 28
	NackLen    = 20
	CTSLen     = 32
	CloseLen   = 18
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
	ErrAuthTag      = errors.New("wire: protected packet reached a decoder unopened")
	ErrBufferSmall  = errors.New("wire: buffer too small")
)

var be = binary.BigEndian

// Header is the common header of every packet.
type Header struct {
	Type  Type
	Flags uint8
	Conn  uint64 // destination connection id
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
	if t < TypeData || t > TypePing {
		return Header{}, ErrType
	}
	if b[3] != 0 {
		return Header{}, ErrAuthTag
	}
	return Header{Type: t, Flags: b[2], Conn: be.Uint64(b[4:])}, nil
}

func putHeader(b []byte, t Type, flags uint8, conn uint64) {
	b[0] = Version
	b[1] = byte(t)
	b[2] = flags
	b[3] = 0
	be.PutUint64(b[4:], conn)
}
