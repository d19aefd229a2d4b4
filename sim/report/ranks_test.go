package report

import (
	"math"
	"testing"
)

func TestRankP(t *testing.T) {
	// Exact p-values from the U distribution's counts: for five against
	// five, P(U <= u) is 1, 2, 4, 7 in 252 for u = 0..3.
	cases := []struct {
		name string
		a, b []float64
		want float64
	}{
		{"five below five", []float64{1, 2, 3, 4, 5}, []float64{6, 7, 8, 9, 10}, 2.0 / 252},
		{"mirrored", []float64{6, 7, 8, 9, 10}, []float64{1, 2, 3, 4, 5}, 2.0 / 252},
		{"U = 2", []float64{1, 2, 3, 4, 7}, []float64{5, 6, 8, 9, 10}, 8.0 / 252},
		{"U = 3", []float64{1, 2, 3, 4, 8}, []float64{5, 6, 7, 9, 10}, 14.0 / 252},
		{"three below three", []float64{1, 2, 3}, []float64{4, 5, 6}, 2.0 / 20},
		// U = 6 of 16: P(U <= 6) is 24 in 70.
		{"interleaved", []float64{1, 3, 5, 7}, []float64{2, 4, 6, 8}, 48.0 / 70},
		// A tie counts half, and the exact test rounds U up: U = 0.5 is
		// taken as 1.
		{"one tie at the boundary", []float64{1, 2, 3, 4, 5}, []float64{5, 6, 7, 8, 9}, 4.0 / 252},
		{"empty", nil, []float64{1}, 1},
	}
	for _, c := range cases {
		if got := rankP(c.a, c.b); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: rankP = %.6f, want %.6f", c.name, got, c.want)
		}
	}
}

// TestRankPNormal: past exactRanks the normal approximation stands in
// for the count; at the largest exact size the two agree closely.
func TestRankPNormal(t *testing.T) {
	n := exactRanks / 2
	for _, shift := range []int{0, 3, 6, 10, 15} {
		a, b := make([]float64, n), make([]float64, n)
		for i := range n {
			a[i] = float64(2 * i)
			b[i] = float64(2*i + 1 + 2*shift)
		}
		exact := rankP(a, b)
		u := 0.0
		for _, x := range a {
			for _, y := range b {
				if x < y {
					u++
				}
			}
		}
		lo := min(u, float64(n*n)-u)
		normal := 2 * normalTail(lo, n, n, append(append([]float64{}, a...), b...))
		if math.Abs(exact-normal) > 0.005 {
			t.Errorf("shift %d: exact %.5f, normal %.5f", shift, exact, normal)
		}
	}
}

func TestTiedRuns(t *testing.T) {
	heavy := []float64{7.475, 2.234, 3.679, 0.579, 0.579} // one iteration meets the background
	fast := []float64{0.753, 0.571, 0.527, 0.512, 0.521}
	mixed := []float64{4.056, 4.479, 1.343, 6.669, 0.441}
	cases := []struct {
		name   string
		ma     float64
		a      []float64
		mb     float64
		b      []float64
		wanted bool
	}{
		// The means (0.577 against 2.909 ms) tie by two standard errors;
		// every run of one is below every run of the other.
		{"separated ranks", 0.527, fast, 2.234, heavy, false},
		{"mixed ranks", 4.056, mixed, 2.234, heavy, true},
		{"one run each, apart", 1, []float64{1}, 2, []float64{2}, false},
		{"one run each, within 1%", 1, []float64{1}, 1.005, []float64{1.005}, true},
		{"within 1% however ranked", 1, []float64{1, 1, 1}, 1.005, []float64{1.005, 1.005, 1.005}, true},
	}
	for _, c := range cases {
		if got := tiedRuns(c.ma, c.a, c.mb, c.b); got != c.wanted {
			t.Errorf("%s: tied = %v, want %v", c.name, got, c.wanted)
		}
	}
}
