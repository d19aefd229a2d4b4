package reliability

import (
	"slices"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

func TestCSAUDInterval(t *testing.T) {
	const us = monotime.Microsecond
	rtt := 40 * us
	tests := []struct {
		name         string
		gap, dev     monotime.Duration
		reorder      monotime.Duration
		step         StepProgress
		wantI, wantT monotime.Duration
	}{
		// K(g+4d) = 2*(1+4*0.5) = 6 us; the tail adds RTT/2 = 20 us.
		{"gaps", us, us / 2, 0, StepProgress{}, 6 * us, 26 * us},
		// Capped at RTT/4: a pausing sender does not stretch the interval.
		{"cap", 20 * us, 0, 0, StepProgress{}, 10 * us, 30 * us},
		{"floor", 0, 0, 0, StepProgress{}, us, 21 * us},
		// Measured reordering beyond the cap wins: spurious repairs taught it.
		{"reorder", us, 0, 15 * us, StepProgress{}, 15 * us, 35 * us},
		// A step with all 8 receives open: no change; with 1 of 8 left, the
		// scale is 0.25 + 0.75/8.
		{"step open", us, us / 2, 0, StepProgress{Receives: 8}, 6 * us, 26 * us},
		{"step tail", us, us / 2, 0, StepProgress{Receives: 8, Done: 7},
			monotime.Duration(0.34375 * float64(6*us)), monotime.Duration(0.34375 * float64(26*us))},
		{"waited on", us, us / 2, 0, StepProgress{Receives: 8, Done: 7, Waiting: true},
			monotime.Duration(0.34375 * 0.5 * float64(6*us)), monotime.Duration(0.34375 * 0.5 * float64(26*us))},
		// Never below the floor, however far the step.
		{"tail floor", 0, 0, 0, StepProgress{Receives: 2, Done: 1, Waiting: true}, us,
			monotime.Duration(0.625 * 0.5 * float64(21*us))},
	}
	for _, tt := range tests {
		I, T := CSAUD{}.Interval(tt.gap, tt.dev, rtt, tt.reorder, tt.step)
		if I != tt.wantI || T != tt.wantT {
			t.Errorf("%s: Interval = (%v, %v), want (%v, %v)", tt.name, I, T, tt.wantI, tt.wantT)
		}
	}
}

// TestCSAUDRepair: a gap is NACKed after the adaptive interval, and a lost
// tail, which no later packet reveals, after the tail interval.
func TestCSAUDRepair(t *testing.T) {
	const us = monotime.Microsecond
	f := newFakeRecv(10)
	f.rtt = 40 * us
	s := CSAUD{}
	var st RecvState
	st.Reset()
	s.Started(0, &st, f)
	// Packets 0..5 every microsecond, 3 lost; 6..9 lost (the tail).
	for _, p := range []uint32{0, 1, 2, 4} {
		f.deliver(s, &st, at(int64(p)), p, false)
	}
	// The gap at 3 opened at 4 us, timed from the gaps measured so far.
	I, _ := s.Interval(st.csa.gap, st.csa.dev, f.rtt, 0, StepProgress{})
	if st.nack.gapAt != at(4).Add(I) || I > 10*us {
		t.Fatalf("gap timer at %v, want 4us + I = %v, I a few gaps", st.nack.gapAt, at(4).Add(I))
	}
	f.deliver(s, &st, at(5), 5, false)
	s.RecvTimeout(st.Due(), &st, f)
	if want := []string{"gap[0,4)"}; !slices.Equal(f.nacks, want) {
		t.Fatalf("NACKs %q, want %q", f.nacks, want)
	}
	// Nothing more arrives: the tail timer NACKs the rest of the message.
	for len(f.nacks) < 2 {
		due := st.Due()
		if due == monotime.Never {
			t.Fatal("no timer left and the tail is not NACKed")
		}
		s.RecvTimeout(due, &st, f)
	}
	if want := "gap[4,10)"; f.nacks[1] != want {
		t.Errorf("tail NACK %q, want %q", f.nacks[1], want)
	}
	if _, T := s.Interval(st.csa.gap, st.csa.dev, f.rtt, 0, StepProgress{}); st.nack.renackAt == monotime.Never || T > 30*us {
		t.Errorf("tail interval %v (want about a gap plus RTT/2), re-NACK at %v", T, st.nack.renackAt)
	}
	// The sender had only paused: the next original, in order, says the
	// tail NACK was early, once.
	before := f.reordered
	f.deliver(s, &st, at(200), 6, false)
	f.deliver(s, &st, at(201), 7, false)
	if f.reordered != before+1 {
		t.Errorf("in-order originals after the tail NACK widened the window %d times, want once", f.reordered-before)
	}
}

// TestCSAUDStepShortensTail: the same loss is repaired sooner when the
// step waits on this receiver's last message.
func TestCSAUDStepShortensTail(t *testing.T) {
	tailNackAt := func(step StepProgress) monotime.Time {
		f := newFakeRecv(4)
		f.rtt = 40 * monotime.Microsecond
		f.step = step
		s := CSAUD{}
		var st RecvState
		st.Reset()
		s.Started(0, &st, f)
		f.deliver(s, &st, 0, 0, false)
		f.deliver(s, &st, at(1), 1, false)
		for len(f.nacks) == 0 {
			s.RecvTimeout(st.Due(), &st, f)
		}
		return st.csa.lastAt.Add(st.csa.tail)
	}
	alone := tailNackAt(StepProgress{})
	last := tailNackAt(StepProgress{Receives: 16, Done: 15, Waiting: true})
	if !(last < alone) {
		t.Errorf("tail repaired at %v as the step's last and waited on, %v alone: want sooner", last, alone)
	}
}
