package core_test

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
)

// TestReadLatenessIsNotQueue: hosts that read datagrams late (the
// receiver 2 ms after they arrive, the sender 1 ms) on a 1 Gbit/s, 20 ms
// path. Told when each datagram arrived (a kernel's receive stamp), the
// sender times ACKs from their arrival and takes off the delay the
// receiver reports in them, so NSCC reads the path, not the hosts; handed
// in unstamped, the 3 ms read as queue, three times NSCC's 1 ms target.
func TestReadLatenessIsNotQueue(t *testing.T) {
	alg, err := cc.Parse("nscc")
	if err != nil {
		t.Fatal(err)
	}
	ms := monotime.Millisecond
	run := func(unstamped bool) (queue, srtt monotime.Duration, took monotime.Duration) {
		cfg := core.Config{CC: alg, LineRate: 1e9, BaseRTT: 20 * ms, HostNoise: ms, MinRTO: 100 * ms}
		p, err := coretest.NewPair(coretest.Config{Seed: 1, A: cfg, B: cfg,
			Link: coretest.LinkConfig{Delay: 10 * ms, Rate: 1e9}})
		if err != nil {
			t.Fatal(err)
		}
		p.A.ReadLate, p.B.ReadLate = ms, 2*ms
		p.A.Unstamped, p.B.Unstamped = unstamped, unstamped
		const size = 16 << 20
		res, err := p.Transfer(message(size), size, nil, coretest.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return p.A.Conn.CCStats().Queue, p.A.Conn.Stats().SmoothedRTT, res.Duration
	}
	q, srtt, took := run(false)
	uq, usrtt, utook := run(true)
	t.Logf("stamped: queue %v, smoothed RTT %v, 16 MiB in %v; unstamped: %v, %v, %v", q, srtt, took, uq, usrtt, utook)
	if q >= ms {
		t.Errorf("stamped: NSCC reads a queue of %v; want under its 1 ms target", q)
	}
	if uq < 2*ms {
		t.Errorf("unstamped: NSCC reads a queue of %v; want the hosts' 3 ms (the test shows nothing)", uq)
	}
	// The retransmission timer keeps both hosts' hold: it is part of how
	// long an answer takes.
	if srtt < 23*ms {
		t.Errorf("stamped: smoothed RTT %v; want at least the path's 20 ms, the receiver's 2 ms and the sender's 1 ms", srtt)
	}
}

// TestDoneAckDelay: a one-chunk message's only ACK is its Done ACK, which
// gives the sender its RTT sample (TestDoneSample); it carries the
// receiver's hold as a chunk's ACK does, so NSCC reads the path's queue
// (none here) and not the receiver's 2 ms lateness.
func TestDoneAckDelay(t *testing.T) {
	alg, err := cc.Parse("nscc")
	if err != nil {
		t.Fatal(err)
	}
	ms := monotime.Millisecond
	cfg := core.Config{CC: alg, LineRate: 1e9, BaseRTT: 20 * ms, HostNoise: ms, MinRTO: 100 * ms}
	p, err := coretest.NewPair(coretest.Config{Seed: 1, A: cfg, B: cfg,
		Link: coretest.LinkConfig{Delay: 10 * ms, Rate: 1e9}})
	if err != nil {
		t.Fatal(err)
	}
	p.B.ReadLate = 2 * ms
	// Transfer completes each receive after its Done ACK has left;
	// TestEncodeDoneHold covers one encoded after the receive completed.
	for range 20 {
		if _, err := p.Transfer(message(1000), 1000, nil, coretest.Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	q, srtt := p.A.Conn.CCStats().Queue, p.A.Conn.Stats().SmoothedRTT
	t.Logf("after 20 one-chunk messages: NSCC's queue %v, smoothed RTT %v", q, srtt)
	if q >= ms {
		t.Errorf("NSCC reads a queue of %v; want under its 1 ms target (the receiver's 2 ms hold taken off)", q)
	}
	if srtt < 22*ms {
		t.Errorf("smoothed RTT %v; want the path's 20 ms and the receiver's 2 ms (a sample from each Done ACK)", srtt)
	}
}
