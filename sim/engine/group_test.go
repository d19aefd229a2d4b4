package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// tokenModel is a toy model split into parts: tokens hop within a part,
// and one hop in four goes to a random part at least a lookahead ahead;
// each part folds every event it runs into a hash. A token retires after
// hops hops. work spins per event, as a packet's handling would.
type tokenModel struct {
	parts []*tokenPart
	hops  uint64
	work  int
}

type tokenPart struct {
	m       *tokenModel
	hash, n uint64
	spin    uint64
}

const tokenLookahead = monotime.Microsecond

func (p *tokenPart) OnEvent(e *Engine, arg uint64) {
	p.n++
	p.hash = (p.hash ^ uint64(e.Now()) ^ arg*0x9e3779b97f4a7c15) * 1099511628211
	for range p.m.work {
		p.spin ^= p.spin<<13 ^ p.spin>>7 ^ 1
	}
	if arg&0xffffffff == p.m.hops {
		return // retired
	}
	arg++
	r := e.Rand()
	if r.Uint64N(4) == 0 {
		dst := r.IntN(len(p.m.parts))
		e.SendTo(dst, e.Now().Add(tokenLookahead+monotime.Duration(r.Uint64N(uint64(tokenLookahead)))), p.m.parts[dst], arg)
		return
	}
	e.After(1+monotime.Duration(r.Uint64N(uint64(tokenLookahead/2))), p, arg)
}

// runTokens runs the model on threads threads and returns each part's
// hash and count, and the windows.
func runTokens(parts, tokens int, hops uint64, work, threads int) (string, uint64, uint64) {
	g := NewGroup(parts, 7, tokenLookahead)
	m := &tokenModel{hops: hops, work: work}
	for range parts {
		m.parts = append(m.parts, &tokenPart{m: m})
	}
	for tk := range tokens {
		g.Part(tk%parts).At(monotime.Time(tk), m.parts[tk%parts], uint64(tk)<<32)
	}
	g.Run(threads, monotime.Never)
	var b strings.Builder
	for _, p := range m.parts {
		fmt.Fprintf(&b, "%x/%d ", p.hash, p.n)
	}
	return b.String(), g.Windows(), g.Processed()
}

// TestGroupDeterministic: a run is the same on one thread and on several.
func TestGroupDeterministic(t *testing.T) {
	want, windows, events := runTokens(8, 64, 200, 0, 1)
	if events != 64*201 {
		t.Fatalf("%d events, want %d (every token's hops and its start)", events, 64*201)
	}
	for _, threads := range []int{2, 3, 8, 16} {
		got, w, n := runTokens(8, 64, 200, 0, threads)
		if got != want || w != windows || n != events {
			t.Errorf("%d threads: %d windows, %d events, parts %s; one thread: %d windows, %d events, parts %s", threads, w, n, got, windows, events, want)
		}
	}
}

// TestGroupLookahead: an event sent another part within the lookahead is
// a model's error, named at once.
func TestGroupLookahead(t *testing.T) {
	g := NewGroup(2, 1, tokenLookahead)
	var msg string
	g.Part(0).At(0, HandlerFunc(func(e *Engine, _ uint64) {
		defer func() { msg = fmt.Sprint(recover()) }()
		e.SendTo(1, e.Now().Add(tokenLookahead/2), HandlerFunc(func(*Engine, uint64) {}), 0)
	}), 0)
	g.Run(1, monotime.Never)
	if !strings.Contains(msg, "within the lookahead") {
		t.Fatalf("sending inside the lookahead: %q, want a panic naming the lookahead", msg)
	}
}

// wireEnd is the far end of a wire between parts: it takes what the near
// end passed, in order, and records when each arrives and in which part.
type wireEnd struct {
	pending []int
	got     []string
}

func (w *wireEnd) Accept(e *Engine, t monotime.Time, v any) {
	w.pending = append(w.pending, v.(int))
	e.At(t, w, 0)
}

func (w *wireEnd) OnEvent(e *Engine, _ uint64) {
	w.got = append(w.got, fmt.Sprintf("%d@%v", w.pending[0], e.Now()))
	w.pending = w.pending[1:]
}

// TestGroupPass: values passed to another part reach its receiver there,
// in the order sent, and arrive at their times, on any number of threads.
func TestGroupPass(t *testing.T) {
	for _, threads := range []int{1, 2} {
		g := NewGroup(2, 1, tokenLookahead)
		far := &wireEnd{}
		var partOfArrival []int
		g.Part(1).Observe(func(monotime.Time, Handler) { partOfArrival = append(partOfArrival, 1) })
		for i := range 3 {
			at := monotime.Time(i) * monotime.Time(tokenLookahead/2)
			g.Part(0).At(at, HandlerFunc(func(e *Engine, _ uint64) {
				e.Pass(1, e.Now().Add(tokenLookahead), far, i)
			}), 0)
		}
		g.Run(threads, monotime.Never)
		want := "[0@1000000 1@1500000 2@2000000]" // picoseconds
		if got := fmt.Sprint(far.got); got != want || len(partOfArrival) != 3 {
			t.Errorf("%d threads: arrived %s (%d events in part 1), want %s, all in part 1", threads, got, len(partOfArrival), want)
		}
	}
}

// TestGroupAtAll: a change to the whole model runs when every part has run
// its events before its time and none at or after it, and windows never
// straddle it; what it schedules runs; Between sees every window's end.
func TestGroupAtAll(t *testing.T) {
	for _, threads := range []int{1, 3} {
		g := NewGroup(4, 1, tokenLookahead)
		m := &tokenModel{hops: 50}
		for range 4 {
			m.parts = append(m.parts, &tokenPart{m: m})
		}
		for tk := range 16 {
			g.Part(tk%4).At(monotime.Time(tk), m.parts[tk%4], uint64(tk)<<32)
		}
		var log []string
		check := func(at monotime.Time) {
			for i := range 4 {
				p := g.Part(i)
				if next, ok := p.NextTime(); p.Now() >= at || ok && next < at {
					log = append(log, fmt.Sprintf("at %v part %d: now %v, next %v", at, i, p.Now(), next))
				}
			}
		}
		ran := 0
		late := HandlerFunc(func(e *Engine, _ uint64) { ran++ })
		for _, at := range []monotime.Time{monotime.Time(3 * tokenLookahead / 2), monotime.Time(7 * tokenLookahead)} {
			g.AtAll(at, func(now monotime.Time) {
				check(now)
				g.Part(2).At(now, late, 0)
			})
		}
		lastEnd := monotime.Time(-1)
		g.Between(func(end monotime.Time) {
			if end <= lastEnd {
				log = append(log, fmt.Sprintf("window ends %v after %v", end, lastEnd))
			}
			lastEnd = end
		})
		g.Run(threads, monotime.Never)
		if len(log) > 0 || ran != 2 || lastEnd < monotime.Time(7*tokenLookahead) {
			t.Errorf("%d threads: %d of 2 scheduled events ran, last window ended %v; %v", threads, ran, lastEnd, log)
		}
	}
}

// TestGroupAtAllOrder: changes at one time run in the order asked for,
// also when asked for after a later one.
func TestGroupAtAllOrder(t *testing.T) {
	g := NewGroup(2, 1, tokenLookahead)
	var ran []string
	change := func(name string) func(monotime.Time) {
		return func(now monotime.Time) { ran = append(ran, fmt.Sprintf("%s@%d", name, now)) }
	}
	g.AtAll(10, change("a"))
	g.AtAll(5, change("b"))
	g.AtAll(5, change("c"))
	g.AtAll(10, change("d"))
	g.Run(1, monotime.Never)
	if got, want := fmt.Sprint(ran), "[b@5 c@5 a@10 d@10]"; got != want {
		t.Errorf("changes ran %s, want %s", got, want)
	}
}

// BenchmarkGroup: the toy model with a few hundred nanoseconds of work
// per event (400 spins) on one thread and on two; ns/event falls with threads as far as
// the barrier and the exchange allow.
//
//	go test ./sim/engine -run '^$' -bench Group -benchtime 1x
func BenchmarkGroup(b *testing.B) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			var events, windows uint64
			for b.Loop() {
				_, w, n := runTokens(64, 4096, 200, 400, threads)
				events += n
				windows += w
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
			b.ReportMetric(float64(events)/float64(windows), "events/window")
		})
	}
}
