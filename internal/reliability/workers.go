package reliability

import "sync"

// Workers codes parity on goroutines of their own, one per core, while the
// caller goes on with its work: a sender starts coding a sub-message's
// parity when it sends the sub-message's first data packet, and the parity
// is ready by the time its last data packet has left. Coding is moved off
// the caller's goroutine, not cut into pieces: waking an idle goroutine
// on another core can take longer than coding a stripe, so splitting one
// Encode across cores makes it no faster.
//
// Results are the Codec's own bytes; only when they are ready depends on
// the scheduler. A nil *Workers codes at Start, on the caller's goroutine.
type Workers struct {
	jobs chan *Job
	once sync.Once
}

// Job is one Encode handed to Workers. Its caller owns it and reuses it
// from one sub-message to the next, so nothing is allocated per job. The
// shards must not be touched between Start and Wait.
type Job struct {
	code   Codec
	shards [][]byte
	done   chan error
	busy   bool
}

// NewWorkers starts n goroutines (at least one). Close stops them.
func NewWorkers(n int) *Workers {
	w := &Workers{jobs: make(chan *Job, 64)}
	for range max(n, 1) {
		go w.work()
	}
	return w
}

func (w *Workers) work() {
	for j := range w.jobs {
		j.done <- j.code.Encode(j.shards)
	}
}

// Close stops the goroutines once the jobs started have been coded. The
// Workers must not be used after.
func (w *Workers) Close() {
	if w != nil {
		w.once.Do(func() { close(w.jobs) })
	}
}

// Start begins code.Encode(shards) as j, first waiting for j's previous
// Encode if it is still running.
func (w *Workers) Start(j *Job, code Codec, shards [][]byte) {
	_ = j.Wait()
	if j.done == nil {
		j.done = make(chan error, 1)
	}
	j.code, j.shards, j.busy = code, shards, true
	if w == nil {
		j.done <- code.Encode(shards)
		return
	}
	w.jobs <- j
}

// Busy reports whether j was started and not yet waited for.
func (j *Job) Busy() bool { return j.busy }

// Wait returns j's Encode's error once it is done; nil at once when j is
// not busy.
func (j *Job) Wait() error {
	if !j.busy {
		return nil
	}
	j.busy = false
	return <-j.done
}
