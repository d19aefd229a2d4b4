package coretest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// TestLinkImpairments checks the link against what its configuration
// promises: loss rates, burst lengths and serialization delay.
func TestLinkImpairments(t *testing.T) {
	const n = 200_000
	tests := []struct {
		name      string
		cfg       LinkConfig
		wantLoss  float64
		wantBurst float64 // mean run of consecutive losses; 0: not checked
	}{
		{"bernoulli 1%", LinkConfig{Loss: 0.01}, 0.01, 1 / 0.99},
		{"bursty 10% x4", LinkConfig{Burst: Bursty(0.1, 4)}, 0.1, 4},
		{"bursty 1% x2", LinkConfig{Burst: Bursty(0.01, 2)}, 0.01, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := &link{cfg: tt.cfg, rng: rand.New(rand.NewPCG(1, 2))}
			lost, runs, run := 0, 0, 0
			for range n {
				if l.lost() {
					lost++
					run++
				} else if run > 0 {
					runs++
					run = 0
				}
			}
			got := float64(lost) / n
			if sigma := math.Sqrt(tt.wantLoss * (1 - tt.wantLoss) / n); math.Abs(got-tt.wantLoss) > 6*sigma*tt.wantBurst {
				t.Errorf("loss rate %.4f, want %.4f", got, tt.wantLoss)
			}
			if burst := float64(lost) / float64(runs); math.Abs(burst-tt.wantBurst)/tt.wantBurst > 0.1 {
				t.Errorf("mean burst %.2f packets, want %.2f", burst, tt.wantBurst)
			}
		})
	}
}

func TestLinkTiming(t *testing.T) {
	l := &link{cfg: LinkConfig{Delay: 5 * monotime.Microsecond, Rate: 8e9}, rng: rand.New(rand.NewPCG(1, 2))}
	hdr, payload := make([]byte, 32), make([]byte, 968) // 1000 bytes: 1 us at 8 Gbit/s
	for range 3 {
		l.send(0, 0, hdr, payload)
	}
	for i := range 3 {
		want := monotime.Time(i+1)*monotime.Time(monotime.Microsecond) + monotime.Time(5*monotime.Microsecond)
		if got := l.pop(); got.at != want || len(got.buf) != 1000 {
			t.Fatalf("packet %d arrives at %v with %d bytes, want %v and 1000", i, monotime.Duration(got.at), len(got.buf), monotime.Duration(want))
		}
	}
}
