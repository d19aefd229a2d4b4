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
