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

// TestBBRWideArea runs one BBR sender as a real host does (a guessed
// 10 Gbit/s line rate, no window but BBR's own) through a 1 Gbit/s,
// 20 ms bottleneck, hosts without noise, and checks the path's use past
// startup against the rate left after loss, the queue drops and what was
// resent, with every byte checked. Random and bursty loss are not
// congestion; a shallow queue is; a rate that halves and comes back is
// followed.
func TestBBRWideArea(t *testing.T) {
	ms := monotime.Millisecond
	const size = 128 << 20
	cases := []struct {
		name string
		link coretest.LinkConfig
		// The rate halves over [from, until) when until is set.
		from, until monotime.Duration
		scheme      string
		// minUse is the least share of the bottleneck's rate (after
		// loss) carried past startup; maxQueueDrops bounds the drops
		// of a full queue past it, maxResent the bytes resent over
		// the bytes sent (the whole run).
		minUse        float64
		maxQueueDrops uint64
		maxResent     float64
		// wantIgnored says some losses must have been taken for random.
		wantIgnored bool
	}{
		{name: "clean deep buffer", link: coretest.LinkConfig{Queue: 16 << 20}, minUse: 0.95, maxResent: 0.001},
		{name: "random 2%", link: coretest.LinkConfig{Queue: 16 << 20, Loss: 0.02}, minUse: 0.93, maxResent: 0.03, wantIgnored: true},
		{name: "bursty 2%", link: coretest.LinkConfig{Queue: 16 << 20, Burst: coretest.Bursty(0.02, 10)}, minUse: 0.93, maxResent: 0.035, wantIgnored: true},
		{name: "random 1% ec", link: coretest.LinkConfig{Queue: 16 << 20, Loss: 0.01}, scheme: "ec:32,8", minUse: 0.93, maxResent: 0.02},
		// Startup's last round trip overfills a shallow queue (drops
		// that a longer transfer dilutes); past it, probing does.
		{name: "shallow queue", link: coretest.LinkConfig{Queue: 256 << 10}, minUse: 0.92, maxQueueDrops: 200, maxResent: 0.025},
		{name: "shallow queue, 1% loss", link: coretest.LinkConfig{Queue: 256 << 10, Loss: 0.01}, minUse: 0.88, maxQueueDrops: 350, maxResent: 0.03},
		{name: "rate halves", link: coretest.LinkConfig{Queue: 1 << 20}, from: 300 * ms, until: 600 * ms, minUse: 0.7, maxQueueDrops: 1000, maxResent: 0.04},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			alg, err := cc.Parse("bbr")
			if err != nil {
				t.Fatal(err)
			}
			name := tc.scheme
			if name == "" {
				name = "sr-nack"
			}
			scheme, err := reliability.Parse(name)
			if err != nil {
				t.Fatal(err)
			}
			cfg := core.Config{Scheme: scheme, CC: alg, LineRate: 10e9, LearnLineRate: true, MinRTO: 25 * ms}
			link := tc.link
			link.Delay, link.Rate = 10*ms, 1e9
			p, done := establish(t, coretest.Config{Seed: 1, A: cfg, B: cfg, Handshake: true,
				Link: link, Reverse: &coretest.LinkConfig{Delay: 10 * ms}})
			start := p.Now
			// Past startup (300 ms: five round trips of doubling and the
			// drain) until the first pass is on the wire: the bytes the
			// link carried over the rate it offered.
			var from monotime.Time
			var fromBytes, fromDrops, untilBytes uint64
			var offered float64 // bits the link could have carried
			last := start
			deliver(t, p, done, append(bytes.Clone(message(size/2)), message(size/2)...), func() {
				ab, _ := p.LinkStats()
				el := p.Now.Sub(start)
				rate := 1e9
				if tc.until > 0 && el >= tc.from && el < tc.until {
					rate = 0.5e9
				}
				p.SetRate(rate)
				if from == 0 && el >= 300*ms {
					from, fromBytes, fromDrops = p.Now, ab.Bytes, ab.QueueDrops
				}
				if from != 0 && ab.Bytes < size {
					offered += rate * p.Now.Sub(last).Seconds()
					untilBytes = ab.Bytes
				}
				last = p.Now
			})
			ab, _ := p.LinkStats()
			use := float64(untilBytes-fromBytes) * 8 / offered
			st := p.A.Conn.Stats()
			ccs := p.A.Conn.CCStats()
			resent := float64(st.RetxBytes) / float64(st.DataBytes)
			t.Logf("%v: the link %.3f used past startup, %d queue drops (%d past startup), %.2f%% resent, %d RTOs; cc %+v",
				p.Now.Sub(start), use, ab.QueueDrops, ab.QueueDrops-fromDrops, 100*resent, st.RTOs, ccs)
			if use < tc.minUse {
				t.Errorf("the link %.3f used past startup; want at least %.2f", use, tc.minUse)
			}
			if ab.QueueDrops-fromDrops > tc.maxQueueDrops {
				t.Errorf("%d queue drops past startup; want at most %d", ab.QueueDrops-fromDrops, tc.maxQueueDrops)
			}
			if resent > tc.maxResent {
				t.Errorf("resent %.2f%% of the data; want at most %.2f%%", 100*resent, 100*tc.maxResent)
			}
			if tc.wantIgnored && ccs.IgnoredLosses == 0 {
				t.Error("no loss was taken for random")
			}
		})
	}
}

// appLimitedRecorder is BBR that records when the core says the sender
// ran out of data, and how many bytes had left by then.
type appLimitedRecorder struct {
	*cc.BBR
	sent  int64
	calls []int64 // sent at each OnAppLimited
}

func (r *appLimitedRecorder) OnSend(now monotime.Time, bytes int) {
	r.sent += int64(bytes)
	r.BBR.OnSend(now, bytes)
}

func (r *appLimitedRecorder) OnAppLimited(now monotime.Time) {
	r.calls = append(r.calls, r.sent)
	r.BBR.OnAppLimited(now)
}

// TestAppLimitedSignal: the core tells a delivery-rate controller that
// its sender is application-limited once the application's message has
// all left, not while the pacer or the window holds it back.
func TestAppLimitedSignal(t *testing.T) {
	const size = 4 << 20
	var made []*appLimitedRecorder
	alg := cc.NewAlgorithm("bbr-recorded", func(p cc.Params) cc.Controller {
		r := &appLimitedRecorder{BBR: cc.NewBBR(p)}
		made = append(made, r)
		return r
	})
	cfg := core.Config{Scheme: reliability.SelectiveRepeat{}, CC: alg}
	link := coretest.LinkConfig{Delay: monotime.Millisecond, Rate: 1e9, Queue: 16 << 20}
	p, done := establish(t, coretest.Config{Seed: 1, A: cfg, B: cfg, Handshake: true, Link: link, Reverse: &link})
	deliver(t, p, done, message(size), nil)
	var sender *appLimitedRecorder
	for _, r := range made {
		if r.sent > 0 {
			sender = r
		}
	}
	if sender == nil || len(sender.calls) == 0 {
		t.Fatal("the sender never said it was application-limited")
	}
	if first := sender.calls[0]; first < size {
		t.Fatalf("application-limited after %d bytes of a %d-byte message", first, size)
	}
}
