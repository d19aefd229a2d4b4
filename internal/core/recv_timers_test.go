package core

import (
	"net/netip"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// TestReorderWindowBeatsTimer: the receiver's reordering window, how long
// a gap stands before it is NACKed, grows with late packets up to a cap.
// The cap counts the spread of the receiver's RTT samples only as far as
// a NACK still beats the sender's timer (SR-NACK's 3 RTT): with a host
// stall among the samples of a 50 ms path the spread read 64 ms, and
// gaps waiting that long (two of them in a row) lost the race, so the
// sender's timers fired 177-310 times in a run where a NACK would have
// asked for a packet each.
func TestReorderWindowBeatsTimer(t *testing.T) {
	ms, us := monotime.Millisecond, monotime.Microsecond
	for _, tc := range []struct {
		name    string
		a       float64             // SR's timeout factor: 0 for the default 2 (3 RTT)
		samples []monotime.Duration // the receiver's RTT samples
		late    monotime.Duration   // how late a packet came after its NACK
		want    monotime.Duration
	}{
		// 3 x 50 ms timer, 2 RTT for the repair: (150 - 100) / 2.
		{"long haul, a stall among the samples", 0, []monotime.Duration{50 * ms, 50 * ms, 50 * ms, 400 * ms, 50 * ms}, 200 * ms, 25 * ms},
		{"long haul, calm", 0, []monotime.Duration{50 * ms, 50 * ms, 50 * ms}, 200 * ms, 25 * ms},
		// Under the cap: 1.5 x how late, counted from when the gap stood
		// its RTT / 8.
		{"long haul, a little late", 0, []monotime.Duration{50 * ms, 50 * ms}, 4 * ms, (50*ms/8 + 4*ms) * 3 / 2},
		// A datacenter path: the sender's 100 us minimum timer governs.
		{"datacenter", 0, []monotime.Duration{8 * us, 8 * us, 9 * us}, 500 * us, MinRTO / 2},
		// A longer timer (5 RTT) leaves the spread room: (250 - 100) / 2.
		{"long haul, a stall, a 5 RTT timer", 4, []monotime.Duration{50 * ms, 50 * ms, 50 * ms, 400 * ms, 50 * ms}, 200 * ms, 75 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewEndpoint().NewConn(1, 2, netip.MustParseAddrPort("127.0.0.1:2"), Config{})
			if err != nil {
				t.Fatal(err)
			}
			c.useBoth() // as its first messages each way would
			r := c.receiver()
			r.rtt = reliability.NewRTT(tc.samples[0])
			for _, s := range tc.samples {
				r.rtt.Update(s)
			}
			m := &recvMsg{recvActive: &recvActive{r: r, scheme: reliability.SelectiveRepeat{NACK: true, A: tc.a}}}
			now := monotime.Time(10 * monotime.Second)
			m.lastNackAt = now.Add(-tc.late)
			m.Reordered(now)
			if r.reorder != tc.want {
				t.Errorf("reordering window %v, want %v (RTT samples: min %v, conservative %v)", r.reorder, tc.want, r.rtt.Min(), r.rtt.Conservative())
			}
		})
	}
}

// TestPostedAheadTimers: a receiver with many messages posted ahead runs
// each one's CTS timer when it is due, and only then, and its deadline is
// always its earliest posted message's.
func TestPostedAheadTimers(t *testing.T) {
	c, err := NewEndpoint().NewConn(1, 2, netip.MustParseAddrPort("127.0.0.1:2"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	c.useBoth() // as its first messages each way would
	r := c.receiver()
	const posted = 64
	for range posted {
		if _, err := c.PostRecvVirtual(1 << 20); err != nil {
			t.Fatal(err)
		}
	}
	now := monotime.Time(0)
	buf := make([]byte, 2048)
	for i := 0; i < posted; i++ { // the CTS of each, written at a different time
		now = now.Add(monotime.Microsecond)
		r.writeCTS(now, &r.slots[i], buf)
	}
	for round := 0; round < 5; round++ {
		earliest := monotime.Never
		for i := range posted {
			earliest = min(earliest, r.slots[i].ctsDue)
		}
		if r.nextTimeout() != earliest {
			t.Fatalf("round %d: deadline %v, want the earliest CTS timer %v", round, r.nextTimeout(), earliest)
		}
		now = earliest
		c.ctrl.clear()
		r.handleTimeout(now)
		due := 0
		for i := range posted {
			if r.slots[i].ctsDue == monotime.Never {
				due++
				r.writeCTS(now, &r.slots[i], buf)
			}
		}
		if due == 0 || c.ctrl.len() != due {
			t.Fatalf("round %d: %d timers ran, %d CTS queued", round, due, c.ctrl.len())
		}
	}
}
