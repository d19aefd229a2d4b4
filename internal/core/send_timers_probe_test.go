package core_test

import (
	"fmt"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// TestSilentPeerProbes: when the peer says nothing for longer than the
// retransmission timeout, one chunk is resent as a probe and the timeout
// doubles, instead of every chunk in flight being resent each timeout
// (the sender's silence). A 1 Gbit/s, 10 ms round trip carries 16 MiB
// with SR-NACK (timeout 3 x RTT) and no loss of data:
//   - its ACKs are lost for 60 ms (a receiver that stalls): the ACK
//     after it acknowledges everything, so nothing needed resending; a
//     timer per chunk resent every chunk whose ACK the gap ate;
//   - both directions go down for a second: what was in flight and a
//     probe per doubled timeout go into the outage, not the window each
//     timeout (124 MiB of resends in that second before).
//
// Every byte still arrives (Transfer checks the SHA-256).
func TestSilentPeerProbes(t *testing.T) {
	ms := monotime.Millisecond
	down := func(from, to monotime.Duration) func(monotime.Time, core.Path) bool {
		return func(now monotime.Time, _ core.Path) bool {
			return now >= monotime.Time(from) && now < monotime.Time(to)
		}
	}
	for _, tc := range []struct {
		name     string
		fwd, rev func(monotime.Time, core.Path) bool
		// At most: timeouts and chunks resent (ACKs lost), or packets
		// sent into the outage (both ways down): the 4 MiB in flight
		// and a chunk for each probe (6 in the second, with margin).
		maxRTOs, maxRetx, maxIntoOutage uint64
	}{
		{name: "ACKs lost for 60 ms", rev: down(20*ms, 80*ms), maxRTOs: 2, maxRetx: 2},
		{name: "both ways down for 1 s", fwd: down(20*ms, 1020*ms), rev: down(20*ms, 1020*ms),
			maxIntoOutage: (4<<20 + 8*core.DefaultChunkSize) / core.DefaultMTU},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := coretest.LinkConfig{Delay: 5 * ms, Rate: 1e9, PathDown: tc.fwd}
			rev := link
			rev.PathDown = tc.rev
			cfg := core.Config{Scheme: reliability.SelectiveRepeat{NACK: true}, InitialRTT: 10 * ms,
				MaxBytesInFlight: 4 << 20}
			p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, Reverse: &rev, A: cfg, B: cfg})
			if err != nil {
				t.Fatal(err)
			}
			msg := message(16 << 20)
			res, err := p.Transfer(msg, len(msg), nil, coretest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			chunks := res.A.RetxBytes / core.DefaultChunkSize
			ab, _ := p.LinkStats()
			t.Logf("%d RTOs (%d probes), %d bytes resent (%d chunks), %d packets sent into the outage, done in %v",
				res.A.RTOs, res.A.SilentProbes, res.A.RetxBytes, chunks, ab.Lost, res.Duration)
			if res.A.SilentProbes == 0 || res.A.SilentProbes > res.A.RTOs {
				t.Errorf("%d probes counted of %d RTOs; want at least one, at most all", res.A.SilentProbes, res.A.RTOs)
			}
			if tc.maxIntoOutage == 0 && (res.A.RTOs > tc.maxRTOs || chunks > tc.maxRetx) {
				t.Errorf("%d RTOs and %d chunks resent; want at most %d and %d", res.A.RTOs, chunks, tc.maxRTOs, tc.maxRetx)
			}
			if tc.maxIntoOutage > 0 && ab.Lost > tc.maxIntoOutage {
				t.Errorf("%d packets sent into the outage; want at most %d", ab.Lost, tc.maxIntoOutage)
			}
		})
	}
}

// TestFirstSampleBound: a connection whose round trip is far above its
// initial guess (a datacenter's 12 us against 2 ms here, as a sender
// meets behind a deep or paused queue) times out before any ACK comes
// back, and the ACK of a resent chunk gives no clean sample. Its first
// ACK still sets the timeout (an upper bound, from the message's first
// packet), so what it resends is what timed out in that first round
// trip, whatever the transfer's length, not a chunk every minimum RTO
// until the transfer ends (45 MB for these 4 MiB before).
func TestFirstSampleBound(t *testing.T) {
	link := coretest.LinkConfig{Delay: monotime.Millisecond, Rate: 10e9}
	cfg := core.Config{Scheme: reliability.SelectiveRepeat{NACK: true}, InitialRTT: 12 * monotime.Microsecond,
		MaxBytesInFlight: 1 << 20}
	for _, size := range []int{4 << 20, 16 << 20} {
		p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, A: cfg, B: cfg})
		if err != nil {
			t.Fatal(err)
		}
		msg := message(size)
		res, err := p.Transfer(msg, len(msg), nil, coretest.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%d bytes: %d RTOs, %d bytes resent, done in %v", size, res.A.RTOs, res.A.RetxBytes, res.Duration)
		// The first round trip: 2 ms of 100 us timeouts over the 1 MiB in
		// flight, with the margin of a window.
		if res.A.RetxBytes > 3<<20 {
			t.Errorf("%d bytes: %d resent; want at most 3 MiB, what the first round trip's timeouts can send", size, res.A.RetxBytes)
		}
	}

	// The idle case: a connection whose only message, 100 s ago, was
	// unacknowledged (scheme none), so it has no RTT sample, then a
	// message whose first pass is lost whole. The bound runs from the
	// message's own first packet: from the connection's first packet it
	// made the timeout minutes long.
	drop := false
	link = coretest.LinkConfig{Delay: 50 * monotime.Microsecond, Rate: 10e9, Drop: func(b []byte) bool {
		d, err := wire.ParseData(b)
		return drop && err == nil && d.Flags&wire.FlagRetransmit == 0
	}}
	cfg = core.Config{Scheme: reliability.SelectiveRepeat{NACK: true}, InitialRTT: monotime.Millisecond,
		MinRTO: 25 * monotime.Millisecond}
	p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, A: cfg, B: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Transfer(message(1000), 1000, reliability.None{}, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	p.Now = p.Now.Add(100 * monotime.Second)
	if n := p.A.Conn.Stats().SmoothedRTT; n != monotime.Millisecond {
		t.Fatalf("smoothed RTT %v after 100 s idle; want the 1 ms guess (no sample)", n)
	}
	drop = true
	res, err := p.Transfer(message(1<<20), 1<<20, nil, coretest.Limits{Time: 1000 * monotime.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("1 MiB, its first pass lost, 100 s after an unacknowledged message: done in %v, %d RTOs, smoothed RTT %v",
		res.Duration, res.A.RTOs, res.A.SmoothedRTT)
	if res.Duration > monotime.Second {
		t.Errorf("1 MiB with its first pass lost took %v; want a few timeouts of 25 ms", res.Duration)
	}
}

// TestDoneSample: a one-chunk message is answered by its Done ACK alone,
// and that ACK gives an RTT sample when the chunk was not resent. A
// connection of such messages (an alltoall's, an RPC's) measured nothing
// before: its smoothed RTT stayed at the 10 ms initial guess on this
// 200 us path, and a chunk lost later waited out a timeout made of the
// guess (30 ms) instead of the path's.
func TestDoneSample(t *testing.T) {
	us := monotime.Microsecond
	lose := false
	link := coretest.LinkConfig{Delay: 100 * us, Rate: 10e9, Drop: func(b []byte) bool {
		d, err := wire.ParseData(b)
		if lose && err == nil && d.Flags&wire.FlagRetransmit == 0 {
			lose = false
			return true
		}
		return false
	}}
	for _, scheme := range []reliability.Scheme{reliability.SelectiveRepeat{NACK: true}, reliability.GoBackN{}} {
		t.Run(scheme.Kind().String(), func(t *testing.T) {
			cfg := core.Config{Scheme: scheme, InitialRTT: 10 * monotime.Millisecond}
			p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, A: cfg, B: cfg})
			if err != nil {
				t.Fatal(err)
			}
			var res coretest.Result
			for range 50 {
				if res, err = p.Transfer(message(1000), 1000, nil, coretest.Limits{}); err != nil {
					t.Fatal(err)
				}
			}
			lose = true
			lost, err := p.Transfer(message(1000), 1000, nil, coretest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("after 50 one-chunk messages: smoothed RTT %v; a message whose chunk was lost: done in %v (%d RTOs)",
				res.A.SmoothedRTT, lost.Duration, lost.A.RTOs-res.A.RTOs)
			if res.A.SmoothedRTT < 200*us || res.A.SmoothedRTT > 400*us {
				t.Errorf("smoothed RTT %v; want the path's 200 us (up to 400 us)", res.A.SmoothedRTT)
			}
			if lost.Duration > 5*monotime.Millisecond {
				t.Errorf("a one-chunk message whose chunk was lost took %v; want a timeout made of the 200 us path", lost.Duration)
			}
		})
	}
}

// TestDoneSampleNotFromStale: a receive the application completes before
// the message is whole makes the receiver answer the packets still coming
// with Done ACKs for a stale message, while the sender still sends. Such
// a Done ACK gives no sample: its newest send postdates the packet it
// answers, and the samples shrank the smoothed RTT of a 20 ms path by a
// tenth per message (12.3 ms after five, in the review that found it).
func TestDoneSampleNotFromStale(t *testing.T) {
	ms := monotime.Millisecond
	// 8 MiB: the stale Done ACKs come while the first pass still runs;
	// 1 MiB: after it ends, so only the flag tells them apart.
	for _, size := range []int{8 << 20, 1 << 20} {
		t.Run(fmt.Sprintf("%dMiB", size>>20), func(t *testing.T) {
			cfg := core.Config{Scheme: reliability.SelectiveRepeat{NACK: true}, InitialRTT: 20 * ms}
			p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: coretest.LinkConfig{Delay: 10 * ms, Rate: 1e9}, A: cfg, B: cfg})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 5 {
				abandon(t, p, size)
				srtt := p.A.Conn.Stats().SmoothedRTT
				t.Logf("message %d abandoned: smoothed RTT %v", i, srtt)
				if srtt < 19*ms {
					t.Fatalf("smoothed RTT %v after %d abandoned messages; want the path's 20 ms", srtt, i+1)
				}
			}
		})
	}
}

// abandon sends a message of size bytes that the receiver completes at
// its first chunk, and waits until the sender is done with it.
func abandon(t *testing.T, p *coretest.Pair, size int) {
	t.Helper()
	rh, err := p.B.Conn.PostRecv(make([]byte, size))
	if err != nil {
		t.Fatal(err)
	}
	sh, err := p.A.Conn.SendWith(message(size), nil)
	if err != nil {
		t.Fatal(err)
	}
	abandoned, sent := false, false
	p.B.OnEvent = func(ev core.Event) {
		if ev.Kind == core.EventChunks && ev.Msg == uint32(rh) && !abandoned {
			abandoned = true
			if err := ev.Conn.Complete(rh); err != nil {
				t.Error(err)
			}
		}
	}
	p.A.OnEvent = func(ev core.Event) {
		if ev.Msg == uint32(sh) && (ev.Kind == core.EventSendDone || ev.Kind == core.EventSendFailed) {
			sent = true
		}
	}
	p.Wake()
	if err := p.Drive(func() bool { return sent }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
}

// TestResentSamples: one-chunk messages whose first copies are all lost,
// so every ACK answers a resend.
//   - A Done ACK that answers a resent chunk gives no sample (Karn): it
//     cannot say which copy it answers, and a late original answered just
//     after its resend left would read as a round trip of next to
//     nothing. With the pings lost too, nothing may bring the smoothed
//     RTT near the resends' round trips.
//   - The bound such an ACK gives (from the message's first packet) is
//     provisional, and a ping measures the round trip: kept as a sample,
//     a bound a timeout long held the timeout at three times that for as
//     long as every message needed a resend.
func TestResentSamples(t *testing.T) {
	us := monotime.Microsecond
	for _, tc := range []struct {
		name        string
		delay       monotime.Duration
		cfg         core.Config
		dropPings   bool
		least, most monotime.Duration // the smoothed RTT
	}{
		{"karn", 100 * us, core.Config{InitialRTT: 10 * monotime.Millisecond}, true, monotime.Millisecond, 1 << 62},
		{"bound then ping", 20 * us, core.Config{InitialRTT: 10 * us, MinRTO: monotime.Millisecond}, false, 0, 200 * us},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := coretest.LinkConfig{Delay: tc.delay, Rate: 10e9, Drop: func(b []byte) bool {
				if h, err := wire.ParseHeader(b); err == nil && h.Type == wire.TypePing {
					return tc.dropPings
				}
				d, err := wire.ParseData(b)
				return err == nil && d.Flags&wire.FlagRetransmit == 0
			}}
			cfg := tc.cfg
			cfg.Scheme = reliability.SelectiveRepeat{NACK: true}
			p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, A: cfg, B: cfg})
			if err != nil {
				t.Fatal(err)
			}
			var res coretest.Result
			for range 20 {
				if res, err = p.Transfer(message(1000), 1000, nil, coretest.Limits{}); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("smoothed RTT %v over a %v round trip", res.A.SmoothedRTT, 2*tc.delay)
			if srtt := res.A.SmoothedRTT; srtt < tc.least || srtt > tc.most {
				t.Errorf("smoothed RTT %v, want %v to %v", srtt, tc.least, tc.most)
			}
		})
	}
}
