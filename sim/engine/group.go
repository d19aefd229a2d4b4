package engine

import (
	"cmp"
	"fmt"
	"slices"
	"sync"
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
// reach their part at the window's end in one order, by time, sending
// part and the order they were sent.
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
	inboxes  [][]message // per part: scratch for the merge
	stopped  atomic.Bool
	windows  uint64
}

// message is an event one part sends another.
type message struct {
	t   monotime.Time
	h   Handler
	arg uint64
	src int
	seq uint64
}

// NewGroup returns parts engines whose random streams are derived from
// seed and each part's index, exchanging events at least lookahead
// ahead.
func NewGroup(parts int, seed uint64, lookahead monotime.Duration) *Group {
	if parts < 1 || lookahead <= 0 {
		panic(fmt.Sprintf("engine: a group of %d parts with lookahead %v", parts, lookahead))
	}
	g := &Group{lookahead: lookahead, earliest: make([]monotime.Time, parts), inboxes: make([][]message, parts)}
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

// Group returns the group e is a part of, nil if none.
func (e *Engine) Group() *Group { return e.group }

// SendTo schedules h.OnEvent at t in part dst of e's group; in e's own
// part it is At. Another part's event must lie at least the group's
// lookahead after now: a model that sends one sooner has no lookahead to
// run in parallel with, and panics here.
func (e *Engine) SendTo(dst int, t monotime.Time, h Handler, arg uint64) {
	g := e.group
	if g == nil || dst == e.part {
		e.At(t, h, arg)
		return
	}
	if t < e.now.Add(g.lookahead) {
		panic(fmt.Sprintf("engine: part %d sends part %d an event at %v, within the lookahead %v of now %v", e.part, dst, t, g.lookahead, e.now))
	}
	e.sent++
	out := g.out[g.windows%2][e.part]
	out[dst] = append(out[dst], message{t: t, h: h, arg: arg, src: e.part, seq: e.sent})
	g.earliest[e.part] = min(g.earliest[e.part], t)
}

// Run runs windows on threads threads (at least one) until no part has
// an event left, a part's handler calls the group's Stop, or the next
// window would start after until. Each thread takes every threads-th
// part, first the events the others sent it in the window before, then
// its window.
func (g *Group) Run(threads int, until monotime.Time) {
	threads = max(1, min(threads, len(g.parts)))
	g.stopped.Store(false)
	for !g.stopped.Load() {
		start := monotime.Never
		for i, e := range g.parts {
			if t, ok := e.NextTime(); ok {
				start = min(start, t)
			}
			start = min(start, g.earliest[i]) // sent last window, not yet delivered
			g.earliest[i] = monotime.Never
		}
		if start == monotime.Never || start > until {
			g.deliverAll()
			return
		}
		end := start.Add(g.lookahead - 1) // the window's last picosecond
		g.windows++
		if threads == 1 {
			for i := range g.parts {
				g.runPart(i, end)
			}
			continue
		}
		var wg sync.WaitGroup
		for th := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := th; i < len(g.parts); i += threads {
					g.runPart(i, end)
				}
			}()
		}
		wg.Wait()
	}
	g.deliverAll()
}

// runPart delivers to part dst what the others sent it in the window
// before, in one order (time, sending part, order sent), then runs its
// events up to end.
func (g *Group) runPart(dst int, end monotime.Time) {
	g.deliver(dst, g.out[(g.windows-1)%2])
	g.parts[dst].RunUntil(end)
}

func (g *Group) deliver(dst int, out [][][]message) {
	inbox := g.inboxes[dst][:0]
	for src := range out {
		inbox = append(inbox, out[src][dst]...)
		out[src][dst] = out[src][dst][:0]
	}
	slices.SortFunc(inbox, func(a, b message) int {
		return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.src, b.src), cmp.Compare(a.seq, b.seq))
	})
	e := g.parts[dst]
	for _, m := range inbox {
		e.At(m.t, m.h, m.arg)
	}
	g.inboxes[dst] = inbox
}

// deliverAll hands over what the last window sent, so the parts hold
// every pending event when Run returns.
func (g *Group) deliverAll() {
	for dst := range g.parts {
		g.deliver(dst, g.out[g.windows%2])
	}
}
