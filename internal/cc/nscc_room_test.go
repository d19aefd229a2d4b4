package cc

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// TestNSCCAckRoom: on a real host, past slow start, the window admits
// what the pacer sends while ACKs run late: the mean delay's excess over
// the standing queue, at the pacing rate, and a chunk for the core's
// whole-chunk admission; never past the maximum window. Nothing in slow
// start, in the competitive mode, without lateness or in simulation.
func TestNSCCAckRoom(t *testing.T) {
	ms := monotime.Millisecond
	us := monotime.Microsecond
	const chunk = 64 << 10
	host := Params{LineRate: 1e9, BaseRTT: 20 * ms, MSS: mss, Quantum: chunk, HostNoise: ms}
	for _, tt := range []struct {
		name        string
		p           Params
		slowStart   bool
		competing   bool
		least, mean monotime.Duration // the delays the ACKs carry: half at each
		cwnd        float64
		want        float64
	}{
		// Pacing at 2.5 MB per 20.2 ms; ACKs 0.6 ms late on average hold
		// 2.5 MB x 0.6 / 20.2 = 74 KB more in flight.
		{"late ACKs", host, false, false, 200 * us, 800 * us, 2.5e6, 2.5e6 + 2.5e6*0.6/20.2 + chunk},
		{"no lateness", host, false, false, 300 * us, 300 * us, 2.5e6, 2.5e6},
		{"slow start", host, true, false, 200 * us, 800 * us, 2.5e6, 2.5e6},
		{"competing", host, false, true, 200 * us, 800 * us, 2.5e6, 2.5e6},
		{"at the maximum", host, false, false, 200 * us, 800 * us, 3.7e6, 3.75e6 + chunk - mss},
		{"simulation", Params{LineRate: 1e9, BaseRTT: 20 * ms, MSS: mss, Quantum: chunk}, false, false, 200 * us, 800 * us, 2.5e6, 2.5e6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := NewNSCC(NSCCDefaults(tt.p))
			n.slowStart = false
			now := monotime.Time(0)
			for i := range 100 {
				now = now.Add(10 * us)
				d := tt.least
				if i%2 == 1 {
					d = 2*tt.mean - tt.least
				}
				n.standingDelay(now, d)
			}
			n.slowStart, n.comp.active, n.cwnd = tt.slowStart, tt.competing, tt.cwnd
			if got := float64(n.Window()); got < tt.want-1 || got > tt.want+1 {
				t.Errorf("window %.0f with cwnd %.0f, want %.0f", got, tt.cwnd, tt.want)
			}
		})
	}
}
