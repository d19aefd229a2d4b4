package minheap

import (
	"math/rand/v2"
	"slices"
	"testing"
)

type byKey struct{ key, seq int }

func (a byKey) Before(b byKey) bool { return a.key < b.key || a.key == b.key && a.seq < b.seq }

// TestOrder: whatever order elements are pushed in, and however pushes
// and pops interleave, pops come out least first.
func TestOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []int
	}{
		{"empty", nil},
		{"one", []int{5}},
		{"ascending", []int{1, 2, 3, 4, 5, 6, 7}},
		{"descending", []int{9, 8, 7, 6, 5, 4, 3, 2, 1}},
		{"ties", []int{4, 4, 1, 9, 4, 1, 7, 7, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h []byKey
			for i, k := range tc.keys {
				Push(&h, byKey{k, i})
			}
			want := slices.Clone(tc.keys)
			slices.Sort(want)
			for i, w := range want {
				if got := Pop(&h); got.key != w {
					t.Fatalf("pop %d: %d, want %d", i, got.key, w)
				}
			}
			if len(h) != 0 {
				t.Fatalf("%d left", len(h))
			}
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var h []byKey
	var shadow []byKey
	for i := range 10000 {
		if len(h) > 0 && rng.IntN(3) == 0 {
			got := Pop(&h)
			slices.SortFunc(shadow, func(a, b byKey) int {
				if a.Before(b) {
					return -1
				}
				return 1
			})
			if got != shadow[0] {
				t.Fatalf("step %d: popped %v, want %v", i, got, shadow[0])
			}
			shadow = shadow[1:]
			continue
		}
		x := byKey{rng.IntN(100), i}
		Push(&h, x)
		shadow = append(shadow, x)
	}
}

func BenchmarkPushPop(b *testing.B) {
	h := make([]byKey, 0, 1024)
	for i := range 1000 {
		Push(&h, byKey{i * 7919 % 1000, i})
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		Push(&h, byKey{i % 1000, i})
		Pop(&h)
	}
}
