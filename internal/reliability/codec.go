package reliability

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"math/bits"

	"github.com/klauspost/reedsolomon"
)

// Default erasure-code parameters: (32,8) costs 20% extra bandwidth and
// tolerates drop rates above 1e-2 (SDR-RDMA's choice).
const (
	DefaultK = 32
	DefaultM = 8
	// MaxShards bounds K+M so a stripe's present shards fit in a uint64.
	MaxShards = 64
)

// ErrTooFewShards says a stripe cannot be decoded from what arrived.
var ErrTooFewShards = errors.New("reliability: too few shards to decode")

// Codec is an erasure code over one stripe: K data shards followed by M
// parity shards, all the same length. Shard i is present when bit i of a
// presence mask is set.
type Codec interface {
	K() int
	M() int
	// Encode computes shards[K:] from shards[:K].
	Encode(shards [][]byte) error
	// Decodable reports whether the data shards can be recovered from the
	// shards present in mask.
	Decodable(present uint64) bool
	// Reconstruct fills the missing data shards. A missing shard has
	// length zero and capacity for a full shard; present ones are full.
	Reconstruct(shards [][]byte, present uint64) error
}

func checkKM(k, m int) error {
	if k < 1 || m < 1 || k+m > MaxShards {
		return fmt.Errorf("need 1 <= K, 1 <= M and K+M <= %d, got K=%d M=%d", MaxShards, k, m)
	}
	return nil
}

// MDS is a Reed-Solomon code: any K of the K+M shards recover the data.
type MDS struct {
	k, m int
	enc  reedsolomon.Encoder
}

// NewMDS returns a Reed-Solomon (k,m) code.
func NewMDS(k, m int) (*MDS, error) {
	if err := checkKM(k, m); err != nil {
		return nil, err
	}
	// One goroutine: the caller already runs one codec per connection, and
	// extra goroutines make the core's cost depend on the scheduler.
	enc, err := reedsolomon.New(k, m, reedsolomon.WithMaxGoroutines(1))
	if err != nil {
		return nil, err
	}
	return &MDS{k: k, m: m, enc: enc}, nil
}

// K implements Codec.
func (c *MDS) K() int { return c.k }

// M implements Codec.
func (c *MDS) M() int { return c.m }

// Encode implements Codec.
func (c *MDS) Encode(shards [][]byte) error { return c.enc.Encode(shards) }

// Decodable implements Codec.
func (c *MDS) Decodable(present uint64) bool {
	return bits.OnesCount64(present&(1<<(c.k+c.m)-1)) >= c.k
}

// Reconstruct implements Codec.
func (c *MDS) Reconstruct(shards [][]byte, present uint64) error {
	if !c.Decodable(present) {
		return ErrTooFewShards
	}
	for i := range shards {
		if present&(1<<i) == 0 {
			shards[i] = shards[i][:0]
		}
	}
	return c.enc.ReconstructData(shards)
}

// XOR is the cheap code of SDR-RDMA: parity i is the XOR of the data shards
// j with j mod M == i, so each of the M groups survives one lost shard.
type XOR struct {
	k, m int
	// groups[i] has a bit for each shard (data and parity) in group i.
	groups []uint64
}

// NewXOR returns an XOR (k,m) code.
func NewXOR(k, m int) (*XOR, error) {
	if err := checkKM(k, m); err != nil {
		return nil, err
	}
	if m > k {
		return nil, fmt.Errorf("XOR needs M <= K, got K=%d M=%d", k, m)
	}
	x := &XOR{k: k, m: m, groups: make([]uint64, m)}
	for j := range k {
		x.groups[j%m] |= 1 << j
	}
	for i := range m {
		x.groups[i] |= 1 << (k + i)
	}
	return x, nil
}

// K implements Codec.
func (x *XOR) K() int { return x.k }

// M implements Codec.
func (x *XOR) M() int { return x.m }

// Encode implements Codec.
func (x *XOR) Encode(shards [][]byte) error {
	for i := range x.m {
		p := shards[x.k+i]
		clear(p)
		for j := i; j < x.k; j += x.m {
			xorInto(p, shards[j])
		}
	}
	return nil
}

// Decodable implements Codec.
func (x *XOR) Decodable(present uint64) bool {
	for _, g := range x.groups {
		if bits.OnesCount64(g&^present) > 1 {
			return false
		}
	}
	return true
}

// Reconstruct implements Codec.
func (x *XOR) Reconstruct(shards [][]byte, present uint64) error {
	if !x.Decodable(present) {
		return ErrTooFewShards
	}
	for i, g := range x.groups {
		missing := g &^ present
		if missing == 0 {
			continue
		}
		lost := bits.TrailingZeros64(missing)
		if lost >= x.k {
			continue // only the parity is gone: the data is whole
		}
		dst := shards[lost][:len(shards[x.k+i])]
		copy(dst, shards[x.k+i])
		for j := i; j < x.k; j += x.m {
			if j != lost {
				xorInto(dst, shards[j])
			}
		}
		shards[lost] = dst
	}
	return nil
}

// xorInto sets dst ^= src; crypto/subtle has the vectorized loop.
func xorInto(dst, src []byte) { subtle.XORBytes(dst, dst, src) }
