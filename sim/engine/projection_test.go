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
		want   map[int]float64 // threads -> speedup
	}{
		// Two parts, equally busy in every window: two threads halve it.
		{"balanced", 2, []ev{{0, 0}, {0, 1}, {us, 0}, {us, 1}}, map[int]float64{1: 1, 2: 2, 4: 2}},
		// All of a window's work in one part: no thread count helps.
		{"one part busy", 2, []ev{{0, 0}, {0, 0}, {us, 1}, {us, 1}}, map[int]float64{1: 1, 2: 1}},
		// An event of no part runs alone: 4 events over 1 + 1 + 1 steps.
		{"a workload's event", 2, []ev{{0, 0}, {0, 1}, {0, -1}, {us, 0}}, map[int]float64{2: 4.0 / 3}},
		// Four parts on two threads: parts 0-1 on one, 2-3 on the other.
		{"blocks", 4, []ev{{0, 0}, {0, 1}, {0, 2}, {0, 3}}, map[int]float64{2: 2, 4: 4, 3: 2}},
	}
	for _, c := range cases {
		threads := []int{}
		for n := range c.want {
			threads = append(threads, n)
		}
		p := NewProjection(c.parts, us, threads)
		for _, e := range c.events {
			p.Add(monotime.Time(e.t), e.part)
		}
		got, _, _ := p.Result()
		for _, tp := range got {
			if math.Abs(tp.Speedup-c.want[tp.Threads]) > 1e-9 {
				t.Errorf("%s: %d threads: speedup %.3f, want %.3f", c.name, tp.Threads, tp.Speedup, c.want[tp.Threads])
			}
			if tp.IdleMean < 0 || tp.IdleMax < tp.IdleMean || tp.IdleMax > 1 {
				t.Errorf("%s: %d threads: idle mean %.3f, max %.3f", c.name, tp.Threads, tp.IdleMean, tp.IdleMax)
			}
		}
	}
}
