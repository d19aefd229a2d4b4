package cc

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// TestCreditPacer: grants are spaced at the line rate; a busy pacer
// whose driver wakes late keeps its schedule (up to creditLag behind), so
// late wake-ups cost no rate; time with nothing to grant is not banked.
func TestCreditPacer(t *testing.T) {
	us := monotime.Microsecond
	const chunk = 64 << 10
	gap := monotime.TransmitTime(chunk, 1e9) // 524.288 us at 1 Gbit/s
	p := NewCreditPacer(1e9)
	if !p.Ready(0) {
		t.Fatal("a fresh pacer is not ready")
	}
	p.Granted(0, chunk)
	if p.Next() != monotime.Time(gap) || p.Ready(monotime.Time(gap-1)) {
		t.Fatalf("next %v, want %v", p.Next(), gap)
	}
	// Woken 150 us late, ten times over: the schedule holds, ten grants
	// in ten gaps.
	for i := 1; i <= 10; i++ {
		due := p.Next()
		p.Granted(due.Add(150*us), chunk)
		if want := monotime.Time(gap * monotime.Duration(i+1)); p.Next() != want {
			t.Fatalf("grant %d woken late: next %v, want %v", i, p.Next(), want)
		}
	}
	// Woken a millisecond late: only creditLag of it is made up.
	due := p.Next()
	late := due.Add(monotime.Millisecond)
	p.Granted(late, chunk)
	if want := late.Add(-creditLag).Add(gap); p.Next() != want {
		t.Fatalf("a millisecond late: next %v, want %v", p.Next(), want)
	}
	// Idle for a second, then resumed: the next grant is a gap after now,
	// not a burst for the idle time.
	now := p.Next().Add(monotime.Second)
	p.Resume(now)
	p.Granted(now, chunk)
	if want := now.Add(gap); p.Next() != want {
		t.Fatalf("after idling: next %v, want %v", p.Next(), want)
	}
	// A refund moves the schedule back by the bytes never sent.
	p.Refund(chunk)
	if p.Next() != now {
		t.Fatalf("after a refund: next %v, want %v", p.Next(), now)
	}
}
