//go:build linux

package sdr

import (
	"testing"
	"time"
)

// TestFineWaker: a short wait ticks once; a wait the Go timer is good
// enough for, or none, does not tick; the waker stops with its endpoint.
func TestFineWaker(t *testing.T) {
	quit := make(chan struct{})
	w := newFineWaker(quit)
	w.wake(200 * time.Microsecond)
	select {
	case <-w.ticks():
	case <-time.After(10 * time.Second):
		t.Fatal("no tick after a 200 us wait")
	}
	w.wake(fineWait)
	w.wake(0)
	select {
	case <-w.ticks():
		t.Fatal("a tick for a wait the waker does not time")
	case <-time.After(3 * fineWait):
	}
	close(quit)
}
