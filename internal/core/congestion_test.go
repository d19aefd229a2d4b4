package core

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// TestLessAckDelay: the controller's sample is the RTT less the delay the
// receiver reports, but never below half the least whole sample, so one
// overstated delay cannot make the path look free.
func TestLessAckDelay(t *testing.T) {
	ms := monotime.Millisecond
	for _, tt := range []struct {
		name        string
		rtt         monotime.Duration
		delay       uint16 // microseconds
		least, want monotime.Duration
	}{
		{"no delay", 22 * ms, 0, 22 * ms, 22 * ms},
		{"a steady receiver delay comes off", 22 * ms, 2000, 22 * ms, 20 * ms},
		{"loopback: most of it is the receiver's", 250 * monotime.Microsecond, 150, 250 * monotime.Microsecond, 125 * monotime.Microsecond},
		{"overstated: half the least at most", 22 * ms, 21900, 22 * ms, 11 * ms},
		{"longer than the round trip", 22 * ms, 65535, 22 * ms, 11 * ms},
		{"a sample below half the least keeps itself", 10 * ms, 5000, 22 * ms, 10 * ms},
	} {
		if got := lessAckDelay(tt.rtt, tt.delay, tt.least); got != tt.want {
			t.Errorf("%s: lessAckDelay(%v, %d us, least %v) = %v, want %v", tt.name, tt.rtt, tt.delay, tt.least, got, tt.want)
		}
	}
}
