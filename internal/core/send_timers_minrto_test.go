package core_test

import (
	"net/netip"

	"testing"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
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

// TestResendOnlyWhatWasSent: a NACKed packet resent while its chunk's
// first pass is still under way arms no timer for the chunk (the pass
// arms it when it finishes the chunk), and nothing resends a packet the
// pass has not sent. The timer used to be armed then, and on expiry
// resent the whole chunk: the receiver had the chunk whole, and
// acknowledged it, before the pass sent its tail, which the pass then
// counted in flight for good, shutting a small window (datagram peers
// under NSCC, TestDatagramPeers, one run in a dozen under load).
func TestResendOnlyWhatWasSent(t *testing.T) {
	scheme, err := reliability.Parse("sr-nack")
	if err != nil {
		t.Fatal(err)
	}
	first := map[uint32]bool{}
	early := 0
	link := coretest.LinkConfig{Delay: 10 * monotime.Microsecond, Rate: 10e9,
		Drop: func(b []byte) bool {
			d, err := wire.ParseData(b)
			if err != nil {
				return false
			}
			if d.Flags&wire.FlagRetransmit != 0 {
				if !first[d.Packet] {
					early++
				}
				return false
			}
			first[d.Packet] = true
			return d.Packet == 2 && len(first) == 3 // packet 2's first transmission
		}}
	// NSCC paces a host's first pass (here 187 Mbit/s: a 64 KiB chunk
	// takes 2.8 ms, many retransmission timeouts of a 20 us round trip).
	alg, err := cc.Parse("nscc")
	if err != nil {
		t.Fatal(err)
	}
	cfg := core.Config{Scheme: scheme, InitialRTT: 20 * monotime.Microsecond, CC: alg, LineRate: 100e6,
		BaseRTT: 20 * monotime.Millisecond, HostNoise: monotime.Millisecond}
	p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, A: cfg, B: cfg})
	if err != nil {
		t.Fatal(err)
	}
	msg := message(2 * core.DefaultChunkSize)
	res, err := p.Transfer(msg, len(msg), nil, coretest.Limits{Time: 10 * monotime.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.A.RetxPackets == 0 {
		t.Fatal("nothing was resent: the test lost nothing")
	}
	if early > 0 {
		t.Errorf("%d packets were resent before their first transmission", early)
	}
}
