package reliability

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"

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
	// Short returns the code of a sub-message that holds only n of the K
	// data shards (1 <= n <= K; the last sub-message of a message): the
	// same kind of code with ParityFor(n) parity shards, so parity stays
	// in proportion to the data (SDR-RDMA's model charges ceil(M/R)
	// parity chunks, R = K/M). The layout is unchanged: data shards
	// [0,K), of which [n,K) are absent zeros the caller treats as
	// present, then the parity. Short(K) is the code itself. Safe for
	// concurrent use; each shortened code is built once.
	Short(n int) Codec
}

// ParityFor returns how many parity shards a (k,m) code gives a
// sub-message of n data shards: m for a full one, ceil(n*m/k) (at least 1)
// for a short one.
func ParityFor(k, m, n int) int { return max(1, (n*m+k-1)/k) }

// shortCodes builds and keeps a code's shortened forms, one per parity
// count below M, lock-free: two goroutines may both build one, and one
// of the two is kept.
type shortCodes[C Codec] struct {
	by [MaxShards]atomic.Pointer[C]
}

func (s *shortCodes[C]) get(self C, n int, build func(k, m int) (C, error)) Codec {
	k, m := self.K(), self.M()
	if n < 1 || n > k {
		panic(fmt.Sprintf("reliability: Short(%d) of a (%d,%d) code", n, k, m))
	}
	p := ParityFor(k, m, n)
	if p == m {
		return self
	}
	if c := s.by[p].Load(); c != nil {
		return *c
	}
	c, err := build(k, p)
	if err != nil { // (k,p) with p < m is valid wherever (k,m) is
		panic(fmt.Sprintf("reliability: shortened (%d,%d) code: %v", k, p, err))
	}
	s.by[p].CompareAndSwap(nil, &c)
	return *s.by[p].Load()
}

func checkKM(k, m int) error {
	if k < 1 || m < 1 || k+m > MaxShards {
		return fmt.Errorf("need 1 <= K, 1 <= M and K+M <= %d, got K=%d M=%d", MaxShards, k, m)
	}
	return nil
}

// MDS is a Reed-Solomon code: any K of the K+M shards recover the data.
type MDS struct {
	k, m  int
	enc   reedsolomon.Encoder
	short *shortCodes[*MDS]
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
	return &MDS{k: k, m: m, enc: enc, short: new(shortCodes[*MDS])}, nil
}

// Short implements Codec: a (K, ceil(n*M/K)) Reed-Solomon code, whose K-n
// known zero shards leave it able to recover any ceil(n*M/K) lost shards
// of the n+ceil(n*M/K) sent.
func (c *MDS) Short(n int) Codec { return c.short.get(c, n, NewMDS) }

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
	short  *shortCodes[*XOR]
}

// NewXOR returns an XOR (k,m) code.
func NewXOR(k, m int) (*XOR, error) {
	if err := checkKM(k, m); err != nil {
		return nil, err
	}
	if m > k {
		return nil, fmt.Errorf("XOR needs M <= K, got K=%d M=%d", k, m)
	}
	x := &XOR{k: k, m: m, groups: make([]uint64, m), short: new(shortCodes[*XOR])}
	for j := range k {
		x.groups[j%m] |= 1 << j
	}
	for i := range m {
		x.groups[i] |= 1 << (k + i)
	}
	return x, nil
}

// Short implements Codec: an XOR (K, ceil(n*M/K)) code, whose groups
// j mod ceil(n*M/K) each hold about K/M of the n data shards, as the full
// code's do.
func (x *XOR) Short(n int) Codec { return x.short.get(x, n, NewXOR) }

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
