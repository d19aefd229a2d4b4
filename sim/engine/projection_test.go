package engine

import (
	"math"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

func TestProjection(t *testing.T) {
	us := monotime.Microsecond
	type ev struct {
		t    monotime.Duration
		part int
	}
	cases := []struct {
		name   string
		parts  int
		events []ev
		want   map[int]float64 // threads -> speedup in blocks
	}{
		// Two parts, equally busy in every window: two threads halve it.
		{"balanced", 2, []ev{{0, 0}, {0, 1}, {us, 0}, {us, 1}}, map[int]float64{1: 1, 2: 2, 4: 2}},
		// All of a window's work in one part: no thread count helps.
		{"one part busy", 2, []ev{{0, 0}, {0, 0}, {us, 1}, {us, 1}}, map[int]float64{1: 1, 2: 1}},
		// An event of no part runs alone: 4 events over 1 + 1 + 1 steps.
		{"a workload's event", 2, []ev{{0, 0}, {0, 1}, {0, -1}, {us, 0}}, map[int]float64{2: 4.0 / 3}},
		// Four parts on two threads: parts 0-1 on one, 2-3 on the other.
		{"blocks", 4, []ev{{0, 0}, {0, 1}, {0, 2}, {0, 3}}, map[int]float64{2: 2, 4: 4, 3: 2}},
		// Neighbours busy at once: blocks put both on one thread.
		{"neighbours", 4, []ev{{0, 0}, {0, 1}, {us, 2}, {us, 3}}, map[int]float64{2: 1, 4: 2}},
	}
	for _, c := range cases {
		threads := []int{}
		for n := range c.want {
			threads = append(threads, n)
		}
		p := NewProjection(c.parts, us, threads)
		for _, e := range c.events {
			p.Add(monotime.Time(e.t), e.part, -1)
		}
		got, _, _ := p.Result()
		for _, tp := range got {
			if tp.Interleaved {
				continue // TestProjectionInterleaved
			}
			if math.Abs(tp.Speedup-c.want[tp.Threads]) > 1e-9 {
				t.Errorf("%s: %d threads: speedup %.3f, want %.3f", c.name, tp.Threads, tp.Speedup, c.want[tp.Threads])
			}
			if tp.IdleMean < 0 || tp.IdleMax < tp.IdleMean || tp.IdleMax > 1 {
				t.Errorf("%s: %d threads: idle mean %.3f, max %.3f", c.name, tp.Threads, tp.IdleMean, tp.IdleMax)
			}
		}
	}
}

// TestProjectionInterleaved: dealing parts out in turn spreads busy
// neighbours over threads, and a packet between neighbours then passes
// between threads, where blocks keep it on one.
func TestProjectionInterleaved(t *testing.T) {
	us := monotime.Microsecond
	p := NewProjection(4, us, []int{2})
	for _, part := range []int{0, 1} {
		p.Add(0, part, -1)
	}
	for _, part := range []int{2, 3} {
		p.Add(monotime.Time(us), part, part^1) // each from its neighbour
	}
	got, windows, _ := p.Result()
	if windows != 2 || len(got) != 2 {
		t.Fatalf("%d windows, %d results; want 2 and 2", windows, len(got))
	}
	for _, tp := range got {
		speedup, handoffs := 1.0, uint64(0)
		if tp.Interleaved {
			speedup, handoffs = 2, 2
		}
		if math.Abs(tp.Speedup-speedup) > 1e-9 || tp.Handoffs != handoffs {
			t.Errorf("interleaved %v: speedup %.3f with %d handoffs, want %.0f and %d", tp.Interleaved, tp.Speedup, tp.Handoffs, speedup, handoffs)
		}
	}
}
