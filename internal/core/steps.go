package core

import "github.com/sdrnet/sdrnet/internal/reliability"

// Collective steps: the application tells the endpoint which of its
// receives belong to one step of a collective and how many receives the
// step waits for, so a scheme that knows collectives (CSA-UD) can see how
// close the step is to done and recover its tail faster.
//
// A step is named by the application (a counter is enough) and lives in
// a small table indexed by its name, so a step that has not been used for
// the last stepTable steps is forgotten and no memory grows with them.

// stepTable is how many steps an endpoint remembers: more than a pipelined
// collective keeps open at once.
const stepTable = 64

type stepState struct {
	id      uint32
	total   uint32 // receives the step waits for
	done    uint32 // of those, complete
	waiting bool   // the collective waits on this endpoint
	used    bool
}

// BeginStep declares collective step id: this endpoint receives messages
// of it (tagged with StepRecv) and the step is done when receives of them
// are complete. It replaces what the table held for an older step.
func (e *Endpoint) BeginStep(id uint32, receives int) {
	e.steps[id%stepTable] = stepState{id: id, total: uint32(max(receives, 0)), used: true}
}

// StepWaiting says that the collective now waits on this endpoint for step
// id (every other participant is done with it).
func (e *Endpoint) StepWaiting(id uint32) {
	if s := e.step(id); s != nil {
		s.waiting = true
	}
}

// StepProgress returns how step id stands: the receives it waits for, how
// many of them are complete, and whether the collective waits on this
// endpoint; ok is false for a step not begun (or forgotten).
func (e *Endpoint) StepProgress(id uint32) (p reliability.StepProgress, ok bool) {
	s := e.step(id)
	if s == nil {
		return p, false
	}
	return reliability.StepProgress{Receives: s.total, Done: s.done, Waiting: s.waiting}, true
}

func (e *Endpoint) step(id uint32) *stepState {
	s := &e.steps[id%stepTable]
	if !s.used || s.id != id {
		return nil
	}
	return s
}

// StepRecv tags a posted receive as one of step id's; the step must have
// begun.
func (c *Conn) StepRecv(h RecvHandle, id uint32) error {
	c.ep.touch(c) // what it may send or when its timers fire changes
	m, err := c.recvOf(h)
	if err != nil {
		return err
	}
	if c.ep.step(id) == nil {
		return ErrUnknownStep
	}
	m.step, m.inStep = id, true
	return nil
}

// Step implements reliability.RecvMessage.
func (m *recvMsg) Step() reliability.StepProgress {
	if !m.inStep {
		return reliability.StepProgress{}
	}
	p, _ := m.r.c.ep.StepProgress(m.step)
	return p
}

// stepDone counts a complete receive in its step.
func (r *receiver) stepDone(m *recvMsg) {
	if !m.inStep {
		return
	}
	if s := r.c.ep.step(m.step); s != nil {
		s.done++
	}
}
