package linkem

import "time"

// waker wakes the engine when its earliest datagram is due. A wake may be
// early or stale; the engine checks the time itself.
type waker interface {
	wake() <-chan struct{}
	arm(d time.Duration) // wake in d from now, replacing any earlier arm
	close()
}

// timeWaker is a waker on the runtime's timers: portable, but with the
// runtime's resolution (about a millisecond when the process is idle).
type timeWaker struct {
	t *time.Timer
	c chan struct{}
}

func newTimeWaker() *timeWaker {
	w := &timeWaker{c: make(chan struct{}, 1)}
	w.t = time.AfterFunc(time.Hour, func() {
		select {
		case w.c <- struct{}{}:
		default:
		}
	})
	w.t.Stop()
	return w
}

func (w *timeWaker) wake() <-chan struct{} { return w.c }
func (w *timeWaker) arm(d time.Duration)   { w.t.Reset(d) }
func (w *timeWaker) close()                { w.t.Stop() }
