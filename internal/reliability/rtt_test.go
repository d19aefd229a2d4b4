package reliability

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

func TestRTTInitial(t *testing.T) {
	const initial = 100 * monotime.Millisecond
	r := NewRTT(initial)
	if r.Smoothed() != initial || r.Min() != initial || r.Samples() != 0 {
		t.Fatalf("fresh RTT: smoothed %v min %v samples %d, want %v %v 0", r.Smoothed(), r.Min(), r.Samples(), initial, initial)
	}
	// Variation starts at initial/2 as RFC 6298 prescribes for the first
	// measurement, so timers armed before any sample are generous.
	if got := r.Conservative(); got != 3*initial {
		t.Errorf("fresh Conservative() = %v, want %v", got, 3*initial)
	}
	// Junk samples (clock steps, echoes of a reused sequence number) must
	// not replace the initial guess.
	for _, bad := range []monotime.Duration{0, -1, -initial} {
		r.Update(bad)
	}
	if r.Smoothed() != initial || r.Min() != initial || r.Samples() != 0 || r.Conservative() != 3*initial {
		t.Errorf("after non-positive samples: smoothed %v min %v samples %d conservative %v, want unchanged",
			r.Smoothed(), r.Min(), r.Samples(), r.Conservative())
	}
}

// TestRTTSequence checks RFC 6298 arithmetic step by step. Expected values
// were worked out by hand (in microseconds) with RTTVAR updated from the
// old SRTT before SRTT moves, as section 2.3 orders it:
//
//	RTTVAR += (|SRTT - R| - RTTVAR) / 4
//	SRTT   += (R - SRTT) / 8
func TestRTTSequence(t *testing.T) {
	const us = monotime.Microsecond
	steps := []struct {
		sample       monotime.Duration
		smoothed     monotime.Duration
		min          monotime.Duration
		conservative monotime.Duration // smoothed + 4*variation
	}{
		// The first sample replaces the initial guess outright, min
		// included, even though it is larger than the guess.
		{800 * us, 800 * us, 800 * us, 800*us + 4*400*us},
		// dev 400, var 400 + (400-400)/4 = 400, srtt 800 + (400-800)/8 = 750.
		{400 * us, 750 * us, 400 * us, 750*us + 4*400*us},
		// dev 800, var 400 + (800-400)/4 = 500, srtt 750 + 800/8 = 850.
		{1550 * us, 850 * us, 400 * us, 850*us + 4*500*us},
		// dev 0, var 500 - 500/4 = 375, srtt unchanged.
		{850 * us, 850 * us, 400 * us, 850*us + 4*375*us},
		// dev 800, var 375 + 425/4 = 481.25, srtt 850 - 800/8 = 750.
		{50 * us, 750 * us, 50 * us, 750*us + 4*481250*monotime.Nanosecond},
		// Ignored: nothing moves.
		{0, 750 * us, 50 * us, 750*us + 4*481250*monotime.Nanosecond},
		// dev 0, var 481.25 - 481.25/4 = 360.9375, srtt unchanged.
		{750 * us, 750 * us, 50 * us, 750*us + 4*360937500*monotime.Picosecond},
	}
	r := NewRTT(10 * us)
	samples := 0
	for i, s := range steps {
		r.Update(s.sample)
		if s.sample > 0 {
			samples++
		}
		if r.Smoothed() != s.smoothed || r.Min() != s.min || r.Conservative() != s.conservative || r.Samples() != samples {
			t.Fatalf("after sample %d (%v): smoothed %v min %v conservative %v samples %d, want %v %v %v %d",
				i, s.sample, r.Smoothed(), r.Min(), r.Conservative(), r.Samples(), s.smoothed, s.min, s.conservative, samples)
		}
	}
}

// TestRTTConverges guards the gain: after a step change the estimate must
// close 1/8 of the remaining gap per sample, i.e. 7/8 decay.
func TestRTTConverges(t *testing.T) {
	const us = monotime.Microsecond
	r := NewRTT(0)
	r.Update(1000 * us)
	gap := 8000 * us
	for range 20 {
		r.Update(9000 * us)
		gap -= gap / 8
		if got := 9000*us - r.Smoothed(); got != gap {
			t.Fatalf("gap %v, want %v", got, gap)
		}
	}
	if r.Min() != 1000*us {
		t.Errorf("Min() = %v, want the old low sample %v", r.Min(), 1000*us)
	}
}
