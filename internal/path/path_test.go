package path

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

var allKinds = []Kind{Single, Oblivious, RoundRobin, BestRTT, DWRR}

// healthAware are the kinds that skip failed paths.
var healthAware = []Kind{Oblivious, RoundRobin, BestRTT, DWRR}

func TestParseKind(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Kind
	}{
		{"single", Single}, {"obs", Oblivious}, {"rr", RoundRobin},
		{"bestrtt", BestRTT}, {"dwrr", DWRR}, {"OBS", Oblivious}, {"BestRTT", BestRTT},
	} {
		got, err := ParseKind(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseKind(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, k := range allKinds {
		got, err := ParseKind(k.String())
		if err != nil || got != k {
			t.Errorf("ParseKind(%v.String()) = %v, %v", k, got, err)
		}
		var u Kind
		b, err := k.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		if err := u.UnmarshalText(b); err != nil || u != k {
			t.Errorf("text round trip of %v: %v, %v", k, u, err)
		}
	}
	for _, bad := range []string{"", "ecmp", "rr ", "random"} {
		_, err := ParseKind(bad)
		if err == nil {
			t.Errorf("ParseKind(%q): no error", bad)
			continue
		}
		for _, name := range []string{"single", "obs", "rr", "bestrtt", "dwrr"} {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("ParseKind(%q) error %q does not list %q", bad, err, name)
			}
		}
	}
	var k Kind
	if err := k.UnmarshalText([]byte("nope")); err == nil {
		t.Error("UnmarshalText(nope): no error")
	}
	if _, err := Kind(99).MarshalText(); err == nil {
		t.Error("MarshalText(99): no error")
	}
}

func TestNewArguments(t *testing.T) {
	for _, tc := range []struct {
		kind  Kind
		paths int
		ok    bool
	}{
		{RoundRobin, 0, false}, {RoundRobin, -1, false}, {RoundRobin, 129, false},
		{Kind(5), 4, false}, {Kind(255), 4, false},
		{Single, 1, true}, {Oblivious, 1, true}, {DWRR, 128, true}, {BestRTT, 128, true},
	} {
		s, err := New(tc.kind, tc.paths, 1)
		if (err == nil) != tc.ok {
			t.Errorf("New(%v, %d): err = %v, want ok=%v", tc.kind, tc.paths, err, tc.ok)
		}
		if err != nil && tc.paths >= 1 && tc.paths <= MaxPaths && !strings.Contains(err.Error(), "bestrtt") {
			t.Errorf("New(%v): error %q does not list the choices", tc.kind, err)
		}
		if tc.ok && TableOf(s).Len() != tc.paths {
			t.Errorf("New(%v, %d): table has %d paths", tc.kind, tc.paths, TableOf(s).Len())
		}
	}
	if TableOf(foreign{}) != nil {
		t.Error("TableOf(foreign selector) is not nil")
	}
}

type foreign struct{}

func (foreign) Select(monotime.Time) int                           { return 0 }
func (foreign) OnSent(monotime.Time, int, int)                     {}
func (foreign) OnAcked(monotime.Time, int, int, monotime.Duration) {}
func (foreign) OnLost(monotime.Time, int)                          {}
func (foreign) OnForgotten(int)                                    {}
func (foreign) OnCancelled(int)                                    {}

// TestSelectDistribution checks where packets go with no feedback at all:
// Single all on path 0, the others evenly.
func TestSelectDistribution(t *testing.T) {
	for _, n := range []int{1, 3, 16, 128} {
		for _, kind := range allKinds {
			s, err := New(kind, n, 7)
			if err != nil {
				t.Fatal(err)
			}
			const cycles = 50
			got := make([]int, n)
			for i := range cycles * n {
				now := monotime.Time(i) * monotime.Time(us)
				p := s.Select(now)
				s.OnSent(now, p, pkt)
				got[p]++
			}
			for p, c := range got {
				want, slack := cycles, 0
				switch kind {
				case Single:
					want = 0
					if p == 0 {
						want = cycles * n
					}
				case BestRTT:
					// No RTT yet: round robin, with every ExploreEvery-th
					// packet from a second round robin.
					slack = 2
				}
				if c < want-slack || c > want+slack {
					t.Errorf("%v, %d paths: path %d got %d packets, want %d±%d", kind, n, p, c, want, slack)
				}
			}
		}
	}
}

func TestSingleIgnoresHealth(t *testing.T) {
	s, _ := New(Single, 8, 1)
	for i := range 100 {
		now := monotime.Time(i) * monotime.Time(us)
		if p := s.Select(now); p != 0 {
			t.Fatalf("Select = %d", p)
		}
		s.OnSent(now, 0, pkt)
		s.OnLost(now, 0)
	}
	if st := TableOf(s).Stats(0); st.State != "failed" || st.Lost != 100 || st.Sent != 100 {
		t.Errorf("stats %+v: want 100 sent, 100 lost, failed", st)
	}
}

func TestRoundRobinCycle(t *testing.T) {
	for _, n := range []int{1, 2, 5, 16, 128} {
		s, _ := New(RoundRobin, n, uint64(n))
		prev := s.Select(0)
		for i := 1; i < 3*n+1; i++ {
			p := s.Select(monotime.Time(i))
			if p != (prev+1)%n {
				t.Fatalf("%d paths: %d after %d", n, p, prev)
			}
			prev = p
		}
	}
}

func TestObliviousPermutations(t *testing.T) {
	for _, n := range []int{2, 4, 16, 128} {
		s, _ := New(Oblivious, n, 3)
		var prev []int
		repeats := 0
		const cycles = 40
		for c := range cycles {
			cycle := make([]int, n)
			for i := range cycle {
				cycle[i] = s.Select(monotime.Time(c*n + i))
			}
			sorted := slices.Sorted(slices.Values(cycle))
			for i, p := range sorted {
				if p != i {
					t.Fatalf("%d paths: cycle %d = %v is not a permutation", n, c, cycle)
				}
			}
			if slices.Equal(cycle, prev) {
				repeats++
			}
			prev = cycle
		}
		// Two random permutations of 16 or more agree with probability
		// at most 1/16!; of 4, 1/24; of 2, 1/2.
		if (n >= 16 && repeats > 0) || (n >= 4 && repeats > cycles/4) || repeats == cycles {
			t.Errorf("%d paths: %d of %d cycles repeat the previous one", n, repeats, cycles)
		}
	}
}

func TestBestRTTConvergesAndExplores(t *testing.T) {
	const n = 16
	rtt := make([]monotime.Duration, n)
	for i := range rtt {
		rtt[i] = 200*us + monotime.Duration(i)*10*us
	}
	rtt[11] = 50 * us
	f := newFakeNet(t, BestRTT, rtt, 1)
	f.run(5 * monotime.Millisecond)
	got := f.run(10 * monotime.Millisecond)
	total := sum(got)
	if share := float64(got[11]) / float64(total); share < 0.9 || share > 1-0.5/ExploreEvery {
		t.Errorf("lowest-RTT path got %.3f of packets, want about %.3f; %v", share, 1-1.0/ExploreEvery, got)
	}
	for p, c := range got {
		if p != 11 && c < total/ExploreEvery/(n-1)/2 {
			t.Errorf("path %d explored only %d times in %d packets", p, c, total)
		}
		if st := f.t.Stats(p); st.SRTT == 0 {
			t.Errorf("path %d has no RTT sample", p)
		}
	}
	// The best path slows down and another becomes the fastest.
	f.rtt[11], f.rtt[3] = 1000*us, 30*us
	f.run(10 * monotime.Millisecond)
	got = f.run(5 * monotime.Millisecond)
	if share := float64(got[3]) / float64(sum(got)); share < 0.9 {
		t.Errorf("after the change path 3 got %.3f of packets, want about %.3f; %v", share, 1-1.0/ExploreEvery, got)
	}
}

func TestDWRRSharesFollowDeliveryRates(t *testing.T) {
	for _, rates := range [][]int{{3, 1}, {1, 1, 1, 1}, {4, 2, 1, 1}, {1, 0}, {8, 0, 0, 4, 2}} {
		n := len(rates)
		s, _ := New(DWRR, n, 9)
		now := monotime.Time(0)
		// 2 ms of acks in the given ratio, 100 us RTT.
		for range 2000 {
			now = now.Add(us)
			for p, r := range rates {
				for range r {
					s.OnAcked(now, p, 1000, 100*us)
				}
			}
		}
		got := make([]int, n)
		const packets = 32000
		for range packets {
			p := s.Select(now)
			s.OnSent(now, p, pkt)
			got[p]++
		}
		top := float64(slices.Max(rates))
		var weights []float64
		for _, r := range rates {
			weights = append(weights, 1.0/DWRRMinShare+(1-1.0/DWRRMinShare)*float64(r)/top)
		}
		var wsum float64
		for _, w := range weights {
			wsum += w
		}
		for p := range rates {
			want := weights[p] / wsum
			share := float64(got[p]) / packets
			if math.Abs(share-want) > 0.005 {
				t.Errorf("rates %v: path %d got share %.4f, want %.4f (%v)", rates, p, share, want, got)
			}
		}
	}
}

// TestDWRRClosedLoop sends more than two paths of capacity 3:1 can carry;
// what they deliver sets their weights, which settle near 3:1.
func TestDWRRClosedLoop(t *testing.T) {
	f := newFakeNet(t, DWRR, uniformRTT(2, 50*us), 1)
	f.capacity = []float64{0.45, 0.15}
	f.run(20 * monotime.Millisecond)
	got := f.run(20 * monotime.Millisecond)
	ratio := float64(got[0]) / float64(got[1])
	if ratio < 2.5 || ratio > 3.2 {
		t.Errorf("paths of capacity 3:1 got %d:%d = %.2f:1 of packets, want about 3:1", got[0], got[1], ratio)
	}
	if f.t.UpCount() != 2 {
		t.Errorf("%d paths up, want 2", f.t.UpCount())
	}
}

func TestDeterministicForSeed(t *testing.T) {
	trace := func(kind Kind, seed uint64) []int {
		rtt := make([]monotime.Duration, 16)
		for i := range rtt {
			rtt[i] = monotime.Duration(50+7*i) * us
		}
		f := newFakeNet(t, kind, rtt, seed)
		var out []int
		for i := range 20000 {
			if i%3000 == 0 { // paths die and recover
				f.dead[(i/3000)%16] = !f.dead[(i/3000)%16]
			}
			out = append(out, f.step())
		}
		return out
	}
	for _, kind := range allKinds {
		a, b := trace(kind, 42), trace(kind, 42)
		if !slices.Equal(a, b) {
			t.Errorf("%v: two runs with the same seed differ", kind)
		}
	}
	if slices.Equal(trace(Oblivious, 1), trace(Oblivious, 2)) {
		t.Error("obs: different seeds give the same choices")
	}
}

func TestZeroAllocs(t *testing.T) {
	for _, kind := range allKinds {
		s, _ := New(kind, MaxPaths, 5)
		now := monotime.Time(0)
		i := 0
		step := func() {
			i++
			now = now.Add(100 * monotime.Nanosecond)
			p := s.Select(now)
			s.OnSent(now, p, pkt)
			if i%5 == 0 {
				s.OnLost(now, p)
			} else {
				s.OnAcked(now, p, pkt, monotime.Duration(10+p%7)*us)
			}
			if i%1000 < 40 { // a burst of losses fails a path now and then
				s.OnLost(now, (i/1000)%MaxPaths)
			}
		}
		for range 100000 {
			step()
		}
		if a := testing.AllocsPerRun(10000, step); a != 0 {
			t.Errorf("%v: %.2f allocations per packet", kind, a)
		}
		_ = TableOf(s).Stats(0)
	}
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}

// TestDWRRWindowTuning: DWRR re-weighs at the end of each half window, so
// on paths of capacity 3:1 the default window settles near 3:1 while one
// longer than the whole run stays near even.
func TestDWRRWindowTuning(t *testing.T) {
	ratio := func(tune Tuning) float64 {
		f := newFakeNet(t, DWRR, uniformRTT(2, 50*us), 1)
		s, err := NewTuned(DWRR, 2, 1, tune)
		if err != nil {
			t.Fatal(err)
		}
		f.s, f.t = s, TableOf(s)
		f.capacity = []float64{0.45, 0.15}
		f.run(20 * monotime.Millisecond)
		got := f.run(20 * monotime.Millisecond)
		return float64(got[0]) / float64(got[1])
	}
	if got := ratio(Tuning{}); got < 2.5 {
		t.Errorf("default window (%d RTTs): packets split %.2f:1, want near 3:1", DWRRWindowRTTs, got)
	}
	// Only the path table's health moves the longer one off even: the
	// slow path's losses.
	if got := ratio(Tuning{DWRRWindowRTTs: 4096}); got > 1.5 {
		t.Errorf("window of 4096 RTTs, longer than the run: packets split %.2f:1, want near 1:1", got)
	}
	for _, w := range []int{-1, MaxDWRRWindowRTTs + 1} {
		if _, err := NewTuned(DWRR, 2, 9, Tuning{DWRRWindowRTTs: w}); err == nil || !strings.Contains(err.Error(), "DWRR window") {
			t.Errorf("DWRR window %d: err = %v, want a range error", w, err)
		}
	}
}
