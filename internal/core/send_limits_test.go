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

// TestSendTimes: a sender's time goes to the state that holds it back,
// and to no other: the in-flight limit, a receiver that posts its buffer
// late, a congestion window over a slow link. Every byte arrives.
func TestSendTimes(t *testing.T) {
	ms := monotime.Millisecond
	nscc, err := cc.Parse("nscc")
	if err != nil {
		t.Fatal(err)
	}
	scheme, _ := reliability.Parse("sr-nack")
	for _, tc := range []struct {
		name        string
		cfg         core.Config
		rate        float64           // the link's, bits per second; 0: unlimited
		postAfter   monotime.Duration // the receiver posts its buffer this late
		held        func(core.SendTimes) monotime.Duration
		others      func(core.SendTimes) monotime.Duration
		wantAtLeast float64 // of the transfer's time, held by held
	}{{
		// 64 KiB in flight over a 20 ms round trip: a chunk per round trip.
		name: "in-flight limit", cfg: core.Config{Scheme: scheme, MaxBytesInFlight: 64 << 10},
		held:        func(s core.SendTimes) monotime.Duration { return s.InflightLimited },
		others:      func(s core.SendTimes) monotime.Duration { return s.WindowLimited + s.CreditLimited },
		wantAtLeast: 0.8,
	}, {
		// The sender waits for the receiver's clear-to-send for 200 ms,
		// then sends 2 MiB unhindered in a few round trips.
		name: "receiver late", cfg: core.Config{Scheme: scheme}, postAfter: 200 * ms,
		held:        func(s core.SendTimes) monotime.Duration { return s.CreditLimited },
		others:      func(s core.SendTimes) monotime.Duration { return s.WindowLimited + s.InflightLimited },
		wantAtLeast: 0.6,
	}, {
		// NSCC as in simulation, told of a line rate half the link's:
		// its window (1.5 x the guessed BDP, 188 KB) is below the link's
		// BDP (250 KB), so the ACKs clock it: the rest of its time it
		// sends at the link's rate (the harness's NIC), busy.
		name: "congestion window", cfg: core.Config{Scheme: scheme, CC: nscc, LineRate: 50e6, BaseRTT: 20 * ms},
		rate:        100e6,
		held:        func(s core.SendTimes) monotime.Duration { return s.WindowLimited },
		others:      func(s core.SendTimes) monotime.Duration { return s.CreditLimited + s.InflightLimited },
		wantAtLeast: 0.35,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, done := establish(t, coretest.Config{Seed: 1, A: tc.cfg, B: tc.cfg, Handshake: true,
				Link: coretest.LinkConfig{Delay: 10 * ms, Rate: tc.rate}, Reverse: &coretest.LinkConfig{Delay: 10 * ms}})
			const size = 2 << 20
			msg, got := message(size), make([]byte, size)
			if _, err := p.A.Conn.Send(msg); err != nil {
				t.Fatal(err)
			}
			p.Wake()
			start := p.Now
			if tc.postAfter > 0 {
				// Run the pair until the post (it idles, or its next
				// event is later), then move the clock there.
				_ = p.Drive(func() bool { return false }, coretest.Limits{Time: tc.postAfter})
				p.Now = start.Add(tc.postAfter)
			}
			if _, err := p.B.Conn.PostRecv(got); err != nil {
				t.Fatal(err)
			}
			p.Wake()
			if err := p.Drive(done, coretest.Limits{}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, msg) {
				t.Fatal("the message arrived corrupted")
			}
			st := p.A.Conn.Stats().SendTimes
			took := p.Now.Sub(start)
			t.Logf("%v: busy %v, window %v, credit %v, in flight %v", took, st.Busy, st.WindowLimited, st.CreditLimited, st.InflightLimited)
			if held := tc.held(st); float64(held) < tc.wantAtLeast*float64(took) {
				t.Errorf("held %v of %v; want at least %.0f%%", held, took, 100*tc.wantAtLeast)
			}
			if other := tc.others(st); other > took/20 {
				t.Errorf("the other states took %v of %v; want at most 5%%", other, took)
			}
			if sum := st.Busy + st.WindowLimited + st.CreditLimited + st.InflightLimited; sum > took {
				t.Errorf("the states add up to %v, more than the %v the transfer took", sum, took)
			}
		})
	}
}

// establish makes a pair from cfg and runs its handshake until B holds
// the connection; done then reports whether B has received a message.
func establish(t *testing.T, cfg coretest.Config) (p *coretest.Pair, done func() bool) {
	t.Helper()
	p, err := coretest.NewPair(cfg)
	if err != nil {
		t.Fatal(err)
	}
	up, recvd := false, false
	p.A.OnEvent = func(ev core.Event) { up = up || ev.Kind == core.EventEstablished }
	p.B.OnEvent = func(ev core.Event) { recvd = recvd || ev.Kind == core.EventRecvDone }
	if err := p.Drive(func() bool { return up && p.B.Conn != nil }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	return p, func() bool { return recvd }
}
