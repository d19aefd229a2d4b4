package core

import (
	"math/rand/v2"
	"testing"
)

// TestLossCountsForget: the loss estimate follows a rate that rose or
// fell, and forgets a handful of early losses once the clean packets
// after them would have shown several more at that rate; a steady rare
// rate keeps its measure.
func TestLossCountsForget(t *testing.T) {
	run := func(l *lossCounts, rng *rand.Rand, rate float64, packets int) {
		for range packets / 256 {
			for range 256 {
				if rng.Float64() < rate {
					l.blockLost++
				}
			}
			l.noteResolved(256)
		}
	}
	rate := func(l *lossCounts) float64 {
		lost, sent := l.counts()
		return lost / sent
	}
	for _, tc := range []struct {
		name   string
		phases [][2]float64 // loss rate, packets
		lo, hi float64      // the estimate at the end
	}{
		{"a few early losses, then none", [][2]float64{{1e-3, 4096}, {0, 1 << 20}}, 0, 0},
		{"steady 1e-4", [][2]float64{{1e-4, 1 << 21}}, 0.6e-4, 1.5e-4},
		{"steady 1e-5", [][2]float64{{1e-5, 1 << 22}}, 0.3e-5, 2e-5},
		{"2% then none", [][2]float64{{0.02, 1 << 16}, {0, 1 << 16}}, 0, 0},
		{"none then 2%", [][2]float64{{0, 1 << 20}, {0.02, 1 << 14}}, 0.015, 0.025},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := &lossCounts{}
			rng := rand.New(rand.NewPCG(1, 2))
			for _, ph := range tc.phases {
				run(l, rng, ph[0], int(ph[1]))
			}
			if r := rate(l); r < tc.lo || r > tc.hi {
				t.Errorf("estimate %.3g, want %.3g..%.3g", r, tc.lo, tc.hi)
			}
		})
	}
}
