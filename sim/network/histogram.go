package network

import "math/bits"

// Histogram counts non-negative values (durations, bytes) in logarithmic
// buckets, 16 to each power of two (within 6.25% of the value), in
// constant memory however many are added: what per-packet figures and
// samples over time need, where keeping every value would grow with the
// run. Mean and maximum are exact.
type Histogram struct {
	counts [64 * subBuckets]uint64
	n      uint64
	sum    float64
	max    int64
}

const subBits = 4
const subBuckets = 1 << subBits

// bucket returns d's bucket: exact below 16, then the position of the
// leading bit and the 4 bits after it.
func bucket(d int64) int {
	v := uint64(max(d, 0))
	if v < subBuckets {
		return int(v)
	}
	lead := bits.Len64(v) - 1
	return (lead-subBits+1)*subBuckets + int(v>>(lead-subBits)&(subBuckets-1))
}

// lower returns the smallest value in bucket i.
func lower(i int) int64 {
	if i < subBuckets {
		return int64(i)
	}
	lead := i/subBuckets + subBits - 1
	return int64(uint64(subBuckets+i%subBuckets) << (lead - subBits))
}

// Add counts v; negative values count as zero.
func (h *Histogram) Add(v int64) {
	v = max(v, 0)
	h.counts[bucket(v)]++
	h.n++
	h.sum += float64(v)
	h.max = max(h.max, v)
}

// Count returns how many values were added.
func (h *Histogram) Count() uint64 { return h.n }

// Mean returns the mean of the values added, or 0.
func (h *Histogram) Mean() float64 {
	if h.n == 0 {
		return 0
	}
	return h.sum / float64(h.n)
}

// Quantile returns the q-quantile (0..1): the middle of the bucket that
// holds it (never above the largest value), or the largest value for
// q = 1.
func (h *Histogram) Quantile(q float64) int64 {
	if h.n == 0 {
		return 0
	}
	if q >= 1 {
		return h.max
	}
	rank := uint64(q * float64(h.n))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen > rank {
			lo := lower(i)
			return min(lo+(lower(i+1)-lo)/2, h.max)
		}
	}
	return h.max
}

// Merge adds the values counted in o.
func (h *Histogram) Merge(o *Histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sum += o.sum
	h.max = max(h.max, o.max)
}
