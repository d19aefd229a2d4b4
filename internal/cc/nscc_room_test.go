package cc

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// TestNSCCAckRoom: on a real host, past slow start, the window admits
// what the pacer sends while the hosts hold ACKs (their average
// HostDelay and four times its mean deviation, at the pacing rate), and a chunk for the core's whole-chunk
// admission; never past the maximum window. A spread of the samples over
// the standing queue (a swinging queue) adds nothing. Nothing in slow
// start, in the competitive mode or in simulation.
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
		least, most monotime.Duration // the queueing delays the ACKs carry, alternately
		hold        monotime.Duration // the hosts' hold on each
		holdMore    monotime.Duration // added to every other ACK's hold
		cwnd        float64
		want        float64
	}{
		// Pacing at 2.5 MB per 20.2 ms; ACKs held 0.6 ms keep
		// 2.5 MB x 0.6 / 20.2 = 74 KB more in flight.
		{"held ACKs", host, false, false, 200 * us, 200 * us, 600 * us, 0, 2.5e6, 2.5e6 + 2.5e6*0.6/20.2 + chunk},
		// Holds of 0.2 and 1 ms: 0.6 on average, 0.4 off it.
		{"held ACKs that swing", host, false, false, 200 * us, 200 * us, 200 * us, 800 * us, 2.5e6, 2.5e6 + 2.5e6*(0.6+4*0.4)/20.2 + chunk},
		{"a swinging queue", host, false, false, 200 * us, 1400 * us, 0, 0, 2.5e6, 2.5e6 + chunk},
		{"slow start", host, true, false, 200 * us, 200 * us, 600 * us, 0, 2.5e6, 2.5e6},
		{"competing", host, false, true, 200 * us, 200 * us, 600 * us, 0, 2.5e6, 2.5e6},
		{"at the maximum", host, false, false, 200 * us, 200 * us, 600 * us, 0, 3.7e6, 3.75e6 + chunk - mss},
		{"simulation", Params{LineRate: 1e9, BaseRTT: 20 * ms, MSS: mss, Quantum: chunk}, false, false, 200 * us, 200 * us, 600 * us, 0, 2.5e6, 2.5e6},
	} {
		t.Run(tt.name, func(t *testing.T) {
			n := NewNSCC(NSCCDefaults(tt.p))
			n.slowStart = false
			now := monotime.Time(0)
			for i := range 200 {
				now = now.Add(10 * us)
				q, hold := tt.least, tt.hold
				if i%2 == 1 {
					q, hold = tt.most, hold+tt.holdMore
				}
				n.OnAck(now, Ack{Bytes: 1, RTT: 20*ms + q, HostDelay: hold})
			}
			n.slowStart, n.comp.active, n.cwnd = tt.slowStart, tt.competing, tt.cwnd
			// Within 1%: the averages of alternating holds swing by a
			// sixteenth of the step about their limits.
			if got := float64(n.Window()); got < tt.want*0.99 || got > tt.want*1.01 {
				t.Errorf("window %.0f with cwnd %.0f, want %.0f", got, tt.cwnd, tt.want)
			}
		})
	}
}
