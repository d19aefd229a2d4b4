package core_test

import (
	"bytes"
	"testing"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// TestNSCCShallowBottleneck: a lone NSCC sender on a real host (a
// guessed 10 Gbit/s line rate, slow start, pacing, the standing-queue
// filter) through a 1 Gbit/s, 20 ms bottleneck whose drop-tail queue
// holds 256 KiB (2 ms), hosts without noise. Past slow start the link
// stays at least 0.95 full and the queue never overflows again; every
// byte arrives. With the window's room sized by the samples' spread over
// the standing queue (ackRoom before), the pacer overfilled the queue
// again: the link 0.869 full from 400 ms on, and 12 drops after slow
// start's 352.
func TestNSCCShallowBottleneck(t *testing.T) {
	alg, err := cc.Parse("nscc")
	if err != nil {
		t.Fatal(err)
	}
	ms := monotime.Millisecond
	scheme, _ := reliability.Parse("sr-nack") // what sdrnet bench sends with
	cfg := core.Config{Scheme: scheme, CC: alg, LineRate: 10e9, LearnLineRate: true, HostNoise: ms, MinRTO: 25 * ms, MaxBytesInFlight: 4 << 20}
	p, done := establish(t, coretest.Config{Seed: 1, A: cfg, B: cfg, Handshake: true,
		Link:    coretest.LinkConfig{Delay: 10 * ms, Rate: 1e9, Queue: 256 << 10},
		Reverse: &coretest.LinkConfig{Delay: 10 * ms}})
	const size = 128 << 20
	msg := append(bytes.Clone(message(size/2)), message(size/2)...)
	got := make([]byte, size)
	if _, err := p.B.Conn.PostRecv(got); err != nil {
		t.Fatal(err)
	}
	if _, err := p.A.Conn.Send(msg); err != nil {
		t.Fatal(err)
	}
	p.Wake()
	start := p.Now
	// From 400 ms on (slow start and its losses' resends are over by
	// then) until the last chunk's resends: the link's bytes and drops.
	var from, until monotime.Time
	var fromBytes, untilBytes, fromDrops uint64
	err = p.Drive(func() bool {
		ab, _ := p.LinkStats()
		if from == 0 && p.Now.Sub(start) >= 400*ms {
			from, fromBytes, fromDrops = p.Now, ab.Bytes, ab.QueueDrops
		}
		if from != 0 && ab.Bytes < size { // the first pass is still on the wire
			until, untilBytes = p.Now, ab.Bytes
		}
		return done()
	}, coretest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("the message arrived corrupted")
	}
	ab, _ := p.LinkStats()
	use := float64(untilBytes-fromBytes) * 8 / until.Sub(from).Seconds() / 1e9
	t.Logf("128 MiB in %v; from 400 ms the link carried %.3f of its rate; %d queue drops, %d of them later",
		p.Now.Sub(start), use, ab.QueueDrops, ab.QueueDrops-fromDrops)
	if use < 0.95 || ab.QueueDrops != fromDrops {
		t.Errorf("past slow start: the link %.3f full and %d queue drops; want >= 0.95 and none", use, ab.QueueDrops-fromDrops)
	}
}
