package core

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/monotime"
)

// TestTargetDelayReachesController: Config.TargetDelay is the target NSCC
// steers to, below the host-noise floor that sets it otherwise.
func TestTargetDelayReachesController(t *testing.T) {
	for _, tt := range []struct {
		set, want monotime.Duration
	}{
		{0, monotime.Millisecond},
		{500 * monotime.Microsecond, 500 * monotime.Microsecond},
	} {
		c := Config{MTU: 4096, ChunkSize: 64 << 10, HostNoise: monotime.Millisecond, TargetDelay: tt.set}
		if got := cc.NSCCDefaults(c.ccParams()).Target; got != tt.want {
			t.Errorf("TargetDelay %v: NSCC's target %v, want %v", tt.set, got, tt.want)
		}
	}
}

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
