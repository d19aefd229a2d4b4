//go:build linux

package sdr

import (
	"time"

	"golang.org/x/sys/unix"
)

// fineWaker wakes the endpoint's loop after a pacer's wait, shorter than
// a Go timer times well: on the benchmark machine a Go timer under a
// millisecond fired about a millisecond late (50 us waits woke 1.05 ms
// late at the median), so a pacer spacing packets a fraction of a
// millisecond apart ran in millisecond bursts or below its rate, and two
// NSCC connections used 0.78 of a shallow bottleneck. A goroutine in
// nanosleep(2) woke 0.09 ms late. Only the pacers' waits come here: with
// every short wait of the loop, loopback lost a quarter of its goodput
// to the wake-ups (docs/benchmarks.md). It serves one wait at a time;
// the loop keeps its Go timer as well, so a wait the waker is too busy
// for is only late.
type fineWaker struct {
	req  chan time.Duration
	tick chan struct{}
}

// fineWait is the longest wait the waker times: longer ones are the Go
// timer's, whose lateness is then a small share of the wait.
const fineWait = 2 * time.Millisecond

func newFineWaker(quit <-chan struct{}) *fineWaker {
	w := &fineWaker{req: make(chan time.Duration, 1), tick: make(chan struct{}, 1)}
	go func() {
		for {
			select {
			case d := <-w.req:
				ts := unix.NsecToTimespec(d.Nanoseconds())
				for unix.Nanosleep(&ts, &ts) == unix.EINTR {
				}
				select {
				case w.tick <- struct{}{}:
				default: // a tick is already waiting
				}
			case <-quit:
				return
			}
		}
	}()
	return w
}

// wake asks for a tick after d, if d is short and the waker is free.
func (w *fineWaker) wake(d time.Duration) {
	if d <= 0 || d >= fineWait {
		return
	}
	select {
	case w.req <- d:
	default: // busy: the Go timer covers this wait
	}
}

// ticks delivers the waker's ticks.
func (w *fineWaker) ticks() <-chan struct{} { return w.tick }
