package coretest

import (
	"container/heap"
	"math/rand/v2"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/lossmodel"
	"github.com/sdrnet/sdrnet/internal/monotime"
)

// GilbertElliott is the burst-loss model of every sdrnet link.
type GilbertElliott = lossmodel.GilbertElliott

// Bursty returns a Gilbert-Elliott model whose long-run loss rate is loss
// and whose bursts last burst packets on average, for LinkConfig.Burst.
func Bursty(loss, burst float64) *GilbertElliott {
	g := lossmodel.Bursty(loss, burst)
	return &g
}

// LinkConfig describes one direction of a link.
type LinkConfig struct {
	Delay monotime.Duration // one-way propagation delay
	Rate  float64           // bits per second; zero: infinitely fast
	// Queue, when set, makes the link a bottleneck the side does not
	// wait for: it sends whenever its core lets it, the link holds up to
	// Queue bytes waiting behind the one on the wire and drops what
	// comes on top (drop-tail), as a switch with a shallow buffer. Zero:
	// the side's own link, which it sends no faster than Rate.
	Queue int
	// Loss is the Bernoulli drop probability; Burst, when set, replaces it.
	Loss  float64
	Burst *GilbertElliott
	// Duplicate is the probability a packet arrives twice.
	Duplicate float64
	// Reorder is the probability a packet is held back by ReorderDelay,
	// letting later packets overtake it.
	Reorder      float64
	ReorderDelay monotime.Duration
	// DuplicateDelay holds the second copy of a duplicated packet back
	// this long, so it can arrive after its message completed.
	DuplicateDelay monotime.Duration
	// Drop, when set, is asked about every packet first; true drops it.
	// Tests use it to lose chosen packets.
	Drop func(b []byte) bool
	// PathDown, when set, says whether path p loses everything at now:
	// a failed ECMP path of a multipath connection.
	PathDown func(now monotime.Time, p core.Path) bool
	// PathDelay, when set, adds a per-path delay.
	PathDelay func(p core.Path) monotime.Duration
}

// LinkStats counts what a link did.
type LinkStats struct {
	Sent, Bytes, Lost, Duplicated, Reordered uint64
	QueueDrops                               uint64 // of Lost: dropped by a full Queue
}

// packet is a datagram in flight.
type packet struct {
	at  monotime.Time
	seq uint64
	buf []byte
}

type flight []packet

func (f flight) Len() int { return len(f) }
func (f flight) Less(i, j int) bool {
	if f[i].at != f[j].at {
		return f[i].at < f[j].at
	}
	return f[i].seq < f[j].seq
}
func (f flight) Swap(i, j int) { f[i], f[j] = f[j], f[i] }
func (f *flight) Push(x any)   { *f = append(*f, x.(packet)) }
func (f *flight) Pop() any {
	old := *f
	p := old[len(old)-1]
	*f = old[:len(old)-1]
	return p
}

// link is one direction: it serializes at Rate, delays, drops, duplicates
// and reorders, in that order.
type link struct {
	cfg    LinkConfig
	rng    *rand.Rand
	bad    bool // Gilbert-Elliott state
	free   monotime.Time
	seq    uint64
	q      flight
	pool   [][]byte
	gather []byte
	stats  LinkStats
}

func (l *link) lost() bool {
	if g := l.cfg.Burst; g != nil {
		var lost bool
		lost, l.bad = g.Step(l.bad, l.rng)
		return lost
	}
	return l.cfg.Loss > 0 && l.rng.Float64() < l.cfg.Loss
}

// send puts a copy of the datagram header+payload on the link at now,
// which must not be before the link is free.
func (l *link) send(now monotime.Time, pth core.Path, header, payload []byte) {
	l.gather = append(append(l.gather[:0], header...), payload...)
	b := l.gather
	start := max(now, l.free)
	if q := l.cfg.Queue; q > 0 && float64(start.Sub(now))*l.cfg.Rate/8/float64(monotime.Second) > float64(q) {
		l.stats.Sent++
		l.stats.Lost++
		l.stats.QueueDrops++
		return
	}
	l.free = start.Add(monotime.TransmitTime(len(b), l.cfg.Rate))
	l.stats.Sent++
	l.stats.Bytes += uint64(len(b))
	if (l.cfg.Drop != nil && l.cfg.Drop(b)) || (l.cfg.PathDown != nil && l.cfg.PathDown(now, pth)) || l.lost() {
		l.stats.Lost++
		return
	}
	at := l.free.Add(l.cfg.Delay)
	if l.cfg.PathDelay != nil {
		at = at.Add(l.cfg.PathDelay(pth))
	}
	if l.cfg.Reorder > 0 && l.rng.Float64() < l.cfg.Reorder {
		l.stats.Reordered++
		at = at.Add(l.cfg.ReorderDelay)
	}
	l.push(at, b)
	if l.cfg.Duplicate > 0 && l.rng.Float64() < l.cfg.Duplicate {
		l.stats.Duplicated++
		l.push(at.Add(monotime.TransmitTime(len(b), l.cfg.Rate)+1+l.cfg.DuplicateDelay), b)
	}
}

func (l *link) push(at monotime.Time, b []byte) {
	var c []byte
	if n := len(l.pool); n > 0 {
		c, l.pool = l.pool[n-1][:0], l.pool[:n-1]
	}
	c = append(c, b...)
	l.seq++
	heap.Push(&l.q, packet{at: at, seq: l.seq, buf: c})
}

// next returns the arrival time of the earliest packet in flight.
func (l *link) next() monotime.Time {
	if len(l.q) == 0 {
		return monotime.Never
	}
	return l.q[0].at
}

// pop removes the earliest packet; recycle its buffer when done.
func (l *link) pop() packet { return heap.Pop(&l.q).(packet) }

func (l *link) recycle(b []byte) { l.pool = append(l.pool, b) }
