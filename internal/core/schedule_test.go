package core

import (
	"container/heap"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// TestSchedule checks the endpoint's two indexes against a walk of every
// connection, the way the endpoint looked before it had them: random
// touches, deadlines and polls over connections whose count crosses word
// boundaries of the bitset.
func TestSchedule(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, 200} {
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		e := NewEndpoint()
		for i := range n {
			e.place(&Conn{id: uint64(i + 1), slot: -1})
		}
		want := make([]bool, n)
		for i := range want {
			want[i] = true // placing a connection touches it
		}
		for range 2000 {
			i := rng.IntN(n)
			c := e.order[i]
			switch rng.IntN(3) {
			case 0:
				e.touch(c)
				want[i] = true
			case 1:
				e.sched.clearSendable(i)
				want[i] = false
			case 2:
				// A deadline filed directly, as fileDeadlines would.
				c.filed = monotime.Time(rng.IntN(100))
				if c.heapAt < 0 {
					e.sched.timers.Push(c)
				}
				heap.Init(&e.sched.timers)
			}
			from, to := rng.IntN(n+1), rng.IntN(n+1)
			got, exp := e.sched.nextSendable(from, to), -1
			for j := from; j < to; j++ {
				if want[j] {
					exp = j
					break
				}
			}
			if got != exp {
				t.Fatalf("n=%d: nextSendable(%d, %d) = %d, want %d", n, from, to, got, exp)
			}
		}
		now := monotime.Time(50)
		var exp []*Conn
		for _, c := range e.order {
			if c.heapAt >= 0 && c.filed <= now {
				exp = append(exp, c)
			}
		}
		if got := e.sched.popDue(now); !slices.Equal(got, exp) {
			t.Fatalf("n=%d: popDue gave %d connections, want %d in polling order", n, len(got), len(exp))
		}
		if d := e.sched.nextDeadline(); d != monotime.Never && d <= now {
			t.Fatalf("n=%d: a due deadline %v is left after popDue", n, d)
		}
	}
}
