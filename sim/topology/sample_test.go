package topology

import "testing"

// TestSeriesDownsamples feeds a series more samples than it has bins: it
// must keep at most SeriesBins bins, each the maximum of its samples.
func TestSeriesDownsamples(t *testing.T) {
	for _, n := range []int{1, SeriesBins, SeriesBins + 1, 5*SeriesBins + 3} {
		s := series{span: 1}
		for i := range n {
			s.add(int64(i % 97))
		}
		if len(s.max) > SeriesBins || (len(s.max)-1)*s.span+s.n != n {
			t.Fatalf("%d samples: %d bins of %d, %d in the last", n, len(s.max), s.span, s.n)
		}
		for k, got := range s.max {
			want := int64(0)
			for i := k * s.span; i < min((k+1)*s.span, n); i++ {
				want = max(want, int64(i%97))
			}
			if got != want {
				t.Errorf("%d samples: bin %d holds %d, want %d", n, k, got, want)
			}
		}
	}
}
