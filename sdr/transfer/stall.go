package transfer

import (
	"context"
	"time"

	"github.com/sdrnet/sdrnet/sdr"
)

// watchProgress returns a context that ends once progress(c.Stats()) has
// not changed for d, with stalled() as its cause. A peer that is alive -
// its keepalives hold the connection open - but moves nothing ends a
// transfer this way instead of hanging it: a sender whose window never
// admits a chunk, or a scheme that does not resend what the link lost.
func watchProgress(ctx context.Context, c *sdr.Conn, d time.Duration, progress func(*sdr.Stats) uint64, stalled func() error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		tick := time.NewTicker(d / 8)
		defer tick.Stop()
		st := c.Stats()
		last, since := progress(&st), time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			st := c.Stats()
			if p := progress(&st); p != last {
				last, since = p, time.Now()
			} else if time.Since(since) >= d {
				cancel(stalled())
				return
			}
		}
	}()
	return ctx, func() { cancel(nil) }
}

// cause is why ctx ended: the stall it was cancelled with, else its error.
func cause(ctx context.Context, err error) error {
	if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
		return c
	}
	return err
}
