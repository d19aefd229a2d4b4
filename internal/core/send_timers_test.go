package core_test

import (
	"bytes"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// TestTimeoutBacksOff: a path whose round trip grows from 20 to 250 ms
// mid-transfer (a route change) outruns the timeout, and the ACK of a
// resent chunk is no RTT sample, so the estimate cannot learn the new
// round trip from the chunks resent. Every chunk after the change was
// resent, 245% of 32 MiB, with 1,283 timeouts. The receiver's report of
// resends it did not need (wire.FlagDupResend) doubles the timeout until
// a clean sample comes. Every byte arrives.
func TestTimeoutBacksOff(t *testing.T) {
	ms := monotime.Millisecond
	var extra monotime.Duration
	cfg := core.Config{Scheme: reliability.SelectiveRepeat{NACK: true}, MinRTO: 25 * ms, MaxBytesInFlight: 4 << 20}
	p, done := establish(t, coretest.Config{Seed: 1, A: cfg, B: cfg, Handshake: true,
		Link:    coretest.LinkConfig{Delay: 10 * ms, Rate: 100e6, PathDelay: func(core.Path) monotime.Duration { return extra }},
		Reverse: &coretest.LinkConfig{Delay: 10 * ms}})
	const size = 32 << 20
	start := p.Now
	var before core.ConnStats
	deliver(t, p, done, message(size), func() {
		if extra == 0 && p.Now.Sub(start) > 300*ms {
			extra, before = 230*ms, p.A.Conn.Stats()
		}
	})
	st := p.A.Conn.Stats()
	resent := st.RetxBytes - before.RetxBytes
	t.Logf("32 MiB in %v; after the change %d B resent (%.1f%%), %d timeouts", p.Now.Sub(start), resent, 100*float64(resent)/size, st.RTOs-before.RTOs)
	if before.RetxBytes != 0 || resent > size/4 {
		t.Errorf("resent %d B before the change, %.1f%% of the data after: want none, and at most 25%%", before.RetxBytes, 100*float64(resent)/size)
	}
}

// deliver posts a receive for msg on B, sends it from A and drives the
// pair until B has it, calling each (when set) at every step; it fails
// the test unless every byte arrived.
func deliver(t *testing.T, p *coretest.Pair, done func() bool, msg []byte, each func()) {
	t.Helper()
	got := make([]byte, len(msg))
	if _, err := p.B.Conn.PostRecv(got); err != nil {
		t.Fatal(err)
	}
	if _, err := p.A.Conn.Send(msg); err != nil {
		t.Fatal(err)
	}
	p.Wake()
	if err := p.Drive(func() bool {
		if each != nil {
			each()
		}
		return done()
	}, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("the message arrived corrupted")
	}
}

// TestDupResendEcho: the receiver reports a resend of a chunk that its
// first pass had made whole (its ACKs were lost: the resend was not
// needed), not the rest of a chunk resent whole for a packet it lacked.
func TestDupResendEcho(t *testing.T) {
	ms := monotime.Millisecond
	acksLost := func(now monotime.Time, b []byte) bool {
		return now >= monotime.Time(20*ms) && now < monotime.Time(80*ms)
	}
	// Without NACKs a lost packet is resent with its whole chunk.
	sr := reliability.SelectiveRepeat{}
	for _, tc := range []struct {
		name   string
		scheme reliability.Scheme
		// lose drops a DATA (forward) or ACK (reverse) packet at now.
		fwd, rev func(now monotime.Time, b []byte) bool
		want     bool
	}{
		{name: "ACKs lost for 60 ms", scheme: sr, want: true, rev: acksLost},
		{name: "a first-pass packet lost", scheme: sr, want: false, fwd: func(_ monotime.Time, b []byte) bool {
			d, err := wire.ParseData(b)
			return err == nil && d.Packet == 100 && d.Flags&wire.FlagRetransmit == 0
		}},
		// Go-Back-N resends what may have arrived by design.
		{name: "Go-Back-N, ACKs lost for 60 ms", scheme: reliability.GoBackN{}, want: false, rev: acksLost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p *coretest.Pair
			echoed := 0
			fwd := coretest.LinkConfig{Delay: 5 * ms, Rate: 1e9}
			rev := fwd
			if tc.fwd != nil {
				fwd.Drop = func(b []byte) bool { return tc.fwd(p.Now, b) }
			}
			rev.Drop = func(b []byte) bool {
				if a, err := wire.ParseAck(b); err == nil && a.Flags&wire.FlagDupResend != 0 {
					echoed++
				}
				return tc.rev != nil && tc.rev(p.Now, b)
			}
			cfg := core.Config{Scheme: tc.scheme, InitialRTT: 10 * ms, MaxBytesInFlight: 4 << 20}
			var err error
			if p, err = coretest.NewPair(coretest.Config{Seed: 1, Link: fwd, Reverse: &rev, A: cfg, B: cfg}); err != nil {
				t.Fatal(err)
			}
			msg := message(16 << 20)
			res, err := p.Transfer(msg, len(msg), nil, coretest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d RTOs, %d B resent, %d ACKs echoing an unneeded resend", res.A.RTOs, res.A.RetxBytes, echoed)
			if res.A.RetxBytes == 0 || (echoed > 0) != tc.want {
				t.Errorf("%d B resent, %d echoes: want a resend, and echoes %v", res.A.RetxBytes, echoed, tc.want)
			}
		})
	}
}

// TestSilenceTailProbe: a first chunk slower to arrive than the
// handshake's round trip allows (64 KiB through 2.5 Mbit/s take 210 ms;
// the timeout from a 20 ms handshake is 60 ms) times out into the
// peer's silence, twice before the first probe's answer comes. Each
// probe is the chunk's last packet, not the chunk: the whole chunk went
// out twice more (128 KiB resent), and with one tail probe a chunk, once
// more (68 KiB). Every byte arrives.
func TestSilenceTailProbe(t *testing.T) {
	ms := monotime.Millisecond
	cfg := core.Config{Scheme: reliability.SelectiveRepeat{NACK: true}, MinRTO: 25 * ms}
	p, done := establish(t, coretest.Config{Seed: 1, A: cfg, B: cfg, Handshake: true,
		Link:    coretest.LinkConfig{Delay: 10 * ms, Rate: 2.5e6, Queue: 1 << 20},
		Reverse: &coretest.LinkConfig{Delay: 10 * ms}})
	deliver(t, p, done, message(core.DefaultChunkSize), nil)
	st := p.A.Conn.Stats()
	t.Logf("%d timeouts (%d into the silence), %d B resent", st.RTOs, st.SilentProbes, st.RetxBytes)
	if st.SilentProbes == 0 || st.RetxBytes > uint64(st.SilentProbes)*core.DefaultMTU {
		t.Errorf("%d probes into the silence, %d B resent: want probes of a packet each", st.SilentProbes, st.RetxBytes)
	}
}
