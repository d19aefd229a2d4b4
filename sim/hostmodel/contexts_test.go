package hostmodel

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

func TestContextCacheLRU(t *testing.T) {
	for _, tt := range []struct {
		name    string
		entries int
		keys    []uint64
		misses  []bool
	}{
		{"fits", 2, []uint64{1, 2, 1, 2, 1}, []bool{true, true, false, false, false}},
		{"evicts the least recent", 2, []uint64{1, 2, 1, 3, 1, 2}, []bool{true, true, false, true, false, true}},
		{"one entry", 1, []uint64{1, 1, 2, 1}, []bool{true, false, true, true}},
		{"cycle larger than the cache", 3, []uint64{1, 2, 3, 4, 1, 2, 3, 4}, []bool{true, true, true, true, true, true, true, true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := NewContextCache(tt.entries, 700*monotime.Nanosecond)
			for i, k := range tt.keys {
				if stall := c.Touch(k); (stall > 0) != tt.misses[i] || stall != 0 && stall != c.Miss {
					t.Errorf("touch %d (key %d): stall %v, want a miss: %v", i, k, stall, tt.misses[i])
				}
			}
			want := 0
			for _, m := range tt.misses {
				if m {
					want++
				}
			}
			if c.Misses != uint64(want) || c.Hits != uint64(len(tt.keys)-want) || c.Stall != monotime.Duration(want)*c.Miss {
				t.Errorf("misses %d hits %d stall %v, want %d misses", c.Misses, c.Hits, c.Stall, want)
			}
		})
	}
}

func BenchmarkContextCacheTouch(b *testing.B) {
	c := NewContextCache(1024, monotime.Microsecond)
	b.ReportAllocs()
	for i := range b.N {
		c.Touch(uint64(i*7919) % 1500) // a working set a little larger than the cache
	}
}
