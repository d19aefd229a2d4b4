package engine

import (
	"fmt"
	"slices"
	"sort"
	"sync/atomic"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// Group runs a model split into parts, one Engine each, on several
// threads under conservative synchronisation: every part runs the events
// of a window one lookahead long, then the parts exchange what they sent
// each other, and the next window starts at the earliest event left. An
// event a part sends another (SendTo) must lie at least the lookahead
// ahead, so nothing sent in a window falls inside it.
//
// A run does not depend on the number of threads: a part's events are
// its own, each part draws from its own random stream, and messages
// reach their part at the window's end in one order, by sending part and
// the order they were sent.
type Group struct {
	parts     []*Engine
	lookahead monotime.Duration
	// out[w%2][src][dst] holds what part src sent part dst in window w,
	// in the order sent: src's thread appends to it during window w, and
	// dst's thread takes it at the start of window w+1, while sends go
	// to the other half.
	out [2][][][]message
	// earliest[src] is the earliest event part src sent this window.
	earliest []monotime.Time
	stopped  atomic.Bool
	windows  uint64
	// whole holds the changes to the whole model (AtAll) by time, then
	// the order they were asked for; between runs after every window.
	whole   []wholeChange
	between []func(end monotime.Time)
}

// wholeChange is a change to the whole model at t.
type wholeChange struct {
	t  monotime.Time
	fn func(t monotime.Time)
}

// message is an event one part sends another (h and arg), or a value
// it passes (r and v).
type message struct {
	t   monotime.Time
	h   Handler
	arg uint64
	r   Receiver
	v   any
}

// Receiver takes a value another part passed it (Engine.Pass), in its own
// part, before that part runs the window in which t falls.
type Receiver interface {
	Accept(e *Engine, t monotime.Time, v any)
}

// NewGroup returns parts engines whose random streams are derived from
// seed and each part's index, exchanging events at least lookahead
// ahead.
func NewGroup(parts int, seed uint64, lookahead monotime.Duration) *Group {
	if parts < 1 || lookahead <= 0 {
		panic(fmt.Sprintf("engine: a group of %d parts with lookahead %v", parts, lookahead))
	}
	g := &Group{lookahead: lookahead, earliest: make([]monotime.Time, parts)}
	for i := range parts {
		e := New(seed ^ (uint64(i)+1)*0x9e3779b97f4a7c15)
		e.group, e.part = g, i
		g.parts = append(g.parts, e)
		g.earliest[i] = monotime.Never
	}
	for h := range g.out {
		g.out[h] = make([][][]message, parts)
		for i := range parts {
			g.out[h][i] = make([][]message, parts)
		}
	}
	return g
}

// Part returns part i's engine.
func (g *Group) Part(i int) *Engine { return g.parts[i] }

// Parts returns the number of parts.
func (g *Group) Parts() int { return len(g.parts) }

// Lookahead returns how far ahead of now a part may send another.
func (g *Group) Lookahead() monotime.Duration { return g.lookahead }

// Windows returns the synchronisation rounds run so far.
func (g *Group) Windows() uint64 { return g.windows }

// Processed returns the events run so far in all parts.
func (g *Group) Processed() uint64 {
	n := uint64(0)
	for _, e := range g.parts {
		n += e.processed
	}
	return n
}

// Stop makes Run return at the end of the current window; a part's
// handler stops the group so (Engine.Group), not its own engine, which
// would leave the rest of its window unrun.
func (g *Group) Stop() { g.stopped.Store(true) }

// AtAll runs fn at t as a change to the whole model (a cable cut, routes
// converging): once every part has run its events before t and none has
// run one at t or later, on one thread. fn may read and change any part,
// and schedule events at t or later in any. Changes at one time run in
// the order asked for.
func (g *Group) AtAll(t monotime.Time, fn func(t monotime.Time)) {
	i := sort.Search(len(g.whole), func(i int) bool { return g.whole[i].t > t }) // after those at t
	g.whole = slices.Insert(g.whole, i, wholeChange{t: t, fn: fn})
}

// Between runs fn after every window, on one thread while no part runs,
// with the window's last picosecond: bookkeeping that spans parts (a
// collective's progress) gathers there what the parts recorded. An event
// fn schedules must lie after end.
func (g *Group) Between(fn func(end monotime.Time)) { g.between = append(g.between, fn) }

// Group returns the group e is a part of, nil if none.
func (e *Engine) Group() *Group { return e.group }

// Part returns e's index in its group, 0 if none.
func (e *Engine) Part() int { return e.part }

// SendTo schedules h.OnEvent at t in part dst of e's group; in e's own
// part it is At. Another part's event must lie at least the group's
// lookahead after now: a model that sends one sooner has no lookahead to
// run in parallel with, and panics here.
func (e *Engine) SendTo(dst int, t monotime.Time, h Handler, arg uint64) {
	if e.group == nil || dst == e.part {
		e.At(t, h, arg)
		return
	}
	e.post(dst, message{t: t, h: h, arg: arg})
}

// Pass hands v to r in part dst of e's group, for t, which must lie at
// least the group's lookahead after now: a packet leaving a wire for a
// part that owns the far end. r.Accept runs in part dst before its window
// reaches t, so r may schedule an event at t. In e's own part, or outside
// a group, r.Accept runs now.
func (e *Engine) Pass(dst int, t monotime.Time, r Receiver, v any) {
	if e.group == nil || dst == e.part {
		r.Accept(e, t, v)
		return
	}
	e.post(dst, message{t: t, r: r, v: v})
}

// post queues m for part dst at the end of the window.
func (e *Engine) post(dst int, m message) {
	g := e.group
	if m.t < e.now.Add(g.lookahead) {
		panic(fmt.Sprintf("engine: part %d sends part %d an event at %v, within the lookahead %v of now %v", e.part, dst, m.t, g.lookahead, e.now))
	}
	out := g.out[g.windows%2][e.part]
	out[dst] = append(out[dst], m)
	g.earliest[e.part] = min(g.earliest[e.part], m.t)
}

// Run runs windows on threads threads (at least one) until no part has
// an event left, a part's handler calls the group's Stop, or the next
// window would start after until. Each thread takes every threads-th
// part, first the events the others sent it in the window before, then
// its window; changes to the whole model (AtAll) and Between run on the
// calling thread between windows.
func (g *Group) Run(threads int, until monotime.Time) {
	threads = max(1, min(threads, len(g.parts)))
	g.stopped.Store(false)
	var c *crew
	for !g.stopped.Load() {
		start := monotime.Never
		for i, e := range g.parts {
			if t, ok := e.NextTime(); ok {
				start = min(start, t)
			}
			start = min(start, g.earliest[i]) // sent last window, not yet delivered
		}
		if len(g.whole) > 0 && g.whole[0].t <= min(start, until) {
			change := g.whole[0]
			g.whole = g.whole[1:]
			g.deliverAll() // what the last window sent is pending before it
			change.fn(change.t)
			continue
		}
		for i := range g.earliest {
			g.earliest[i] = monotime.Never
		}
		if start == monotime.Never || start > until {
			g.deliverAll()
			return
		}
		end := start.Add(g.lookahead - 1) // the window's last picosecond
		if len(g.whole) > 0 {
			end = min(end, g.whole[0].t-1)
		}
		g.windows++
		if c == nil {
			c = newCrew(g, threads)
			defer c.stop()
		}
		c.run(end)
		g.afterWindow(end)
	}
	g.deliverAll()
}

// crew runs each window's parts on its threads: the caller's, which takes
// parts 0, threads, 2*threads..., and threads-1 workers that take the
// others in the same way, started once for the run.
type crew struct {
	g       *Group
	threads int
	end     monotime.Time   // the window's last picosecond, set before go
	start   []chan struct{} // per worker: run a window, or closed: stop
	done    chan struct{}
}

func newCrew(g *Group, threads int) *crew {
	c := &crew{g: g, threads: threads, done: make(chan struct{}, threads)}
	for th := 1; th < threads; th++ {
		ch := make(chan struct{}, 1)
		c.start = append(c.start, ch)
		go func() {
			for range ch {
				c.share(th)
				c.done <- struct{}{}
			}
		}()
	}
	return c
}

// run runs one window, ending at end, on every thread.
func (c *crew) run(end monotime.Time) {
	c.end = end
	for _, ch := range c.start {
		ch <- struct{}{}
	}
	c.share(0)
	for range c.start {
		<-c.done
	}
}

// share runs thread th's parts through the window.
func (c *crew) share(th int) {
	for i := th; i < len(c.g.parts); i += c.threads {
		c.g.runPart(i, c.end)
	}
}

// stop sends the workers home.
func (c *crew) stop() {
	for _, ch := range c.start {
		close(ch)
	}
}

// afterWindow runs the Between functions for the window that ended at end.
func (g *Group) afterWindow(end monotime.Time) {
	for _, fn := range g.between {
		fn(end)
	}
}

// runPart delivers to part dst what the others sent it in the window
// before, then runs its events up to end.
func (g *Group) runPart(dst int, end monotime.Time) {
	g.deliver(dst, g.out[(g.windows-1)%2])
	g.parts[dst].RunUntil(end)
}

// deliver hands part dst what the others sent it, by sending part and,
// from each, in the order sent: an order no thread count changes, and
// the only one needed, as the engine runs events by time, and events at
// one time in the order scheduled.
func (g *Group) deliver(dst int, out [][][]message) {
	e := g.parts[dst]
	for src := range out {
		msgs := out[src][dst]
		for i, m := range msgs {
			if m.r != nil {
				m.r.Accept(e, m.t, m.v)
			} else {
				e.At(m.t, m.h, m.arg)
			}
			msgs[i] = message{} // the values are the receiver's now
		}
		out[src][dst] = msgs[:0]
	}
}

// deliverAll hands over what the last window sent, so the parts hold
// every pending event when Run returns.
func (g *Group) deliverAll() {
	for dst := range g.parts {
		g.deliver(dst, g.out[g.windows%2])
	}
}
