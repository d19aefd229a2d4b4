package engine

import "github.com/sdrnet/sdrnet/internal/monotime"

// Projection measures how a run's events would spread over threads under
// conservative synchronisation, before any parallel engine exists: the
// run's events, each tagged with the part of the model it works on, are
// cut into windows one lookahead long (within a window no part can
// affect another), each thread takes a contiguous block of parts, and a
// window lasts as long as its busiest thread. The projected speedup is
// the events over the sum of those maxima: it counts events, not their
// cost, and no synchronisation overhead, so it bounds what threads can
// gain. Events of no part (a workload's) run alone, one step each.
type Projection struct {
	window  monotime.Duration
	parts   int
	threads []int

	cur     int64    // the window being counted, -1 before the first
	counts  []uint64 // per part, in the current window
	touched []int    // parts with a count in the current window
	load    []uint64 // scratch: per thread, in the current window

	events, unowned uint64
	perPart         []uint64
	windows         uint64   // windows with an event
	critical        []uint64 // per thread count: the sum over windows of the busiest thread's events
	busy            [][]uint64
}

// ThreadProjection is a Projection's answer for one thread count.
type ThreadProjection struct {
	Threads int
	// Speedup is the run's events over the critical path's.
	Speedup float64
	// Idle is the share of the threads' time in windows spent waiting
	// for the busiest: mean and worst thread.
	IdleMean, IdleMax float64
}

// NewProjection counts for parts parts, windows of the given lookahead,
// and each of the thread counts.
func NewProjection(parts int, lookahead monotime.Duration, threads []int) *Projection {
	p := &Projection{window: max(lookahead, 1), parts: parts, threads: threads, cur: -1,
		counts: make([]uint64, parts), perPart: make([]uint64, parts), critical: make([]uint64, len(threads))}
	most := 1
	for _, n := range threads {
		most = max(most, n)
		p.busy = append(p.busy, make([]uint64, n))
	}
	p.load = make([]uint64, most)
	return p
}

// Add counts an event at t of part (negative: of no part).
func (p *Projection) Add(t monotime.Time, part int) {
	p.events++
	if part < 0 || part >= p.parts {
		p.unowned++
		for i := range p.critical {
			p.critical[i]++
		}
		return
	}
	if w := int64(t / monotime.Time(p.window)); w != p.cur {
		p.flush()
		p.cur = w
	}
	if p.counts[part] == 0 {
		p.touched = append(p.touched, part)
	}
	p.counts[part]++
	p.perPart[part]++
}

// thread is the thread that runs part among n.
func (p *Projection) thread(part, n int) int {
	if p.parts <= n {
		return part
	}
	return part * n / p.parts
}

// flush closes the current window.
func (p *Projection) flush() {
	if len(p.touched) == 0 {
		return
	}
	p.windows++
	for i, n := range p.threads {
		load := p.load[:n]
		clear(load)
		for _, part := range p.touched {
			load[p.thread(part, n)] += p.counts[part]
		}
		most := uint64(0)
		for th, l := range load {
			most = max(most, l)
			p.busy[i][th] += l
		}
		p.critical[i] += most
	}
	for _, part := range p.touched {
		p.counts[part] = 0
	}
	p.touched = p.touched[:0]
}

// Result closes the count and returns, per thread count, the projected
// speedup and idle time, with the windows that had work (the
// synchronisation rounds) and the events per part.
func (p *Projection) Result() (out []ThreadProjection, windows uint64, perPart []uint64) {
	p.flush()
	for i, n := range p.threads {
		tp := ThreadProjection{Threads: n}
		if c := p.critical[i]; c > 0 {
			tp.Speedup = float64(p.events) / float64(c)
			owned := float64(p.critical[i] - p.unowned) // the windows' steps
			sum, least := 0.0, -1.0
			for _, b := range p.busy[i] {
				sum += float64(b)
				if least < 0 || float64(b) < least {
					least = float64(b)
				}
			}
			if owned > 0 {
				tp.IdleMean = 1 - sum/float64(n)/owned
				tp.IdleMax = 1 - least/owned
			}
		}
		out = append(out, tp)
	}
	return out, p.windows, p.perPart
}
