package linkem

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Directions, also indexes into per-direction arrays.
const (
	forward = 0
	reverse = 1
)

// verdict is what happens to one arriving datagram.
type verdict uint8

const (
	pass verdict = iota
	dropFail
	dropQueue
	dropLoss
)

// counters are one direction of one path's statistics; the engine writes
// them, Stats reads them at any time.
type counters struct {
	received, receivedBytes   atomic.Uint64
	forwarded, forwardedBytes atomic.Uint64
	dropLoss, dropQueue       atomic.Uint64
	dropFail, dropTooBig      atomic.Uint64
	duplicated, reordered     atomic.Uint64
	writeErrors               atomic.Uint64
	// The bucket's wait: datagrams that crossed a rate, their summed and
	// longest wait from arrival to leaving it (ns).
	queued, queueWait, maxQueueWait atomic.Uint64
}

func (c *counters) snapshot() DirStats {
	return DirStats{
		Received:       c.received.Load(),
		ReceivedBytes:  c.receivedBytes.Load(),
		Forwarded:      c.forwarded.Load(),
		ForwardedBytes: c.forwardedBytes.Load(),
		DroppedLoss:    c.dropLoss.Load(),
		DroppedQueue:   c.dropQueue.Load(),
		DroppedFail:    c.dropFail.Load(),
		DroppedTooBig:  c.dropTooBig.Load(),
		Duplicated:     c.duplicated.Load(),
		Reordered:      c.reordered.Load(),
		WriteErrors:    c.writeErrors.Load(),
		Queued:         c.queued.Load(),
		QueueWait:      time.Duration(c.queueWait.Load()),
		MaxQueueWait:   time.Duration(c.maxQueueWait.Load()),
	}
}

// link is one direction of one path: its impairment and state. Only the
// direction's engine goroutine touches it, except the atomic counters.
type link struct {
	im Impairment
	// bucket is the token bucket and queue the link's datagrams cross:
	// its own, or one every path's link of a direction shares
	// (Config.Shared).
	bucket *shaper

	last int64 // latest in-order departure (jitter never reorders)
	bad  bool  // Gilbert-Elliott state

	// One random stream per kind of decision, so changing one knob does not
	// shift another's draws.
	lossRng, jitterRng, reorderRng, dupRng *rand.Rand

	stats counters
	owner *path // the path this link belongs to (nil in unit tests)
}

// Random stream kinds.
const (
	streamLoss = iota
	streamJitter
	streamReorder
	streamDup
)

// shaper is a token bucket with a drop-tail queue in front: one link's,
// or, with Config.Shared, one direction's for all paths. Only the
// direction's engine goroutine touches it.
type shaper struct {
	rate  float64 // bits per second; 0: unlimited
	burst int64   // bucket depth in bytes
	queue float64 // drop-tail limit in bytes

	// free is when the last admitted datagram leaves the bucket (ns since
	// start, fractional so rounding never adds up), tokens the bytes left
	// in it then.
	free   float64
	tokens float64
	primed bool
}

func newShaper(im *Impairment) *shaper {
	return &shaper{rate: im.Rate, burst: im.Burst, queue: float64(orDefault(im.Queue, DefaultQueue))}
}

// newLink makes a link with a bucket of its own; newPath replaces it
// with a shared one under Config.Shared.
func newLink(im Impairment, seed uint64, index, dir int) *link {
	l := &link{im: im, bucket: newShaper(&im)}
	stream := func(kind int) *rand.Rand {
		id := uint64(index)<<8 | uint64(dir)<<4 | uint64(kind)
		hi := splitmix(seed ^ splitmix(id))
		return rand.New(rand.NewPCG(hi, splitmix(hi^id)))
	}
	l.lossRng = stream(streamLoss)
	l.jitterRng = stream(streamJitter)
	l.reorderRng = stream(streamReorder)
	l.dupRng = stream(streamDup)
	return l
}

// splitmix is the SplitMix64 finalizer, to spread seeds over the state.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// admit decides the fate of a datagram of n bytes arriving at now (ns
// since start). When it passes, at is its departure time, dup says whether
// a copy follows it, and the counters are updated (all but forwarded).
func (l *link) admit(now int64, n int) (at int64, dup bool, v verdict) {
	l.stats.received.Add(1)
	l.stats.receivedBytes.Add(uint64(n))
	im := &l.im
	if len(im.Down) > 0 && im.down(time.Duration(now)) {
		l.stats.dropFail.Add(1)
		return 0, false, dropFail
	}

	// Token bucket with a drop-tail queue in front.
	dep := now
	if b := l.bucket; b.rate > 0 {
		size := float64(n)
		bytesPerNs := b.rate / 8e9
		depth := max(float64(b.burst), size)
		t := float64(now)
		switch {
		case !b.primed: // the bucket starts full
			b.primed, b.tokens, b.free = true, depth, t
		case t > b.free:
			b.tokens = min(depth, b.tokens+(t-b.free)*bytesPerNs)
			b.free = t
		}
		// The backlog still to drain, in bytes, is the bucket's lag behind
		// now at the bucket's rate.
		if (b.free-t)*bytesPerNs+size > b.queue {
			l.stats.dropQueue.Add(1)
			return 0, false, dropQueue
		}
		if b.tokens >= size {
			b.tokens -= size
		} else {
			b.free += (size - b.tokens) / bytesPerNs
			b.tokens = 0
		}
		dep = int64(math.Ceil(b.free))
	}

	if l.lost(time.Duration(now)) {
		l.stats.dropLoss.Add(1)
		return 0, false, dropLoss
	}

	at = dep + int64(im.Delay)
	if j := int64(im.Jitter); j > 0 {
		at += l.jitterRng.Int64N(2*j+1) - j
		at = max(at, dep)
	}
	at = max(at, l.last) // no overtaking but by Reorder
	l.last = at
	if im.Reorder > 0 && l.reorderRng.Float64() < im.Reorder {
		at += int64(im.ReorderDelay)
		l.stats.reordered.Add(1)
	}
	if len(im.Down) > 0 && im.down(time.Duration(at)) {
		l.stats.dropFail.Add(1)
		return 0, false, dropFail
	}
	if im.Duplicate > 0 && l.dupRng.Float64() < im.Duplicate {
		l.stats.duplicated.Add(1)
		dup = true
	}
	if l.bucket.rate > 0 { // the wait of a datagram that goes on
		l.stats.queued.Add(1)
		wait := uint64(max(dep-now, 0))
		l.stats.queueWait.Add(wait)
		if wait > l.stats.maxQueueWait.Load() { // one writer: this link's engine
			l.stats.maxQueueWait.Store(wait)
		}
	}
	return at, dup, pass
}

// lost draws the loss decision for one datagram arriving at now.
func (l *link) lost(now time.Duration) bool {
	if g := l.im.GE; g.P > 0 {
		var lost bool
		lost, l.bad = g.Step(l.bad, l.lossRng)
		return lost
	}
	p := l.im.Loss
	if len(l.im.LossAt) > 0 {
		p = l.im.lossAt(now)
	}
	return p > 0 && l.lossRng.Float64() < p
}
