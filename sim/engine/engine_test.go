package engine

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// fired is one executed event as a recorder saw it.
type fired struct {
	t   monotime.Time
	arg uint64
}

// recorder is a Handler that logs what ran, and optionally runs a hook so
// a test can act from inside a handler.
type recorder struct {
	log  []fired
	hook func(e *Engine, arg uint64)
}

func (r *recorder) OnEvent(e *Engine, arg uint64) {
	r.log = append(r.log, fired{e.Now(), arg})
	if r.hook != nil {
		r.hook(e, arg)
	}
}

func (r *recorder) args() []uint64 {
	out := make([]uint64, len(r.log))
	for i, f := range r.log {
		out[i] = f.arg
	}
	return out
}

func TestOrdering(t *testing.T) {
	tests := []struct {
		name  string
		times []monotime.Time // event i gets arg i
		want  []uint64
	}{
		{"empty", nil, []uint64{}},
		{"sorted", []monotime.Time{1, 2, 3}, []uint64{0, 1, 2}},
		{"reversed", []monotime.Time{3, 2, 1}, []uint64{2, 1, 0}},
		{"ties keep scheduling order", []monotime.Time{5, 5, 5, 5}, []uint64{0, 1, 2, 3}},
		{"mixed", []monotime.Time{7, 3, 7, 0, 3, 7, 1}, []uint64{3, 6, 1, 4, 0, 2, 5}},
		{"large times", []monotime.Time{monotime.Never, 0, monotime.Never - 1}, []uint64{1, 2, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New(1)
			r := &recorder{}
			for i, at := range tc.times {
				e.At(at, r, uint64(i))
			}
			if got := e.Pending(); got != len(tc.times) {
				t.Fatalf("Pending = %d, want %d", got, len(tc.times))
			}
			e.Run()
			if got := r.args(); !slices.Equal(got, tc.want) {
				t.Fatalf("order = %v, want %v", got, tc.want)
			}
			if e.Pending() != 0 || e.Processed() != uint64(len(tc.times)) {
				t.Fatalf("Pending = %d, Processed = %d", e.Pending(), e.Processed())
			}
		})
	}
}

// TestManyTies schedules thousands of events at a few times per round, so
// ties must hold across every level of the heap, including when the
// sequence counter is renumbered with thousands of ties pending.
func TestManyTies(t *testing.T) {
	for _, limit := range []uint32{defaultSeqLimit, 7000} {
		t.Run(fmt.Sprint("seqLimit=", limit), func(t *testing.T) {
			e := New(1)
			e.seqLimit = limit
			r := &recorder{}
			const rounds, n = 6, 5000
			for round := range rounds {
				r.log = r.log[:0]
				base := e.Now()
				for i := range n {
					e.At(base.Add(monotime.Duration(i%3)), r, uint64(i))
				}
				e.Run()
				if len(r.log) != n {
					t.Fatalf("round %d ran %d events, want %d", round, len(r.log), n)
				}
				for k := 1; k < n; k++ {
					a, b := r.log[k-1], r.log[k]
					if a.t > b.t || (a.t == b.t && a.arg > b.arg) {
						t.Fatalf("round %d: (t=%d arg=%d) ran after (t=%d arg=%d)", round, b.t, b.arg, a.t, a.arg)
					}
				}
			}
			if limit != defaultSeqLimit && e.seq >= uint32(rounds*n) {
				t.Fatalf("seq = %d: the counter was never renumbered", e.seq)
			}
		})
	}
}

func TestAtInThePastIsClamped(t *testing.T) {
	e := New(1)
	r := &recorder{}
	r.hook = func(e *Engine, arg uint64) {
		if arg == 0 {
			e.At(50, r, 10)    // in the past: runs now, after arg 1
			e.After(-5, r, 11) // negative delay: likewise
		}
	}
	e.At(100, r, 0)
	e.At(100, r, 1)
	e.At(101, r, 2)
	e.Run()
	want := []fired{{100, 0}, {100, 1}, {100, 10}, {100, 11}, {101, 2}}
	if !slices.Equal(r.log, want) {
		t.Fatalf("log = %v, want %v", r.log, want)
	}
}

// TestAfter also runs a HandlerFunc, the adapter for one-off handlers.
func TestAfter(t *testing.T) {
	e := New(1)
	var got []fired
	h := HandlerFunc(func(e *Engine, arg uint64) { got = append(got, fired{e.Now(), arg}) })
	e.RunUntil(1000)
	e.After(5*monotime.Nanosecond, h, 2)
	e.After(1, h, 1)
	e.Run()
	if want := []fired{{1001, 1}, {6000, 2}}; !slices.Equal(got, want) {
		t.Fatalf("ran %v, want %v", got, want)
	}
}

func TestCancel(t *testing.T) {
	e := New(1)
	r := &recorder{}
	a := e.At(10, r, 1)
	b := e.At(20, r, 2)
	e.At(30, r, 3)

	if e.Cancel(EventID{}) {
		t.Error("Cancel(zero) = true")
	}
	if !e.Cancel(b) {
		t.Error("Cancel(pending) = false")
	}
	if e.Cancel(b) {
		t.Error("second Cancel of the same event = true")
	}
	if e.Pending() != 2 {
		t.Fatalf("Pending = %d after cancel, want 2", e.Pending())
	}
	// Reuse b's slot; b's handle must not reach the new event.
	d := e.At(25, r, 4)
	if d.slot != b.slot {
		t.Fatalf("slot not reused (%d vs %d): the stale-handle case is not exercised", d.slot, b.slot)
	}
	if e.Cancel(b) {
		t.Error("Cancel(stale handle of a reused slot) = true")
	}
	if !e.Scheduled(d) || e.Scheduled(b) {
		t.Error("Scheduled confused the stale handle with the new event")
	}
	e.RunUntil(10)
	if e.Cancel(a) {
		t.Error("Cancel(fired) = true")
	}
	if e.Cancel(EventID{slot: 1 << 30, gen: 1}) {
		t.Error("Cancel(out-of-range handle) = true")
	}
	e.Run()
	if want := []uint64{1, 4, 3}; !slices.Equal(r.args(), want) {
		t.Fatalf("ran %v, want %v", r.args(), want)
	}
}

func TestCancelFromHandler(t *testing.T) {
	tests := []struct {
		name   string
		victim monotime.Time // time of the event the first handler cancels
	}{
		{"later", 50},
		{"same time, scheduled after", 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := New(1)
			r := &recorder{}
			var victim, self EventID
			var results []bool
			r.hook = func(e *Engine, arg uint64) {
				if arg == 1 {
					results = append(results, e.Cancel(victim), e.Cancel(self))
				}
			}
			self = e.At(10, r, 1)
			victim = e.At(tc.victim, r, 2)
			e.At(60, r, 3)
			e.Run()
			if want := []uint64{1, 3}; !slices.Equal(r.args(), want) {
				t.Fatalf("ran %v, want %v", r.args(), want)
			}
			// The running event is no longer pending: cancelling itself
			// is a no-op.
			if want := []bool{true, false}; !slices.Equal(results, want) {
				t.Fatalf("Cancel results = %v, want %v", results, want)
			}
		})
	}
}

func TestRunUntil(t *testing.T) {
	e := New(1)
	r := &recorder{}
	e.At(10, r, 1)
	e.At(20, r, 2)
	e.At(21, r, 3)

	e.RunUntil(20) // the event exactly at 20 runs
	if want := []uint64{1, 2}; !slices.Equal(r.args(), want) {
		t.Fatalf("ran %v, want %v", r.args(), want)
	}
	if e.Now() != 20 || e.Pending() != 1 {
		t.Fatalf("Now = %d Pending = %d, want 20, 1", e.Now(), e.Pending())
	}
	if nt, ok := e.NextTime(); !ok || nt != 21 {
		t.Fatalf("NextTime = %d, %v", nt, ok)
	}

	e.RunUntil(15) // in the past: no-op, time does not go back
	if e.Now() != 20 || len(r.log) != 2 {
		t.Fatalf("RunUntil(past) moved time to %d or ran events", e.Now())
	}

	e.RunUntil(1000) // clock moves past the last event to the limit
	if e.Now() != 1000 || len(r.log) != 3 || e.Pending() != 0 {
		t.Fatalf("Now = %d, ran %d", e.Now(), len(r.log))
	}
	if _, ok := e.NextTime(); ok {
		t.Fatal("NextTime on an empty engine reported an event")
	}
	e.RunUntil(2000) // empty engine still advances
	if e.Now() != 2000 {
		t.Fatalf("Now = %d, want 2000", e.Now())
	}
}

func TestStop(t *testing.T) {
	for _, until := range []bool{false, true} {
		t.Run(fmt.Sprint("RunUntil=", until), func(t *testing.T) {
			e := New(1)
			r := &recorder{}
			r.hook = func(e *Engine, arg uint64) {
				if arg == 2 {
					e.Stop()
				}
			}
			for i := range 5 {
				e.At(monotime.Time(10*i), r, uint64(i))
			}
			run := func() {
				if until {
					e.RunUntil(1000)
				} else {
					e.Run()
				}
			}
			run()
			if want := []uint64{0, 1, 2}; !slices.Equal(r.args(), want) {
				t.Fatalf("ran %v before stopping, want %v", r.args(), want)
			}
			if e.Now() != 20 || e.Pending() != 2 {
				t.Fatalf("after Stop: Now = %d Pending = %d, want 20, 2", e.Now(), e.Pending())
			}
			run() // resumes
			if want := []uint64{0, 1, 2, 3, 4}; !slices.Equal(r.args(), want) {
				t.Fatalf("ran %v after resuming, want %v", r.args(), want)
			}
		})
	}
}

// TestScheduleFromHandler runs a chain of self-rescheduling events, the way
// a link reschedules its head packet, with a burst at the same time.
func TestScheduleFromHandler(t *testing.T) {
	e := New(1)
	r := &recorder{}
	r.hook = func(e *Engine, arg uint64) {
		switch {
		case arg < 5:
			e.After(100, r, arg+1)
		case arg == 5:
			for k := uint64(0); k < 3; k++ {
				e.After(0, r, 100+k)
			}
		}
	}
	e.At(0, r, 0)
	e.Run()
	want := []fired{{0, 0}, {100, 1}, {200, 2}, {300, 3}, {400, 4}, {500, 5}, {500, 100}, {500, 101}, {500, 102}}
	if !slices.Equal(r.log, want) {
		t.Fatalf("log = %v\nwant  %v", r.log, want)
	}
}

func TestOnProgress(t *testing.T) {
	e := New(1)
	r := &recorder{}
	for i := range 25 {
		e.At(monotime.Time(i), r, uint64(i))
	}
	var at []uint64
	e.OnProgress(10, func(e *Engine) { at = append(at, e.Processed()) })
	e.RunUntil(4) // 5 events
	e.OnProgress(10, func(e *Engine) { at = append(at, e.Processed()) })
	e.Run() // cadence restarts from 5: 15, 25
	if want := []uint64{15, 25}; !slices.Equal(at, want) {
		t.Fatalf("progress at %v, want %v", at, want)
	}

	at = nil
	e.OnProgress(0, func(e *Engine) { at = append(at, 0) })
	for i := range 30 {
		e.After(monotime.Duration(i), r, 0)
	}
	e.Run()
	if len(at) != 0 {
		t.Fatalf("disabled progress was called %d times", len(at))
	}

	// every == 1 calls after each event; the callback may Stop the run.
	e.OnProgress(1, func(e *Engine) {
		if e.Processed() == 57 {
			e.Stop()
		}
	})
	for i := range 10 {
		e.After(monotime.Duration(i), r, 0)
	}
	e.Run()
	if e.Processed() != 57 {
		t.Fatalf("Stop from progress callback: Processed = %d, want 57", e.Processed())
	}
}

// churn is a randomized workload: each event schedules up to two random
// future events and sometimes cancels a random earlier one. Everything
// random comes from e.Rand(), so the trace is a function of the seed.
type churn struct {
	ids   []EventID
	trace []fired
	limit uint64
}

func (c *churn) OnEvent(e *Engine, arg uint64) {
	c.trace = append(c.trace, fired{e.Now(), arg})
	if e.Processed() >= c.limit {
		return
	}
	rng := e.Rand()
	for range 1 + rng.IntN(2) {
		d := monotime.Duration(rng.Int64N(int64(monotime.Microsecond)))
		if rng.IntN(4) == 0 {
			d = 0 // plenty of ties
		}
		c.ids = append(c.ids, e.After(d, c, rng.Uint64()))
	}
	if rng.IntN(3) == 0 {
		e.Cancel(c.ids[rng.IntN(len(c.ids))])
	}
}

func churnTrace(seed uint64) []fired {
	e := New(seed)
	c := &churn{limit: 20000}
	for i := range 50 {
		c.ids = append(c.ids, e.At(monotime.Time(i), c, uint64(i)))
	}
	e.Run()
	return c.trace
}

func hashTrace(tr []fired) uint64 {
	h := fnv.New64a()
	for _, f := range tr {
		fmt.Fprintf(h, "%d:%d;", f.t, f.arg)
	}
	return h.Sum64()
}

func TestDeterminism(t *testing.T) {
	a, b, c := churnTrace(42), churnTrace(42), churnTrace(43)
	if len(a) < 20000 {
		t.Fatalf("workload too small: %d events", len(a))
	}
	if !slices.Equal(a, b) {
		t.Fatal("same seed gave different traces")
	}
	if hashTrace(a) == hashTrace(c) {
		t.Fatal("different seeds gave the same trace")
	}
	for k := 1; k < len(a); k++ {
		if a[k].t < a[k-1].t {
			t.Fatalf("time went backwards at event %d", k)
		}
	}
}

// TestEnginesAreIndependent interleaves two engines with the same seed;
// neither may see the other's events or randomness.
func TestEnginesAreIndependent(t *testing.T) {
	e1, e2 := New(7), New(7)
	r1, r2 := &recorder{}, &recorder{}
	e1.At(5, r1, 1)
	e2.At(3, r2, 2)
	x1 := e1.Rand().Uint64()
	e1.Rand().Uint64() // advance e1 only
	if x2 := e2.Rand().Uint64(); x1 != x2 {
		t.Fatal("same seed, different first draw")
	}
	e1.Run()
	if e2.Pending() != 1 || e2.Now() != 0 {
		t.Fatal("running e1 touched e2")
	}
	e2.Run()
	if !slices.Equal(r1.args(), []uint64{1}) || !slices.Equal(r2.args(), []uint64{2}) {
		t.Fatalf("r1 %v r2 %v", r1.args(), r2.args())
	}
}

// refQueue is the obviously correct reference: a slice sorted on every
// pop.
type refQueue struct {
	items []refItem
	seq   uint64
}

type refItem struct {
	t   monotime.Time
	seq uint64
	id  int
}

func (q *refQueue) push(t monotime.Time, id int) {
	q.items = append(q.items, refItem{t, q.seq, id})
	q.seq++
}

func (q *refQueue) cancel(id int) bool {
	for i, it := range q.items {
		if it.id == id {
			q.items = append(q.items[:i], q.items[i+1:]...)
			return true
		}
	}
	return false
}

func (q *refQueue) pop() refItem {
	sort.Slice(q.items, func(i, j int) bool {
		a, b := q.items[i], q.items[j]
		return a.t < b.t || (a.t == b.t && a.seq < b.seq)
	})
	it := q.items[0]
	q.items = q.items[1:]
	return it
}

// popOne is a Handler that records which logical event ran. With stop
// set it stops the run after each event, so Run pops exactly one.
type popOne struct {
	got  []int
	stop bool
}

func (p *popOne) OnEvent(e *Engine, arg uint64) {
	p.got = append(p.got, int(arg))
	if p.stop {
		e.Stop()
	}
}

// TestAgainstReference drives the engine and the reference with the same
// random schedule/cancel/pop operations and checks they agree at every
// step. Times are drawn from a small range so ties are common, and a small
// sequence limit forces renumbering mid-run.
func TestAgainstReference(t *testing.T) {
	const ops = 100000
	for _, limit := range []uint32{defaultSeqLimit, 1000} {
		t.Run(fmt.Sprint("seqLimit=", limit), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			e := New(1)
			e.seqLimit = limit
			ref := &refQueue{}
			h := &popOne{stop: true}
			var ids []EventID // by logical id, the reference's item id
			for op := range ops {
				switch k := rng.IntN(10); {
				case k < 5 || len(ref.items) == 0: // schedule
					if len(ref.items) > 400 {
						continue // keep the reference cheap and ties frequent
					}
					at := e.Now().Add(monotime.Duration(rng.IntN(50)))
					ids = append(ids, e.At(at, h, uint64(len(ids))))
					ref.push(at, len(ids)-1)
				case k < 7: // cancel any id ever issued, live or not
					id := rng.IntN(len(ids))
					want := ref.cancel(id)
					if got := e.Cancel(ids[id]); got != want {
						t.Fatalf("op %d: Cancel(%d) = %v, reference %v", op, id, got, want)
					}
				default: // pop one event
					want := ref.pop()
					h.got = h.got[:0]
					e.Run()
					if len(h.got) != 1 || h.got[0] != want.id || e.Now() != want.t {
						t.Fatalf("op %d: ran %v at %d, reference %d at %d", op, h.got, e.Now(), want.id, want.t)
					}
				}
				if e.Pending() != len(ref.items) {
					t.Fatalf("op %d: Pending = %d, reference %d", op, e.Pending(), len(ref.items))
				}
			}
			checkHeap(t, e)
			for _, it := range ref.items {
				if at, ok := e.When(ids[it.id]); !ok || at != it.t {
					t.Fatalf("When(%d) = %d, %v; reference %d", it.id, at, ok, it.t)
				}
			}
		})
	}
}

// TestLargeHeap covers heaps past prefetchMin, where popRoot prefetches,
// against a sort of what should remain after random cancellations.
func TestLargeHeap(t *testing.T) {
	const n = 4 * prefetchMin
	rng := rand.New(rand.NewPCG(3, 4))
	e := New(1)
	h := &popOne{}
	type ev struct {
		t  monotime.Time
		id int
	}
	var want []ev
	ids := make([]EventID, n)
	for i := range n {
		at := monotime.Time(rng.IntN(n / 4)) // many ties
		ids[i] = e.At(at, h, uint64(i))
		want = append(want, ev{at, i})
	}
	cancelled := map[int]bool{}
	for range n / 3 {
		i := rng.IntN(n)
		if e.Cancel(ids[i]) == cancelled[i] {
			t.Fatalf("Cancel(%d) disagrees with the record", i)
		}
		cancelled[i] = true
	}
	checkHeap(t, e)
	want = slices.DeleteFunc(want, func(x ev) bool { return cancelled[x.id] })
	slices.SortStableFunc(want, func(a, b ev) int { return int(a.t - b.t) })
	e.Run()
	if len(h.got) != len(want) {
		t.Fatalf("ran %d events, want %d", len(h.got), len(want))
	}
	for k, w := range want {
		if h.got[k] != w.id {
			t.Fatalf("event %d: ran %d, want %d", k, h.got[k], w.id)
		}
	}
}

// checkHeap verifies the heap order and the position index.
func checkHeap(t *testing.T, e *Engine) {
	t.Helper()
	for j := root; j < len(e.heap); j++ {
		if i := e.heap[j].slot(); e.pos[i] != uint32(j) {
			t.Fatalf("pos of slot %d = %d, want %d", i, e.pos[i], j)
		}
		if j > root && e.heap[j].less(e.heap[j>>2+2]) {
			t.Fatalf("heap order violated at %d", j)
		}
	}
}

// rescheduler reschedules itself forever at a pseudo-random delay, the
// steady state of packets in flight.
type rescheduler struct{ x uint64 }

func (s *rescheduler) OnEvent(e *Engine, _ uint64) {
	s.x = s.x*6364136223846793005 + 1442695040888963407
	e.After(monotime.Duration(s.x>>44)+1, s, 0)
}

func TestZeroAllocsSteadyState(t *testing.T) {
	e := New(1)
	s := &rescheduler{}
	for i := range 1000 {
		e.After(monotime.Duration(i), s, 0)
	}
	e.RunUntil(e.Now().Add(monotime.Millisecond)) // grow everything
	allocs := testing.AllocsPerRun(100, func() {
		for range 1000 {
			nt, _ := e.NextTime()
			e.RunUntil(nt)
		}
		// Arm and cancel, as a retransmission timer does.
		e.Cancel(e.After(monotime.Microsecond, s, 0))
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per 1000 events, want 0", allocs)
	}
}

func TestNilHandlerPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("At with a nil Handler did not panic")
		}
	}()
	New(1).At(0, nil, 0)
}
