package linkem

import (
	"math"
	"net/netip"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/minheap"
)

const ms = int64(time.Millisecond)

// TestLinkRate feeds a link in made-up time: a burst at once leaves paced
// at the rate, the queue drops the tail, and an idle bucket refills.
func TestLinkRate(t *testing.T) {
	// 1250-byte datagrams at 1 Gbit/s take 10 us each.
	l := newLink(Impairment{Rate: 1e9, Queue: 100 * 1250}, 1, 0, forward)
	var deps []int64
	drops := 0
	for range 150 {
		at, _, v := l.admit(ms, 1250)
		if v == dropQueue {
			drops++
			continue
		}
		deps = append(deps, at)
	}
	// The bucket starts full (one datagram leaves at once), then 100 more
	// fit the queue.
	if len(deps) != 101 || drops != 49 {
		t.Fatalf("admitted %d, dropped %d; want 101 and 49", len(deps), drops)
	}
	for i, at := range deps {
		if want := ms + int64(i)*10_000; at != want {
			t.Fatalf("datagram %d leaves at %d ns, want %d", i, at, want)
		}
	}
	// Once drained and idle for a while, a datagram leaves at once.
	if at, _, _ := l.admit(5*ms, 1250); at != 5*ms {
		t.Errorf("after idling, left at %d, want %d", at, 5*ms)
	}
	s := l.stats.snapshot()
	if s.Received != 151 || s.DroppedQueue != 49 {
		t.Errorf("stats %+v", s)
	}
	// The queue's wait: datagram i of the burst waited i x 10 us, the
	// idle one nothing.
	if want := 101 * 100 / 2 * 10 * time.Microsecond; s.Queued != 102 || s.QueueWait != want || s.MaxQueueWait != time.Millisecond {
		t.Errorf("queue wait: %d datagrams, %v, max %v; want 102, %v, 1ms", s.Queued, s.QueueWait, s.MaxQueueWait, want)
	}
	if got, want := s.MeanQueueWait(), 50500*time.Microsecond/102; got != want {
		t.Errorf("mean queue wait %v, want %v", got, want)
	}
	// A datagram lost past the bucket did not wait for anyone.
	lossy := newLink(Impairment{Rate: 1e9, Loss: 1}, 1, 0, forward)
	for range 10 {
		lossy.admit(ms, 1250)
	}
	if s := lossy.stats.snapshot(); s.DroppedLoss != 10 || s.Queued != 0 || s.QueueWait != 0 {
		t.Errorf("all lost: %d lost, %d queued waiting %v; want 10, 0, 0", s.DroppedLoss, s.Queued, s.QueueWait)
	}
}

func TestLinkBurst(t *testing.T) {
	l := newLink(Impairment{Rate: 1e9, Burst: 10 * 1250}, 1, 0, forward)
	for i := range 12 {
		at, _, _ := l.admit(ms, 1250)
		want := ms
		if i >= 10 {
			want = ms + int64(i-9)*10_000
		}
		if at != want {
			t.Errorf("datagram %d leaves at %d, want %d", i, at, want)
		}
	}
}

// TestLinkLongRunRate checks the bucket's rate over many datagrams
// arriving faster than it.
func TestLinkLongRunRate(t *testing.T) {
	for _, rate := range []float64{1e9, 2e9, 3.3e9} {
		l := newLink(Impairment{Rate: rate, Queue: 1 << 30}, 1, 0, forward)
		const n, size = 100_000, 4096
		var last int64
		for i := range n {
			last, _, _ = l.admit(int64(i)*1000, size) // 32 Gbit/s offered
		}
		got := float64((n-1)*size*8) / (float64(last) / 1e9)
		if math.Abs(got-rate)/rate > 1e-6 {
			t.Errorf("rate %g: paced at %g", rate, got)
		}
	}
}

func TestLinkDelayJitter(t *testing.T) {
	const delay, jitter = 10 * ms, 2 * ms
	l := newLink(Impairment{Delay: time.Duration(delay), Jitter: time.Duration(jitter)}, 42, 3, reverse)
	var prev int64
	spread := map[bool]int{}
	for i := range 10_000 {
		now := int64(i) * 5 * ms // far apart: jitter never clamped
		at, _, _ := l.admit(now, 100)
		d := at - now
		if d < delay-jitter || d > delay+jitter {
			t.Fatalf("delay %d outside [%d, %d]", d, delay-jitter, delay+jitter)
		}
		if at < prev {
			t.Fatalf("jitter reordered: %d before %d", at, prev)
		}
		prev = at
		spread[d > delay]++
	}
	if spread[true] < 4500 || spread[false] < 4500 {
		t.Errorf("jitter not symmetric: %v", spread)
	}
	// Close together, jitter keeps order.
	prev = 0
	for i := range 10_000 {
		at, _, _ := l.admit(int64(i)*1000, 100)
		if at < prev {
			t.Fatalf("jitter reordered close datagrams")
		}
		prev = at
	}
}

func TestLinkLossModels(t *testing.T) {
	const n = 200_000
	for _, tt := range []struct {
		name string
		im   Impairment
		want float64
	}{
		{"bernoulli", Impairment{Loss: 0.01}, 0.01},
		{"ge", Impairment{GE: GilbertElliott{P: 0.01, R: 0.3, LossBad: 1}}, 0.01 / 0.31},
		{"ge-good-loss", Impairment{GE: GilbertElliott{P: 0.05, R: 0.5, LossBad: 0.5, LossGood: 0.01}}, GilbertElliott{P: 0.05, R: 0.5, LossBad: 0.5, LossGood: 0.01}.Rate()},
	} {
		l := newLink(tt.im, 9, 0, forward)
		lost, bursts, inBurst := 0, 0, false
		for i := range n {
			_, _, v := l.admit(int64(i), 100)
			if v == dropLoss {
				lost++
				if !inBurst {
					bursts++
				}
			}
			inBurst = v == dropLoss
		}
		got := float64(lost) / n
		if math.Abs(got-tt.want) > 0.1*tt.want {
			t.Errorf("%s: loss rate %.5f, want %.5f", tt.name, got, tt.want)
		}
		if tt.name == "ge" {
			// Mean burst is 1/R = 3.3 datagrams.
			if mean := float64(lost) / float64(bursts); mean < 2.8 || mean > 3.9 {
				t.Errorf("ge: mean burst %.2f, want about 3.3", mean)
			}
		}
	}
}

func TestLinkDeterministic(t *testing.T) {
	im := Impairment{Delay: time.Millisecond, Jitter: 500 * time.Microsecond, Loss: 0.1, Reorder: 0.1, ReorderDelay: time.Millisecond, Duplicate: 0.1}
	run := func(seed uint64, index int, im Impairment) []int64 {
		l := newLink(im, seed, index, forward)
		var out []int64
		for i := range 1000 {
			at, dup, v := l.admit(int64(i)*10_000, 100)
			if dup {
				at = -at
			}
			out = append(out, at, int64(v))
		}
		return out
	}
	a, b := run(1, 0, im), run(1, 0, im)
	if !equal(a, b) {
		t.Error("same seed, different decisions")
	}
	if equal(a, run(2, 0, im)) || equal(a, run(1, 1, im)) {
		t.Error("different seed or path, same decisions")
	}
	// Turning duplication off does not change which datagrams are lost.
	lossOf := func(out []int64) (s []int64) {
		for i := 1; i < len(out); i += 2 {
			s = append(s, out[i])
		}
		return s
	}
	noDup := im
	noDup.Duplicate = 0
	if !equal(lossOf(a), lossOf(run(1, 0, noDup))) {
		t.Error("duplication changed the loss draws")
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLinkDownWindows(t *testing.T) {
	im := Impairment{Delay: 10 * time.Millisecond, Down: []Window{{100 * time.Millisecond, 200 * time.Millisecond}}}
	l := newLink(im, 1, 0, forward)
	for _, tt := range []struct {
		now  int64
		want verdict
	}{
		{0, pass},
		{89 * ms, pass},
		{95 * ms, dropFail},  // delivered while down
		{150 * ms, dropFail}, // arrives while down
		{199 * ms, dropFail},
		{200 * ms, pass},
	} {
		if _, _, v := l.admit(tt.now, 100); v != tt.want {
			t.Errorf("at %v: verdict %d, want %d", time.Duration(tt.now), v, tt.want)
		}
	}
}

func TestQueueOrder(t *testing.T) {
	var q []pending
	// Ties leave in arrival order.
	ats := []int64{5, 3, 5, 1, 3, 9, 5, 0}
	for i, at := range ats {
		minheap.Push(&q, pending{at: at, seq: uint64(i)})
	}
	var prev pending
	for i := 0; len(q) > 0; i++ {
		p := minheap.Pop(&q)
		if i > 0 && (p.at < prev.at || (p.at == prev.at && p.seq < prev.seq)) {
			t.Fatalf("popped %+v after %+v", p, prev)
		}
		prev = p
	}
}

func TestPool(t *testing.T) {
	var p pool
	for _, n := range []int{1, 64, 65, 1400, 4096, 9000, 65535, 65536} {
		b := p.get(n)
		if len(b) != n || cap(b) < n || cap(b)&(cap(b)-1) != 0 {
			t.Errorf("get(%d): len %d cap %d", n, len(b), cap(b))
		}
		p.put(b)
		if c := p.get(n); &c[:1][0] != &b[:1][0] {
			t.Errorf("get(%d) did not reuse the buffer", n)
		}
	}
}

// TestSharedBottleneck: under Config.Shared two paths' links cross one
// bucket and one queue: together they leave at the rate, interleaved in
// arrival order, and the queue holds both paths' bytes; without it each
// path has the whole rate and a queue of its own.
func TestSharedBottleneck(t *testing.T) {
	cfg := Config{Default: Both(Impairment{Rate: 1e9, Queue: 100 * 1250, Delay: time.Millisecond}), Shared: true}
	shared := sharedShapers(&cfg)
	a := newPath(&cfg, 0, netip.MustParseAddrPort("127.0.0.1:1000"), shared)
	b := newPath(&cfg, 1, netip.MustParseAddrPort("127.0.0.1:1001"), shared)
	if a.links[forward].bucket != b.links[forward].bucket || a.links[forward].bucket == a.links[reverse].bucket {
		t.Fatal("paths do not share one bucket per direction")
	}
	// 150 datagrams of each path at once: 1 in the bucket, 100 queued in
	// all, 199 dropped; departures 10 us apart whichever path sent.
	var deps []int64
	drops := [2]int{}
	for i := range 300 {
		l := [2]*link{a.links[forward], b.links[forward]}[i%2]
		at, _, v := l.admit(ms, 1250)
		if v == dropQueue {
			drops[i%2]++
			continue
		}
		deps = append(deps, at)
	}
	if len(deps) != 101 || drops[0]+drops[1] != 199 || drops[0] < 99 || drops[1] < 99 {
		t.Fatalf("admitted %d, dropped %v; want 101 and 199, shared about evenly", len(deps), drops)
	}
	for i, at := range deps {
		if want := 2*ms + int64(i)*10_000; at != want {
			t.Fatalf("datagram %d leaves at %d ns, want %d", i, at, want)
		}
	}
	// The reverse direction has its own shared bucket, idle so far.
	if at, _, _ := b.links[reverse].admit(ms, 1250); at != 2*ms {
		t.Errorf("reverse left at %d, want %d", at, 2*ms)
	}

	// Not shared: each path's burst gets a bucket and a queue of its own.
	cfg.Shared = false
	a = newPath(&cfg, 0, netip.MustParseAddrPort("127.0.0.1:1000"), sharedShapers(&cfg))
	b = newPath(&cfg, 1, netip.MustParseAddrPort("127.0.0.1:1001"), sharedShapers(&cfg))
	passed := 0
	for i := range 300 {
		l := [2]*link{a.links[forward], b.links[forward]}[i%2]
		if _, _, v := l.admit(ms, 1250); v == pass {
			passed++
		}
	}
	if passed != 202 {
		t.Errorf("unshared: %d passed, want 2 x 101", passed)
	}
}

// TestLossSchedule: a LossAt window replaces Loss while it lasts.
func TestLossSchedule(t *testing.T) {
	im := Impairment{Loss: 0, LossAt: []LossWindow{{Window{time.Second, 2 * time.Second}, 0.5}}}
	l := newLink(im, 1, 0, forward)
	count := func(from time.Duration) (lost int) {
		for i := range 10000 {
			if _, _, v := l.admit(int64(from)+int64(i)*1000, 100); v == dropLoss {
				lost++
			}
		}
		return lost
	}
	if n := count(0); n != 0 {
		t.Errorf("before the window: %d of 10000 lost, want 0", n)
	}
	if n := count(time.Second); n < 4500 || n > 5500 {
		t.Errorf("in the window: %d of 10000 lost, want about 5000", n)
	}
	if n := count(2 * time.Second); n != 0 {
		t.Errorf("after the window: %d of 10000 lost, want 0", n)
	}
}
