package cc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// sharedQueue runs two real hosts' NSCC flows (1 ms of host noise, the
// competitive mode on) through one drop-tail bottleneck of rate bytes/s
// and a 20 ms base RTT, the second starting late round trips after the
// first. Each round both flows put their windows on the wire; the queue
// they build together delays both. It returns the mean |ln(wA/wB)| over
// the last half of rounds, and how many times either entered the
// competitive mode.
func sharedQueue(rate float64, late, rounds int, seed uint64) (spread float64, entries uint64) {
	ms := monotime.Millisecond
	params := Params{LineRate: 10e9, LearnLineRate: true, BaseRTT: 20 * ms, MSS: mss, Quantum: 16 << 10, HostNoise: ms}
	bdp, buffer := rate*0.02, float64(256<<10)
	r := rand.New(rand.NewPCG(seed, 2))
	noise := func() monotime.Duration { return monotime.Duration(r.Float64() * float64(ms)) }
	a, b := newNSCCPath(NSCCDefaults(params)), newNSCCPath(NSCCDefaults(params))
	a.noise, b.noise = noise, noise
	n := 0
	for i := range rounds {
		w := float64(a.n.Window())
		if i >= late {
			w += float64(b.n.Window())
		}
		q := max(w-bdp, 0)
		over := int64(max(q-buffer, 0)) / mss // dropped this round, shared as the windows are
		q = min(q, buffer)
		delay := monotime.Duration(q / rate * 1e12)
		dropper := func(share float64) func() bool {
			left := int64(math.Round(float64(over) * share))
			return func() bool {
				if left > 0 {
					left--
					return true
				}
				return false
			}
		}
		shareA := 1.0
		if i >= late {
			shareA = float64(a.n.Window()) / w
		}
		a.round(delay, false, dropper(shareA))
		if i >= late {
			b.round(delay, false, dropper(1-shareA))
		}
		if i >= rounds/2 {
			spread += math.Abs(math.Log(float64(a.n.Window()) / float64(b.n.Window())))
			n++
		}
	}
	_, ea := a.n.Competing()
	_, eb := b.n.Competing()
	return spread / float64(n), ea + eb
}

// TestNSCCSharedQueueConverges: two NSCC flows sharing a queue even out
// their windows, the competitive mode on, as they do with a push that
// never stops (mean |ln(wA/wB)| 0.003-0.008 in this model). The push's
// stop, made for a competitor's queue, also fires for the queue the two
// build themselves, which the push's own balance holds above the target;
// when it ended only with the mean under the target, the flow whose push
// resumed first held the queue there and the other's stop went on down
// to the floor: spreads of 0.26-0.93, and at 25 MB/s both flows in the
// competitive mode.
//
// Not met: at 125 MB/s the two stops can lock into turns, each flow
// stopped while the other pushes (one flow's stop halves the excess,
// just the share that ends the other's), and the windows drift apart
// for hundreds of round trips before the stops fall into step again.
// Over 40 seeds 2 to 4 runs spread 0.05-0.32, the rest under 0.04 (at
// three builds); which seeds those are shifts with any change to the
// law's first round trips. Hence twelve seeds a rate, at most two over
// 0.05 and none over 0.3: a regression check, not a bound on every
// seed.
func TestNSCCSharedQueueConverges(t *testing.T) {
	for _, rate := range []float64{25e6, 50e6, 125e6} {
		wide := 0
		for seed := range uint64(12) {
			spread, entries := sharedQueue(rate, 50, 2000, seed)
			t.Logf("%3.0f MB/s, seed %2d: mean |ln(wA/wB)| %.3f, %d competitive entries", rate/1e6, seed, spread, entries)
			if spread > 0.05 {
				wide++
			}
			if spread > 0.3 || entries != 0 {
				t.Errorf("%3.0f MB/s, seed %d: mean |ln(wA/wB)| %.3f (want at most 0.3), %d competitive entries (want none)", rate/1e6, seed, spread, entries)
			}
		}
		if wide > 2 {
			t.Errorf("%3.0f MB/s: %d of 12 seeds spread over 0.05 (want at most 2)", rate/1e6, wide)
		}
	}
}

// TestNSCCLonePushStopsRarer: a lone flow's push stops on its own queue,
// which answers; each stop doubles the next hold, and the link stays
// full.
func TestNSCCLonePushStopsRarer(t *testing.T) {
	ms := monotime.Millisecond
	for _, rate := range []float64{25e6, 125e6} {
		b := bottleneck{bdp: rate * 0.02, buffer: 256 << 10, rate: rate / 1e12}
		p := newNSCCPath(NSCCDefaults(Params{LineRate: 10e9, LearnLineRate: true, BaseRTT: 20 * ms, MSS: mss, HostNoise: ms}))
		r := rand.New(rand.NewPCG(1, 1))
		p.noise = func() monotime.Duration { return monotime.Duration(r.Float64() * float64(ms)) }
		util, lost, _ := b.run(p, 3000, 100, false)
		_, entries := p.n.Competing()
		if p.n.push.doubled < 2 || util < 0.95 || lost > 0 || entries != 0 {
			t.Errorf("%3.0f MB/s: hold doubled %d times (want at least 2), utilization %.3f (want >= 0.95), lost %.0f B, %d competitive entries",
				rate/1e6, p.n.push.doubled, util, lost, entries)
		}
	}
}

// TestNSCCLateCompetitorWithDips: a flow alone for a while, its push's
// hold doubled by the stops on its own queue, then a competitor that
// holds the queue above the target but empties it for ten round trips
// every 470 (kernel BBR's PROBE_RTT, 200 ms every 10 s at 20 ms). The
// mode must start between two dips. With a hold that doubled on every
// stop a dip ended, and never came down, it never started (a review's
// model); the hold is capped in time, and a dip ends a stop without
// doubling it.
func TestNSCCLateCompetitorWithDips(t *testing.T) {
	c := newCompetePath()
	const rate = 25e6 // bytes per second
	for range 3000 {
		bdp := rate * c.base.Seconds()
		q := monotime.Duration(max(float64(c.n.Window())-bdp, 0) / rate * float64(monotime.Second))
		c.round(q, int64(min(float64(c.n.Window()), rate*(c.base+q).Seconds())))
	}
	doubled := c.n.push.doubled
	if doubled == 0 {
		t.Fatalf("alone for 3000 round trips the hold never doubled: the test shows nothing")
	}
	const held = 1300 * monotime.Microsecond
	for r := range 3000 {
		if on, _ := c.n.Competing(); on {
			t.Logf("competing %d round trips after the competitor came (hold doubled %d times when it came)", r, doubled)
			return
		}
		q := held
		if r%470 >= 460 {
			q = 0
		}
		c.round(q, c.n.Window())
	}
	t.Errorf("3000 round trips beside a queue held at %v with a dip every 470: never competing (hold doubled %d times when it came, window %d)",
		held, doubled, c.n.Window())
}
