package core_test

import (
	"fmt"
	"testing"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// TestCreditFillsLongPath: receiver-driven credit keeps a long path full
// when the RTT is not configured. Credit may run ahead of the data by
// twice the bandwidth-delay product, which takes the receiver's view of
// the RTT; with the default 10 ms initial RTT and no sample (a message
// gets many grants before its first data, so a CTS-to-data sample rarely
// exists) it ran ahead by 10 ms's worth on a 50 ms path and took 2.2
// times as long as the link needs. Grants are now timed to the data
// they allow.
func TestCreditFillsLongPath(t *testing.T) {
	alg, err := cc.Parse("credit")
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := reliability.Parse("sr-nack")
	if err != nil {
		t.Fatal(err)
	}
	const rate = 1e9
	for _, delay := range []monotime.Duration{5 * monotime.Millisecond, 25 * monotime.Millisecond} {
		t.Run(fmt.Sprintf("rtt=%v", 2*delay), func(t *testing.T) {
			// InitialRTT is the default; MinRTO is set, as sdr sets it,
			// so that the first chunks' timers, armed before any RTT
			// sample, do not fire before their ACKs can come back.
			cfg := core.Config{Scheme: scheme, CC: alg, LineRate: rate, MinRTO: 100 * monotime.Millisecond}
			p, err := coretest.NewPair(coretest.Config{Seed: 1, A: cfg, B: cfg,
				Link: coretest.LinkConfig{Delay: delay, Rate: rate}})
			if err != nil {
				t.Fatal(err)
			}
			const size = 32 << 20
			res, err := p.Transfer(message(size), size, nil, coretest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			// Credit grants payload at 0.99 of the line rate less headers.
			goodput := rate * 0.99 * 4096 / (4096 + 40 + 66)
			ideal := monotime.Duration(size*8/goodput*float64(monotime.Second)) + 2*delay
			if res.RecvAt > ideal*12/10 {
				t.Fatalf("32 MiB arrived in %v; the link carries it in %v", res.RecvAt, ideal)
			}
		})
	}
}
