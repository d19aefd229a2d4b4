package core_test

import (
	"errors"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// TestCollectiveStep runs one step of four CSA-UD messages under loss and
// reordering: each arrives byte for byte, and the endpoint counts the
// step's receives as they complete.
func TestCollectiveStep(t *testing.T) {
	link := testLink()
	link.Loss = 0.01
	link.Reorder, link.ReorderDelay = 0.02, 30*monotime.Microsecond
	p := newPair(t, link, reliability.CSAUD{}, 3)
	const step, n = 7, 4
	if _, err := p.B.Conn.PostRecv(make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	h, _ := p.B.Conn.PostRecv(make([]byte, 10))
	if err := p.B.Conn.StepRecv(h, step); !errors.Is(err, core.ErrUnknownStep) {
		t.Fatalf("StepRecv before BeginStep: %v, want ErrUnknownStep", err)
	}
	if err := p.B.Conn.StepRecv(12345, step); !errors.Is(err, core.ErrUnknownHandle) {
		t.Fatalf("StepRecv of no receive: %v, want ErrUnknownHandle", err)
	}
	p.B.Conn.Close(0, "")

	p = newPair(t, link, reliability.CSAUD{}, 3)
	p.B.EP.BeginStep(step, n)
	msgs, bufs := make([][]byte, n), make([][]byte, n)
	for i := range n {
		msgs[i] = message(1<<20 + 4096*i + 7)
		bufs[i] = make([]byte, len(msgs[i]))
		h, err := p.B.Conn.PostRecv(bufs[i])
		if err != nil {
			t.Fatal(err)
		}
		if err := p.B.Conn.StepRecv(h, step); err != nil {
			t.Fatal(err)
		}
		if _, err := p.A.Conn.Send(msgs[i]); err != nil {
			t.Fatal(err)
		}
	}
	var done []uint32
	p.B.OnEvent = func(ev core.Event) {
		if ev.Kind == core.EventRecvDone {
			prog, ok := p.B.EP.StepProgress(step)
			if !ok {
				t.Fatal("the step was forgotten")
			}
			done = append(done, prog.Done)
			if len(done) == n-1 {
				p.B.EP.StepWaiting(step)
			}
		}
	}
	if err := p.Drive(func() bool { return len(done) == n }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if string(bufs[i]) != string(msgs[i]) {
			t.Errorf("message %d corrupted", i)
		}
		if done[i] != uint32(i+1) {
			t.Errorf("after receive %d the step counted %d done", i+1, done[i])
		}
	}
	if prog, _ := p.B.EP.StepProgress(step); !prog.Waiting || prog.Receives != n {
		t.Errorf("step progress %+v, want %d receives, waited on", prog, n)
	}
	if _, ok := p.B.EP.StepProgress(step + 64); ok {
		t.Error("a step never begun has progress")
	}
}
