package reliability

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
)

// codecKinds lets every test run against both codes with one table.
var codecKinds = []struct {
	name string
	xor  bool
	make func(k, m int) (Codec, error)
}{
	{"mds", false, func(k, m int) (Codec, error) { return NewMDS(k, m) }},
	{"xor", true, func(k, m int) (Codec, error) { return NewXOR(k, m) }},
}

// allPresent is the mask with the first n shards present.
func allPresent(n int) uint64 { return ^uint64(0) >> (64 - n) }

// canDecode is an oracle written from the codes' definitions, independent
// of the implementation's group masks: MDS recovers from any k shards; XOR
// group i (data j with j mod m == i, plus parity i) survives one erasure.
func canDecode(xor bool, k, m int, present uint64) bool {
	if !xor {
		return bits.OnesCount64(present&allPresent(k+m)) >= k
	}
	for i := range m {
		missing := 0
		if present&(1<<(k+i)) == 0 {
			missing++
		}
		for j := i; j < k; j += m {
			if present&(1<<j) == 0 {
				missing++
			}
		}
		if missing > 1 {
			return false
		}
	}
	return true
}

// erasePatterns returns presence masks worth testing for a (k,m) code. Small
// codes get every mask; large ones get the cases on both sides of each
// code's capability plus random ones.
func erasePatterns(k, m int, rng *rand.Rand) []uint64 {
	n := k + m
	full := allPresent(n)
	if n <= 13 {
		masks := make([]uint64, 0, 1<<n)
		for p := uint64(0); p <= full; p++ {
			masks = append(masks, p)
		}
		return masks
	}
	masks := []uint64{full, full &^ allPresent(k), full &^ (full &^ allPresent(k))}
	for i := range n {
		masks = append(masks, full&^(1<<i))
	}
	erase := func(p uint64, e int) uint64 {
		for _, i := range rng.Perm(n)[:e] {
			p &^= 1 << i
		}
		return p
	}
	for range 200 {
		masks = append(masks, erase(full, m), erase(full, m+1), erase(full, rng.IntN(n+1)))
	}
	// XOR's best case at exactly m erasures is one per group; a second
	// erasure anywhere then breaks a group (and MDS's bound).
	for range 50 {
		p := full
		for i := range m {
			members := []int{k + i}
			for j := i; j < k; j += m {
				members = append(members, j)
			}
			p &^= 1 << members[rng.IntN(len(members))]
		}
		masks = append(masks, p, erase(p, 1))
	}
	// Two erasures in one group: fine for MDS, fatal for XOR.
	if k > m {
		masks = append(masks, full&^(1|1<<m))
	}
	return masks
}

func randomShards(rng *rand.Rand, k, m, size int) [][]byte {
	shards := make([][]byte, k+m)
	for i := range shards {
		shards[i] = make([]byte, size)
		if i < k {
			for b := range shards[i] {
				shards[i][b] = byte(rng.Uint32())
			}
		} else {
			// Encode must overwrite stale parity, not fold into it.
			for b := range shards[i] {
				shards[i][b] = 0x5a
			}
		}
	}
	return shards
}

var codecShapes = []struct{ k, m int }{{32, 8}, {4, 2}, {1, 1}, {10, 3}, {48, 16}}

func TestCodecReconstruct(t *testing.T) {
	for _, kind := range codecKinds {
		for _, shape := range codecShapes {
			for _, size := range []int{4096, 1000, 1} {
				k, m := shape.k, shape.m
				t.Run(fmt.Sprintf("%s/%d,%d/%dB", kind.name, k, m, size), func(t *testing.T) {
					c, err := kind.make(k, m)
					if err != nil {
						t.Fatal(err)
					}
					if c.K() != k || c.M() != m {
						t.Fatalf("K,M = %d,%d, want %d,%d", c.K(), c.M(), k, m)
					}
					rng := rand.New(rand.NewPCG(uint64(k), uint64(m*size)))
					orig := randomShards(rng, k, m, size)
					data := make([][]byte, k)
					for i := range data {
						data[i] = bytes.Clone(orig[i])
					}
					if err := c.Encode(orig); err != nil {
						t.Fatal(err)
					}
					for i := range data {
						if !bytes.Equal(orig[i], data[i]) {
							t.Fatalf("Encode modified data shard %d", i)
						}
					}
					if kind.xor {
						checkXORParity(t, k, m, orig)
					}
					backing := make([][]byte, k+m)
					for i := range backing {
						backing[i] = make([]byte, size)
					}
					shards := make([][]byte, k+m)
					for _, present := range erasePatterns(k, m, rng) {
						checkOneReconstruct(t, c, kind.xor, orig, backing, shards, present)
					}
				})
			}
		}
	}
}

// checkXORParity recomputes parity byte by byte from the definition, so an
// error shared by Encode and Reconstruct cannot cancel out.
func checkXORParity(t *testing.T, k, m int, shards [][]byte) {
	t.Helper()
	for i := range m {
		for b := range shards[k+i] {
			var want byte
			for j := i; j < k; j += m {
				want ^= shards[j][b]
			}
			if shards[k+i][b] != want {
				t.Fatalf("parity %d byte %d = %#x, want %#x", i, b, shards[k+i][b], want)
			}
		}
	}
}

func checkOneReconstruct(t *testing.T, c Codec, xor bool, orig, backing, shards [][]byte, present uint64) {
	t.Helper()
	k, m := c.K(), c.M()
	size := len(orig[0])
	for i := range shards {
		buf := backing[i][:size]
		if present&(1<<i) != 0 {
			copy(buf, orig[i])
			shards[i] = buf
		} else {
			// Garbage proves the result was written, not left over.
			for b := range buf {
				buf[b] = 0xa5
			}
			shards[i] = buf[:0]
		}
	}
	want := canDecode(xor, k, m, present)
	if got := c.Decodable(present); got != want {
		t.Fatalf("Decodable(%#x) = %v, want %v", present, got, want)
	}
	err := c.Reconstruct(shards, present)
	if !want {
		if !errors.Is(err, ErrTooFewShards) {
			t.Fatalf("Reconstruct(%#x) = %v, want ErrTooFewShards", present, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Reconstruct(%#x): %v", present, err)
	}
	for i := range k {
		if !bytes.Equal(shards[i], orig[i]) {
			t.Fatalf("mask %#x: data shard %d differs after Reconstruct", present, i)
		}
		// The core hands out receive-buffer slices; a copy elsewhere
		// would leave the application's buffer with the hole.
		if &shards[i][0] != &backing[i][0] {
			t.Fatalf("mask %#x: data shard %d not reconstructed in place", present, i)
		}
	}
	for i := range k + m {
		if present&(1<<i) != 0 && !bytes.Equal(backing[i][:size], orig[i]) {
			t.Fatalf("mask %#x: present shard %d was modified", present, i)
		}
	}
}

// TestCodecDecodable covers masks up to bit 63 and more of them than the
// reconstruct test can afford.
func TestCodecDecodable(t *testing.T) {
	shapes := []struct{ k, m int }{{32, 8}, {32, 32}, {63, 1}, {48, 16}, {2, 1}}
	for _, kind := range codecKinds {
		for _, shape := range shapes {
			k, m := shape.k, shape.m
			t.Run(fmt.Sprintf("%s/%d,%d", kind.name, k, m), func(t *testing.T) {
				c, err := kind.make(k, m)
				if err != nil {
					t.Skipf("%s does not support (%d,%d): %v", kind.name, k, m, err)
				}
				n := k + m
				rng := rand.New(rand.NewPCG(uint64(k), uint64(m)))
				for range 20000 {
					present := allPresent(n)
					// Few erasures dominate at real drop rates, and the
					// boundary sits at m; uniform masks would all fail.
					for _, i := range rng.Perm(n)[:rng.IntN(2*m+2)%(n+1)] {
						present &^= 1 << i
					}
					if got, want := c.Decodable(present), canDecode(kind.xor, k, m, present); got != want {
						t.Fatalf("Decodable(%#x) = %v, want %v", present, got, want)
					}
				}
			})
		}
	}
}

func TestXORWidest(t *testing.T) {
	// (32,32) is the extreme XOR shape: every group is one data shard and
	// its parity, and parity 31 is bit 63.
	x, err := NewXOR(32, 32)
	if err != nil {
		t.Fatal(err)
	}
	present := allPresent(64) &^ (1 << 31)
	if !x.Decodable(present) {
		t.Errorf("XOR(32,32) lost data 31 only: not decodable")
	}
	if x.Decodable(present &^ (1 << 63)) {
		t.Errorf("XOR(32,32) lost data 31 and parity 31: decodable")
	}
}

func TestNewCodecErrors(t *testing.T) {
	tests := []struct {
		kind    string
		k, m    int
		wantErr string // substring; empty means success
	}{
		{"mds", 0, 1, "1 <= K"},
		{"mds", -1, 1, "1 <= K"},
		{"mds", 1, 0, "1 <= M"},
		{"mds", 4, -2, "1 <= M"},
		{"mds", 33, 32, "K+M <= 64"},
		{"mds", 64, 1, "K+M <= 64"},
		{"mds", 60, 10, "K+M <= 64"},
		{"mds", 63, 1, ""},
		{"mds", 1, 63, ""},
		{"mds", 1, 1, ""},
		{"xor", 0, 1, "1 <= K"},
		{"xor", 1, 0, "1 <= M"},
		{"xor", 33, 32, "K+M <= 64"},
		{"xor", 2, 3, "M <= K"},
		{"xor", 1, 63, "M <= K"},
		{"xor", 32, 32, ""},
		{"xor", 63, 1, ""},
		{"xor", 1, 1, ""},
	}
	for _, tt := range tests {
		var err error
		if tt.kind == "mds" {
			_, err = NewMDS(tt.k, tt.m)
		} else {
			_, err = NewXOR(tt.k, tt.m)
		}
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("New%s(%d,%d): %v", strings.ToUpper(tt.kind), tt.k, tt.m, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("New%s(%d,%d) error = %v, want one mentioning %q", strings.ToUpper(tt.kind), tt.k, tt.m, err, tt.wantErr)
		}
	}
}

// TestShortParity: a sub-message of n data shards gets ceil(n*M/K) parity
// shards, at least one, so parity never exceeds M/K of the data (plus the
// one shard a tiny message needs).
func TestShortParity(t *testing.T) {
	c, err := NewMDS(32, 8)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ n, want int }{{1, 1}, {2, 1}, {4, 1}, {5, 2}, {8, 2}, {16, 4}, {31, 8}, {32, 8}} {
		if got := ParityFor(32, 8, tt.n); got != tt.want {
			t.Errorf("ParityFor(%d) = %d, want %d", tt.n, got, tt.want)
		}
		if got := c.Short(tt.n).M(); got != tt.want || c.Short(tt.n).K() != 32 {
			t.Errorf("Short(%d) is (%d,%d), want (32,%d)", tt.n, c.Short(tt.n).K(), got, tt.want)
		}
	}
	if c.Short(32) != Codec(c) || c.Short(3) != c.Short(4) {
		t.Error("Short builds a code again instead of keeping it")
	}
}

// TestShortReconstruct: a shortened code, its absent data shards given as
// present zeros, recovers what its definition says it can (any
// ParityFor(n) losses for MDS; one per group for XOR) of the n real data
// shards and its parity.
func TestShortReconstruct(t *testing.T) {
	const k, m, size = 32, 8, 64
	for _, kind := range codecKinds {
		full, err := kind.make(k, m)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 3, 4, 9, 17, 31} {
			t.Run(fmt.Sprintf("%s/n=%d", kind.name, n), func(t *testing.T) {
				c := full.Short(n)
				p := c.M()
				rng := rand.New(rand.NewPCG(uint64(n), 7))
				orig := randomShards(rng, k, p, size)
				for i := n; i < k; i++ {
					clear(orig[i])
				}
				if err := c.Encode(orig); err != nil {
					t.Fatal(err)
				}
				backing := make([][]byte, k+p)
				for i := range backing {
					backing[i] = make([]byte, size)
				}
				shards := make([][]byte, k+p)
				zeros := allPresent(k) &^ allPresent(n)
				for range 300 {
					// Erase 1..p+1 of the real shards: up to one past
					// what MDS can take.
					present := allPresent(k + p)
					for range 1 + rng.IntN(p+1) {
						i := rng.IntN(n + p)
						if i >= n {
							i += k - n
						}
						present &^= 1 << i
					}
					checkOneReconstruct(t, c, kind.xor, orig, backing, shards, present|zeros)
				}
			})
		}
	}
}
