//go:build linux

package sdr

import (
	"time"

	"golang.org/x/sys/unix"
)

// fineWaker wakes the endpoint's loop after a pacer's wait, shorter than
// a Go timer times well: a Go timer under a millisecond can fire about a
// millisecond late, so a pacer spacing packets a fraction of a
// millisecond apart would run in bursts or below its rate; a goroutine in
// nanosleep(2) wakes far closer to time. Only the pacers' waits come
// here, because waking for every short wait of the loop costs loopback
// goodput. It serves one wait at a time; the loop keeps its Go timer as
// well, so a wait the waker is too busy for is only late.
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
