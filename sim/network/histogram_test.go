package network

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

func TestHistogramBuckets(t *testing.T) {
	for _, d := range []int64{0, 1, 15, 16, 17, 31, 32, 1000, 123456789, 1 << 50} {
		i := bucket(d)
		if lo, hi := lower(i), lower(i+1); d < lo || d >= hi {
			t.Errorf("%d in bucket %d = [%d, %d)", d, i, lo, hi)
		}
	}
}

// TestHistogramQuantiles checks quantiles against the sorted samples of
// a wide (log-normal) distribution: within the 6.25% a bucket spans.
func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	var all []int64
	var sum float64
	for range 100000 {
		d := int64(float64(monotime.Microsecond) * rng.ExpFloat64() * rng.ExpFloat64() * 10)
		h.Add(d)
		all = append(all, d)
		sum += float64(d)
	}
	if h.Mean() != sum/float64(len(all)) {
		t.Errorf("mean %g, exact %g", h.Mean(), sum/float64(len(all)))
	}
	slices.Sort(all)
	for _, q := range []float64{0.1, 0.5, 0.9, 0.99, 0.999} {
		want := all[int(q*float64(len(all)))]
		if got := h.Quantile(q); float64(got) < 0.94*float64(want) || float64(got) > 1.07*float64(want) {
			t.Errorf("q%.3f: %v, exact %v", q, got, want)
		}
	}
	if h.Quantile(1) != all[len(all)-1] || h.Count() != uint64(len(all)) {
		t.Errorf("max %v count %d", h.Quantile(1), h.Count())
	}
}

// TestHistogramMerge: two histograms merged answer as one that counted
// both sets of values.
func TestHistogramMerge(t *testing.T) {
	var a, b, both Histogram
	for v := range int64(1000) {
		h := &a
		if v%3 == 0 {
			h = &b
		}
		h.Add(v * v)
		both.Add(v * v)
	}
	a.Merge(&b)
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
		if a.Quantile(q) != both.Quantile(q) {
			t.Errorf("q%v: merged %d, counted together %d", q, a.Quantile(q), both.Quantile(q))
		}
	}
	if a.Count() != both.Count() || a.Mean() != both.Mean() {
		t.Errorf("merged: %d values, mean %v; together %d, mean %v", a.Count(), a.Mean(), both.Count(), both.Mean())
	}
}
