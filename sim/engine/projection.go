package engine

import "github.com/sdrnet/sdrnet/internal/monotime"

// Projection measures how a run's events would spread over threads under
// conservative synchronisation (as a Group runs them), from a run on one
// engine: the
// run's events, each tagged with the part of the model it works on, are
// cut into windows one lookahead long (within a window no part can
// affect another), parts are dealt to threads, and a window lasts as
// long as its busiest thread. The projected speedup is the events over
// the sum of those maxima: it counts events, not their cost, and no
// synchronisation overhead, so it bounds what threads can gain. Events
// of no part (a workload's) run alone, one step each.
//
// Parts go to threads two ways: in contiguous blocks (neighbouring racks
// together, so fewer packets pass between threads) or interleaved (part
// i to thread i mod n, which spreads a busy neighbourhood). Each is
// projected, with the packets it passes between threads.
type Projection struct {
	window  monotime.Duration
	parts   int
	configs []ThreadProjection // what each (threads, assignment) accumulates

	cur     int64    // the window being counted, -1 before the first
	counts  []uint64 // per part, in the current window
	touched []int    // parts with a count in the current window
	load    []uint64 // scratch: per thread, in the current window

	events, unowned uint64
	perPart         []uint64
	windows         uint64     // windows with an event
	critical        []uint64   // per config: the sum over windows of the busiest thread's events
	busy            [][]uint64 // per config and thread: its events
}

// ThreadProjection is a Projection's answer for one thread count and
// assignment of parts.
type ThreadProjection struct {
	Threads     int
	Interleaved bool
	// Speedup is the run's events over the critical path's.
	Speedup float64
	// Idle is the share of the threads' time in windows spent waiting
	// for the busiest: mean and worst thread.
	IdleMean, IdleMax float64
	// Handoffs are the events that bring a packet from a part of one
	// thread to a part of another: what threads would pass each other.
	Handoffs uint64
}

// NewProjection counts for parts parts, windows of the given lookahead,
// and each of the thread counts, in blocks and interleaved.
func NewProjection(parts int, lookahead monotime.Duration, threads []int) *Projection {
	p := &Projection{window: max(lookahead, 1), parts: parts, cur: -1,
		counts: make([]uint64, parts), perPart: make([]uint64, parts)}
	most := 1
	for _, n := range threads {
		most = max(most, n)
		for _, il := range []bool{false, true} {
			p.configs = append(p.configs, ThreadProjection{Threads: n, Interleaved: il})
			p.busy = append(p.busy, make([]uint64, n))
		}
	}
	p.critical = make([]uint64, len(p.configs))
	p.load = make([]uint64, most)
	return p
}

// Add counts an event at t of part (negative: of no part); from is the
// part a packet it delivers comes from, or negative.
func (p *Projection) Add(t monotime.Time, part, from int) {
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
	if from >= 0 && from < p.parts && from != part {
		for i := range p.configs {
			c := &p.configs[i]
			if p.thread(part, c) != p.thread(from, c) {
				c.Handoffs++
			}
		}
	}
}

// thread is the thread that runs part under c.
func (p *Projection) thread(part int, c *ThreadProjection) int {
	switch {
	case p.parts <= c.Threads:
		return part
	case c.Interleaved:
		return part % c.Threads
	}
	return part * c.Threads / p.parts
}

// flush closes the current window.
func (p *Projection) flush() {
	if len(p.touched) == 0 {
		return
	}
	p.windows++
	for i := range p.configs {
		c := &p.configs[i]
		load := p.load[:c.Threads]
		clear(load)
		for _, part := range p.touched {
			load[p.thread(part, c)] += p.counts[part]
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

// Result closes the count and returns, per thread count and assignment,
// the projected speedup, idle time and handoffs, with the windows that
// had work (the synchronisation rounds) and the events per part.
func (p *Projection) Result() (out []ThreadProjection, windows uint64, perPart []uint64) {
	p.flush()
	for i, c := range p.configs {
		if crit := p.critical[i]; crit > 0 {
			c.Speedup = float64(p.events) / float64(crit)
			steps := float64(crit - p.unowned) // the windows' steps
			sum, least := 0.0, -1.0
			for _, b := range p.busy[i] {
				sum += float64(b)
				if least < 0 || float64(b) < least {
					least = float64(b)
				}
			}
			if steps > 0 {
				c.IdleMean = 1 - sum/float64(c.Threads)/steps
				c.IdleMax = 1 - least/steps
			}
		}
		out = append(out, c)
	}
	return out, p.windows, p.perPart
}
