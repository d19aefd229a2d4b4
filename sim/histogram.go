package sim

import (
	"math/bits"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// Histogram counts durations in logarithmic buckets, 16 to each power of
// two (within 6.25% of the value), in constant memory however many are
// added: what per-packet figures need, where keeping every sample would
// grow with the run.
type Histogram struct {
	counts [64 * subBuckets]uint64
	n      uint64
	max    monotime.Duration
}

const subBits = 4
const subBuckets = 1 << subBits

// bucket returns d's bucket: exact below 16 ps, then the position of the
// leading bit and the 4 bits after it.
func bucket(d monotime.Duration) int {
	v := uint64(max(d, 0))
	if v < subBuckets {
		return int(v)
	}
	lead := bits.Len64(v) - 1
	return (lead-subBits+1)*subBuckets + int(v>>(lead-subBits)&(subBuckets-1))
}

// lower returns the smallest duration in bucket i.
func lower(i int) monotime.Duration {
	if i < subBuckets {
		return monotime.Duration(i)
	}
	lead := i/subBuckets + subBits - 1
	return monotime.Duration(uint64(subBuckets+i%subBuckets) << (lead - subBits))
}

// Add counts d.
func (h *Histogram) Add(d monotime.Duration) {
	h.counts[bucket(d)]++
	h.n++
	h.max = max(h.max, d)
}

// Count returns how many durations were added.
func (h *Histogram) Count() uint64 { return h.n }

// Quantile returns the q-quantile (0..1): the middle of the bucket that
// holds it, or the largest duration added for q = 1.
func (h *Histogram) Quantile(q float64) monotime.Duration {
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
