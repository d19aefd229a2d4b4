package reliability

import "github.com/sdrnet/sdrnet/internal/monotime"

// RTT estimates a round-trip time from samples the way RFC 6298 does
// (smoothed mean and mean deviation, gains 1/8 and 1/4), and keeps the
// minimum. Before the first sample it reports the initial value it was
// given.
type RTT struct {
	smoothed, variation, minimum monotime.Duration
	samples                      int
}

// NewRTT returns an estimator that reports initial until it has a sample.
func NewRTT(initial monotime.Duration) RTT {
	return RTT{smoothed: initial, variation: initial / 2, minimum: initial}
}

// Update folds one sample in. Non-positive samples are ignored.
func (r *RTT) Update(sample monotime.Duration) {
	if sample <= 0 {
		return
	}
	if r.samples == 0 {
		r.smoothed, r.variation, r.minimum = sample, sample/2, sample
	} else {
		dev := r.smoothed - sample
		if dev < 0 {
			dev = -dev
		}
		r.variation += (dev - r.variation) / 4
		r.smoothed += (sample - r.smoothed) / 8
		r.minimum = min(r.minimum, sample)
	}
	r.samples++
}

// Smoothed returns the smoothed RTT.
func (r *RTT) Smoothed() monotime.Duration { return r.smoothed }

// Min returns the smallest sample seen.
func (r *RTT) Min() monotime.Duration { return r.minimum }

// Samples returns how many samples were folded in.
func (r *RTT) Samples() int { return r.samples }

// Conservative returns the smoothed RTT plus four deviations: a bound that
// a genuine round trip rarely exceeds, for timers whose firing is costly.
func (r *RTT) Conservative() monotime.Duration { return r.smoothed + 4*r.variation }
