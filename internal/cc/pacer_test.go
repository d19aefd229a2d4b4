package cc

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// TestPacer: back-to-back packets leave a transmit time apart; a packet
// sent late makes up at most the lateness allowed, none with zero.
func TestPacer(t *testing.T) {
	us := monotime.Microsecond
	for _, tc := range []struct {
		name     string
		next     monotime.Time // the departure due before the packet
		now      monotime.Time // when the packet left
		tx, late monotime.Duration
		wantNext monotime.Time
	}{
		{"on time", monotime.Time(10 * us), monotime.Time(10 * us), us, 0, monotime.Time(11 * us)},
		{"early: the pacer's time holds", monotime.Time(10 * us), monotime.Time(5 * us), us, 2 * us, monotime.Time(11 * us)},
		{"late, nothing made up", monotime.Time(10 * us), monotime.Time(20 * us), us, 0, monotime.Time(21 * us)},
		{"late, some made up", monotime.Time(10 * us), monotime.Time(20 * us), us, 4 * us, monotime.Time(17 * us)},
		{"late by less than allowed", monotime.Time(10 * us), monotime.Time(12 * us), us, 4 * us, monotime.Time(11 * us)},
	} {
		p := pacer{next: tc.next}
		p.sent(tc.now, tc.tx, tc.late)
		if p.next != tc.wantNext {
			t.Errorf("%s: next %v, want %v", tc.name, p.next, tc.wantNext)
		}
	}
	p := pacer{next: monotime.Time(10 * us)}
	p.retime(-us)
	if p.next != monotime.Time(9*us) {
		t.Errorf("retimed by -1us: %v", p.next)
	}
}
