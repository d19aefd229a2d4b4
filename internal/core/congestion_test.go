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
