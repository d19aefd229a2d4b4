// Package engine is the simulator's event engine: events, their heap and
// the clock, and nothing of networks.
//
// The engine is a priority queue of events ordered by (time, sequence
// number) and a loop that pops them. The sequence number is assigned when
// an event is scheduled, so events at the same picosecond run in the order
// they were scheduled and a run is a pure function of its seed and inputs.
//
// Unlike htsim and ns-3, there is no global event list and no global random
// generator: every Engine owns its queue, its clock and its one seeded
// random stream, so two engines in one process (parallel tests, parameter
// sweeps) cannot disturb each other.
//
// The hot path allocates nothing once the pool and heap have grown to the
// run's peak population: events are stored by value in a pool with a free
// list, handlers are interface values (a component scheduling itself costs
// no closure), and the heap holds small fixed-size entries.
package engine

import (
	"math"
	"math/rand/v2"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// Handler is what an event runs. Components (queues, links, hosts)
// implement it on themselves and use arg to tell their events apart, so
// scheduling never builds a closure.
type Handler interface {
	OnEvent(e *Engine, arg uint64)
}

// HandlerFunc adapts a function to Handler. Converting a func value to an
// interface does not allocate, but a func literal that captures variables
// does when it is created: create it once, not per event.
type HandlerFunc func(e *Engine, arg uint64)

// OnEvent calls f(e, arg).
func (f HandlerFunc) OnEvent(e *Engine, arg uint64) { f(e, arg) }

// EventID is a handle on a scheduled event, for Cancel. The zero value
// refers to no event. A handle names a pool slot and the slot's generation
// when the event was scheduled; the generation changes whenever the slot is
// released, so a handle kept after its event fired or was cancelled can
// never reach the unrelated event that reuses the slot. The generation is
// 64 bits because the free list hands the same slot out again on every
// event of a steady run: 32 bits would wrap within minutes.
type EventID struct {
	slot uint32
	gen  uint64
}

// slot is a pooled event. Its heap position lives in Engine.pos, not here:
// every heap move updates a position, and a dense []uint32 takes those
// scattered writes in an eighth of the memory the slots occupy.
type slot struct {
	h   Handler
	arg uint64
	gen uint64 // odd while scheduled, even while free; never 0 once used
}

// defaultSeqLimit is when the 32-bit sequence numbers are renumbered; see
// Engine.renumber.
const defaultSeqLimit = math.MaxUint32

// noProgress disables the progress callback: processed never reaches it.
const noProgress = math.MaxUint64

// Engine is a discrete-event simulator core. It is not safe for concurrent
// use; a simulation runs on one goroutine and handlers call back into the
// engine directly.
type Engine struct {
	now       monotime.Time
	heap      []entry  // 4-ary min-heap; see heap.go for the layout
	pos       []uint32 // heap index of each scheduled slot
	slots     []slot
	free      []uint32 // released slot indices, reused LIFO while cache-warm
	seq       uint32   // next sequence number
	seqLimit  uint32   // renumber when seq reaches it (lowered by tests)
	stopped   bool
	processed uint64
	rng       *rand.Rand
	sink      monotime.Time // keeps popRoot's prefetching loads alive

	progressEvery uint64
	progressNext  uint64
	progressFn    func(e *Engine)
	observe       func(t monotime.Time, h Handler)

	// In a Group: the group and this engine's part (group.go).
	group *Group
	part  int
}

// pcgStream is the second half of the 128-bit PCG state; the seed is the
// first. Every seed then starts at its own point of the 2^128-long cycle,
// and seed 0 does not start from the all-zero state.
const pcgStream = 0x9e3779b97f4a7c15

// New returns an empty engine at time 0 whose random stream is seeded by
// seed.
func New(seed uint64) *Engine {
	e := &Engine{
		heap:         make([]entry, root, root+64),
		seqLimit:     defaultSeqLimit,
		rng:          rand.New(rand.NewPCG(seed, pcgStream)),
		progressNext: noProgress,
	}
	return e
}

// Now returns the simulated time: the time of the event being run, or
// where RunUntil left the clock.
func (e *Engine) Now() monotime.Time { return e.now }

// Rand returns the run's random stream. Everything random in a run must
// draw from it, in event order, for the run to be reproducible from its
// seed.
func (e *Engine) Rand() *rand.Rand { return e.rng }

// Pending returns the number of scheduled events.
func (e *Engine) Pending() int { return len(e.heap) - root }

// Processed returns the number of events run so far.
func (e *Engine) Processed() uint64 { return e.processed }

// At schedules h.OnEvent(e, arg) at time t. A time in the past is run now,
// after the events already scheduled for now: time never goes backwards.
func (e *Engine) At(t monotime.Time, h Handler, arg uint64) EventID {
	if h == nil {
		panic("sim: event scheduled with a nil Handler") // fail here, not when it fires
	}
	if t < e.now {
		t = e.now
	}
	if e.seq >= e.seqLimit {
		e.renumber()
	}
	var i uint32
	if n := len(e.free); n > 0 {
		i = e.free[n-1]
		e.free = e.free[:n-1]
	} else {
		i = uint32(len(e.slots))
		e.slots = append(e.slots, slot{})
		e.pos = append(e.pos, 0)
	}
	s := &e.slots[i]
	s.h, s.arg = h, arg
	s.gen++
	id := EventID{slot: i, gen: s.gen}
	seq := e.seq
	e.seq++
	e.heap = append(e.heap, entry{})
	e.up(len(e.heap)-1, mkEntry(t, seq, i))
	return id
}

// After schedules h.OnEvent(e, arg) at Now()+d; a negative d means now.
func (e *Engine) After(d monotime.Duration, h Handler, arg uint64) EventID {
	return e.At(e.now.Add(d), h, arg)
}

// Cancel unschedules the event id refers to and reports whether it was
// still pending. Handles of events that already ran or were cancelled,
// and the zero EventID, are ignored, so a component may cancel its timer
// without tracking whether it fired.
func (e *Engine) Cancel(id EventID) bool {
	if !e.Scheduled(id) {
		return false
	}
	e.remove(int(e.pos[id.slot]))
	e.release(id.slot)
	return true
}

// Scheduled reports whether the event id refers to is still pending.
func (e *Engine) Scheduled(id EventID) bool {
	// Generations of live slots are odd and start at 1, so the zero
	// handle (gen 0) and handles of released slots never match.
	return int(id.slot) < len(e.slots) && e.slots[id.slot].gen == id.gen && id.gen&1 == 1
}

// When returns the time the event id refers to is scheduled for, and
// whether it is pending.
func (e *Engine) When(id EventID) (monotime.Time, bool) {
	if !e.Scheduled(id) {
		return 0, false
	}
	return e.heap[e.pos[id.slot]].t, true
}

// NextTime returns the time of the earliest pending event, and false if
// there is none.
func (e *Engine) NextTime() (monotime.Time, bool) {
	if len(e.heap) == root {
		return 0, false
	}
	return e.heap[root].t, true
}

// release returns slot i to the free list. Its generation moves to the
// next even value so every outstanding handle on it goes stale, and the
// handler is dropped so a finished component can be collected.
func (e *Engine) release(i uint32) {
	s := &e.slots[i]
	s.gen++
	s.h = nil
	e.free = append(e.free, i)
}

// Stop makes Run or RunUntil return once the running event's handler (or
// progress callback) returns. Pending events stay pending; a later Run
// resumes them. Outside a run it does nothing: runs clear it on entry.
func (e *Engine) Stop() { e.stopped = true }

// OnProgress calls fn after every `every` events run from now on (for
// progress bars and watchdogs). every == 0 or fn == nil disables it. Only
// one callback is kept; a second call replaces the first.
func (e *Engine) OnProgress(every uint64, fn func(e *Engine)) {
	if every == 0 || fn == nil {
		e.progressEvery, e.progressNext, e.progressFn = 0, noProgress, nil
		return
	}
	e.progressEvery, e.progressNext, e.progressFn = every, e.processed+every, fn
}

// Observe calls fn with each event's time and handler before the handler
// runs, for analyses of a run's events (how they would split across
// threads); nil stops it. It costs a run nothing while unset.
func (e *Engine) Observe(fn func(t monotime.Time, h Handler)) { e.observe = fn }

// Run runs events in order until none remain or a handler calls Stop.
func (e *Engine) Run() { e.run(monotime.Never, false) }

// RunUntil runs the events scheduled at or before t, then advances the
// clock to t so that the caller can schedule from t. If a handler calls
// Stop, the clock stays at that event's time. A t before Now runs nothing
// and leaves the clock where it is.
func (e *Engine) RunUntil(t monotime.Time) { e.run(t, true) }

func (e *Engine) run(limit monotime.Time, advance bool) {
	e.stopped = false
	for len(e.heap) > root && !e.stopped {
		top := e.heap[root]
		if top.t > limit {
			break
		}
		// The slot is released before the handler runs, so inside its
		// handler an event is no longer pending: cancelling it returns
		// false and Pending does not count it.
		i := top.slot()
		s := &e.slots[i]
		h, arg := s.h, s.arg
		e.popRoot()
		e.release(i)
		e.now = top.t
		e.processed++
		if e.observe != nil {
			e.observe(top.t, h)
		}
		h.OnEvent(e, arg)
		if e.processed == e.progressNext {
			e.progressNext += e.progressEvery
			e.progressFn(e)
		}
	}
	if advance && !e.stopped && limit > e.now {
		e.now = limit
	}
}
