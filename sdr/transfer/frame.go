package transfer

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The messages of a transfer, each opening with an 8-byte head: "SDRF",
// the kind, the version and two reserved bytes. In order:
//
//	sender   -> OFFER   what the file is (size, modification time, mode, block size)
//	sender   -> MANIFEST for a directory: its entries (manifest.go)
//	receiver -> STATE   which blocks it already holds, with their SHA-256s
//	sender   -> PLAN    whether those blocks are of this file (reuse) or not
//	sender   -> DATA... the missing blocks, each message a run of them at an offset
//	sender   -> END     the file's length and SHA-256
//	receiver -> VERDICT whether the bytes on its disk match, and how many it had before
const (
	headLen    = 8
	offerLen   = headLen + 36
	planLen    = headLen + 8
	dataHead   = headLen + 8
	endLen     = headLen + 8 + 32
	verdictLen = headLen + 24 + maxReason
	maxReason  = 200
	version    = 1
)

var magic = [4]byte{'S', 'D', 'R', 'F'}

type kind uint8

const (
	kindOffer kind = iota + 1
	kindState
	kindPlan
	kindData
	kindEnd
	kindVerdict
	kindManifest
)

var kindNames = [...]string{"", "OFFER", "STATE", "PLAN", "DATA", "END", "VERDICT", "MANIFEST"}

func (k kind) String() string {
	if int(k) < len(kindNames) && k > 0 {
		return kindNames[k]
	}
	return fmt.Sprintf("kind %d", k)
}

// errNotTransfer: the peer's message is no sdrnet transfer message (an
// sdrnet too old to resume, or something else).
var errNotTransfer = errors.New("not an sdrnet transfer message")

var be = binary.BigEndian

func putHead(b []byte, k kind) {
	copy(b, magic[:])
	b[4], b[5], b[6], b[7] = byte(k), version, 0, 0
}

// parseHead checks a message's head and that it is of kind want.
func parseHead(b []byte, want kind) error {
	if len(b) < headLen || [4]byte(b[:4]) != magic || b[6] != 0 || b[7] != 0 {
		return errNotTransfer
	}
	if b[5] != version {
		return fmt.Errorf("transfer version %d, this sdrnet speaks %d", b[5], version)
	}
	if got := kind(b[4]); got != want {
		return fmt.Errorf("got %v, want %v", got, want)
	}
	return nil
}

// offer describes the file a sender sends.
type offer struct {
	Size      int64
	ModTime   int64 // Unix nanoseconds; 0 for data that is no file
	Mode      uint32
	BlockSize uint32
	MaxData   uint32 // most payload bytes in one DATA
	Flags     uint32
	// ManifestLen is the length of the MANIFEST that follows, for a
	// directory (Flags has flagDir); 0 for a file.
	ManifestLen uint32
}

// flagDir: the offer is of a directory, its manifest follows.
const flagDir = 1

func (o *offer) blocks() int { return int((o.Size + int64(o.BlockSize) - 1) / int64(o.BlockSize)) }

func (o *offer) encode() []byte {
	b := make([]byte, offerLen)
	putHead(b, kindOffer)
	be.PutUint64(b[8:], uint64(o.Size))
	be.PutUint64(b[16:], uint64(o.ModTime))
	be.PutUint32(b[24:], o.Mode)
	be.PutUint32(b[28:], o.BlockSize)
	be.PutUint32(b[32:], o.MaxData)
	be.PutUint32(b[36:], o.Flags)
	be.PutUint32(b[40:], o.ManifestLen)
	return b
}

func parseOffer(b []byte) (offer, error) {
	if err := parseHead(b, kindOffer); err != nil {
		return offer{}, err
	}
	if len(b) != offerLen {
		return offer{}, fmt.Errorf("OFFER of %d bytes, want %d", len(b), offerLen)
	}
	o := offer{Size: int64(be.Uint64(b[8:])), ModTime: int64(be.Uint64(b[16:])), Mode: be.Uint32(b[24:]),
		BlockSize: be.Uint32(b[28:]), MaxData: be.Uint32(b[32:]), Flags: be.Uint32(b[36:]), ManifestLen: be.Uint32(b[40:])}
	switch {
	case o.Size < 0:
		return offer{}, fmt.Errorf("OFFER of %d bytes", o.Size)
	case o.BlockSize < minBlock || o.BlockSize&(o.BlockSize-1) != 0:
		return offer{}, fmt.Errorf("OFFER with block size %d, want a power of two of at least %d", o.BlockSize, minBlock)
	case o.MaxData < o.BlockSize || o.MaxData%o.BlockSize != 0:
		return offer{}, fmt.Errorf("OFFER with DATA of %d bytes, want a multiple of the block size %d", o.MaxData, o.BlockSize)
	case o.blocks() > maxBlocks:
		return offer{}, fmt.Errorf("OFFER of %d blocks, at most %d", o.blocks(), maxBlocks)
	case o.Flags&^flagDir != 0 || (o.Flags&flagDir != 0) != (o.ManifestLen > 0) || o.ManifestLen > maxManifest:
		return offer{}, fmt.Errorf("OFFER with flags %#x and a manifest of %d bytes", o.Flags, o.ManifestLen)
	}
	return o, nil
}

// state is which blocks a receiver holds, with each one's SHA-256.
type state struct {
	Have    bitmap
	Digests [][32]byte // one per block; zero where not held
}

func stateLen(blocks int) int { return headLen + 4 + (blocks+7)/8 + 32*blocks }

// encode writes only the digests of held blocks.
func (s *state) encode() []byte {
	n := len(s.Digests)
	b := make([]byte, headLen+4+len(s.Have), stateLen(n))
	putHead(b, kindState)
	be.PutUint32(b[8:], uint32(n))
	copy(b[12:], s.Have)
	for i := range n {
		if s.Have.has(i) {
			b = append(b, s.Digests[i][:]...)
		}
	}
	return b
}

func parseState(b []byte, blocks int) (state, error) {
	if err := parseHead(b, kindState); err != nil {
		return state{}, err
	}
	if len(b) < 12 || int(be.Uint32(b[8:])) != blocks {
		return state{}, fmt.Errorf("STATE not of %d blocks", blocks)
	}
	mapLen := (blocks + 7) / 8
	if len(b) < 12+mapLen {
		return state{}, errors.New("STATE truncated")
	}
	s := state{Have: bitmap(append([]byte(nil), b[12:12+mapLen]...)), Digests: make([][32]byte, blocks)}
	rest := b[12+mapLen:]
	for i := range blocks {
		if !s.Have.has(i) {
			continue
		}
		if len(rest) < 32 {
			return state{}, errors.New("STATE truncated")
		}
		s.Digests[i], rest = [32]byte(rest[:32]), rest[32:]
	}
	if len(rest) != 0 || s.Have.count() > blocks || mapLen > 0 && s.Have[mapLen-1]>>(uint(blocks-1)%8+1) != 0 {
		return state{}, errors.New("STATE has bits or digests past its blocks")
	}
	return s, nil
}

// plan is the sender's answer to a STATE: whether the receiver may keep
// the blocks it holds.
func encodePlan(reuse bool) []byte {
	b := make([]byte, planLen)
	putHead(b, kindPlan)
	if reuse {
		b[8] = 1
	}
	return b
}

func parsePlan(b []byte) (reuse bool, err error) {
	if err := parseHead(b, kindPlan); err != nil {
		return false, err
	}
	if len(b) != planLen || b[8] > 1 || !zero(b[9:]) {
		return false, errors.New("PLAN malformed")
	}
	return b[8] == 1, nil
}

// parseData returns a DATA's offset and payload.
func parseData(b []byte) (off int64, payload []byte, err error) {
	if err := parseHead(b, kindData); err != nil {
		return 0, nil, err
	}
	if len(b) < dataHead {
		return 0, nil, errors.New("DATA truncated")
	}
	return int64(be.Uint64(b[8:])), b[dataHead:], nil
}

func encodeEnd(size int64, digest [32]byte) []byte {
	b := make([]byte, endLen)
	putHead(b, kindEnd)
	be.PutUint64(b[8:], uint64(size))
	copy(b[16:], digest[:])
	return b
}

func parseEnd(b []byte) (size int64, digest [32]byte, err error) {
	if err := parseHead(b, kindEnd); err != nil {
		return 0, digest, err
	}
	if len(b) != endLen {
		return 0, digest, errors.New("END malformed")
	}
	return int64(be.Uint64(b[8:])), [32]byte(b[16:]), nil
}

// verdict is the receiver's last word.
type verdict struct {
	OK      bool
	Written int64 // bytes of the file the receiver holds, verified or not
	Resumed int64 // of them, bytes it held before this transfer
	Reason  string
}

func (v *verdict) encode() []byte {
	b := make([]byte, headLen+24, verdictLen)
	putHead(b, kindVerdict)
	if v.OK {
		b[8] = 1
	}
	be.PutUint64(b[16:], uint64(v.Written))
	be.PutUint64(b[24:], uint64(v.Resumed))
	r := v.Reason
	if len(r) > maxReason {
		r = r[:maxReason]
	}
	return append(b, r...)
}

func parseVerdict(b []byte) (verdict, error) {
	if err := parseHead(b, kindVerdict); err != nil {
		return verdict{}, err
	}
	if len(b) < headLen+24 || len(b) > verdictLen || b[8] > 1 || !zero(b[9:16]) {
		return verdict{}, errors.New("VERDICT malformed")
	}
	return verdict{OK: b[8] == 1, Written: int64(be.Uint64(b[16:])), Resumed: int64(be.Uint64(b[24:])), Reason: string(b[32:])}, nil
}

// bitmap is one bit per block.
type bitmap []byte

func newBitmap(n int) bitmap    { return make(bitmap, (n+7)/8) }
func (m bitmap) has(i int) bool { return m[i/8]&(1<<(i%8)) != 0 }
func (m bitmap) set(i int)      { m[i/8] |= 1 << (i % 8) }
func (m bitmap) count() (n int) {
	for _, b := range m {
		for ; b != 0; b &= b - 1 {
			n++
		}
	}
	return n
}

func zero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

func encodeManifestMsg(m []byte) []byte {
	b := make([]byte, headLen, headLen+len(m))
	putHead(b, kindManifest)
	return append(b, m...)
}
