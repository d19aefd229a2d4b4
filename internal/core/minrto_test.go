package core_test

import (
	"net/netip"

	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// TestMinRTO loses the last packet of a one-chunk message on a 20 us
// round trip, so only the retransmission timer can repair it: the repair
// waits for Config.MinRTO, the core's 100 us when it is zero.
func TestMinRTO(t *testing.T) {
	run := func(minRTO monotime.Duration) coretest.Result {
		t.Helper()
		const packets = core.DefaultChunkSize / core.DefaultMTU
		sent := 0
		link := coretest.LinkConfig{Delay: 10 * monotime.Microsecond, Rate: 10e9,
			Drop: func(b []byte) bool {
				if len(b) < core.DefaultMTU {
					return false // not a full data packet
				}
				sent++
				return sent == packets // the tail's first transmission
			}}
		cfg := core.Config{Scheme: reliability.SelectiveRepeat{}, InitialRTT: 20 * monotime.Microsecond, MinRTO: minRTO}
		p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, A: cfg, B: cfg})
		if err != nil {
			t.Fatal(err)
		}
		msg := message(core.DefaultChunkSize)
		res, err := p.Transfer(msg, len(msg), nil, coretest.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if res.A.RTOs != 1 {
			t.Fatalf("MinRTO %v: %d RTOs, want 1", minRTO, res.A.RTOs)
		}
		return res
	}
	if res := run(0); res.Duration < core.MinRTO || res.Duration > 5*core.MinRTO {
		t.Errorf("default MinRTO: tail repaired after %v, want about %v", res.Duration, core.MinRTO)
	}
	const host = 25 * monotime.Millisecond
	if res := run(host); res.Duration < host || res.Duration > host+monotime.Millisecond {
		t.Errorf("MinRTO %v: tail repaired after %v", host, res.Duration)
	}
	if _, err := core.NewEndpoint().NewConn(1, 2, netip.AddrPort{}, core.Config{MinRTO: -1}); err == nil {
		t.Error("a negative MinRTO was accepted")
	}
}
