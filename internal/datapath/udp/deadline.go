package udp

import (
	"os"
	"sync/atomic"
	"time"
)

// receiveDeadline is the receive deadline of a Bind whose Receive waits on
// channels (StdBind, MemoryBind): SetReceiveDeadline may come from another
// goroutine, so the deadline is atomic and a kick wakes a waiting Receive
// to re-read it. The timer is reused across calls, so a Receive with a
// deadline allocates nothing; it is only touched under the Bind's rxMu.
type receiveDeadline struct {
	at    atomic.Int64 // UnixNano; 0: none
	kick  chan struct{}
	timer *time.Timer
}

func newReceiveDeadline() receiveDeadline {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return receiveDeadline{kick: make(chan struct{}, 1), timer: t}
}

// set moves the deadline (zero: none) and wakes a waiting Receive.
func (d *receiveDeadline) set(t time.Time) {
	if t.IsZero() {
		d.at.Store(0)
	} else {
		d.at.Store(max(t.UnixNano(), 1))
	}
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// arm returns the channel that fires at the deadline (nil when there is
// none), or os.ErrDeadlineExceeded if it has passed. Call disarm after the
// wait.
func (d *receiveDeadline) arm() (<-chan time.Time, error) {
	at := d.at.Load()
	if at == 0 {
		return nil, nil
	}
	wait := time.Until(time.Unix(0, at))
	if wait <= 0 {
		return nil, os.ErrDeadlineExceeded
	}
	d.timer.Reset(wait)
	return d.timer.C, nil
}

func (d *receiveDeadline) disarm() { d.timer.Stop() }
