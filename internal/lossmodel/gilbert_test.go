package lossmodel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestStepMatchesModel draws many packets and compares the loss rate and
// the mean burst length with the model's closed forms.
func TestStepMatchesModel(t *testing.T) {
	for _, tc := range []struct {
		name      string
		g         GilbertElliott
		meanBurst float64 // of consecutive losses; 0: not checked
	}{
		{"bursty 1% x4", Bursty(0.01, 4), 4},
		{"bursty 10% x2", Bursty(0.1, 2), 2},
		{"lossy good state", GilbertElliott{P: 0.05, R: 0.5, LossBad: 0.5, LossGood: 0.01}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			const n = 2_000_000
			bad, lostN, bursts, prev := false, 0, 0, false
			for range n {
				var lost bool
				lost, bad = tc.g.Step(bad, rng)
				if lost {
					lostN++
					if !prev {
						bursts++
					}
				}
				prev = lost
			}
			rate := float64(lostN) / n
			if want := tc.g.Rate(); math.Abs(rate-want) > 0.05*want {
				t.Errorf("loss rate %.5f, model %.5f", rate, want)
			}
			if tc.meanBurst > 0 {
				if got := float64(lostN) / float64(bursts); math.Abs(got-tc.meanBurst) > 0.05*tc.meanBurst {
					t.Errorf("mean burst %.2f packets, want %.2f", got, tc.meanBurst)
				}
			}
		})
	}
}
