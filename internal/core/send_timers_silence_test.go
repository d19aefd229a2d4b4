package core

import (
	"net/netip"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// TestSilenceState: a probe into a silence holds the other timers and
// doubles the timeout until the peer is heard, at the probe's very
// instant or after it, or the probe's own timer passes.
func TestSilenceState(t *testing.T) {
	ms := monotime.Millisecond
	const probeAt = monotime.Time(100 * monotime.Millisecond)
	for _, tc := range []struct {
		name        string
		heard       monotime.Time // the peer's last packet
		now         monotime.Time
		wantHeld    bool
		wantBackoff uint8
	}{
		{"silent since before the probe", probeAt - monotime.Time(50*ms), probeAt + monotime.Time(ms), true, 1},
		{"heard the instant the probe left", probeAt, probeAt + monotime.Time(ms), false, 0},
		{"heard after the probe", probeAt + monotime.Time(ms/2), probeAt + monotime.Time(ms), false, 0},
		{"the probe's timer passed", probeAt - monotime.Time(50*ms), probeAt + monotime.Time(500*ms), false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewEndpoint().NewConn(1, 2, netip.MustParseAddrPort("127.0.0.1:2"), Config{})
			if err != nil {
				t.Fatal(err)
			}
			c.useBoth() // as its first messages each way would
			s := c.sender()
			c.heard(probeAt - monotime.Time(50*ms))
			if s.silent(probeAt) {
				t.Fatal("a peer with no data to answer is silent")
			}
			s.awaiting = probeAt - monotime.Time(50*ms)
			if !s.silent(probeAt) {
				t.Fatalf("data unanswered for 50 ms (srtt %v) is not a silence", s.rtt.Smoothed())
			}
			m := &sendMsg{sendActive: &sendActive{scheme: reliability.SelectiveRepeat{NACK: true}}}
			s.probed(probeAt, m)
			c.live.lastHeard = tc.heard
			if got := s.probing(tc.now); got != tc.wantHeld {
				t.Errorf("held %v, want %v", got, tc.wantHeld)
			}
			if got := s.backoff(); got != tc.wantBackoff {
				t.Errorf("timeout doubled %d times, want %d", got, tc.wantBackoff)
			}
		})
	}
}
