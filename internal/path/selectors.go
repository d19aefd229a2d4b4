package path

import (
	"math/rand/v2"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// Policy constants.
const (
	// ExploreEvery: BestRTT sends one packet in this many on a path other
	// than the best, taking the others in turn.
	ExploreEvery = 16
	// DWRRWindowRTTs is the length, in smoothed RTTs of the connection
	// (MinSilence before the first sample), of the window over which DWRR
	// measures each path's delivery rate. The window is two halves; weights
	// are recomputed when a half ends.
	DWRRWindowRTTs = 8
	// DWRRMinShare: a DWRR path's weight is
	//	1/DWRRMinShare + (1 - 1/DWRRMinShare) * rate/top
	// where rate is what it delivered over the window and top the largest
	// rate of an up path. The constant term keeps measuring a path that
	// delivered nothing, and pulls the weights back towards equal where
	// deliveries only mirror what each path was sent; without it weights
	// drift (a path sent a little less delivers a little less) until a few
	// paths carry everything.
	DWRRMinShare = 32
)

// single is plain ECMP: one path.
type single struct{ base }

func (s *single) Select(monotime.Time) int { return 0 }

// roundRobin cycles through the paths in index order, skipping failed ones.
type roundRobin struct {
	base
	next int
}

func (s *roundRobin) Select(now monotime.Time) int {
	if i, ok := s.t.preselect(now); ok {
		return i
	}
	n := len(s.t.paths)
	for range n {
		i := s.next
		if s.next++; s.next == n {
			s.next = 0
		}
		if s.t.usable(now, i) {
			return i
		}
	}
	return s.t.pickable(now)
}

// oblivious cycles through the paths in a random order drawn afresh every
// cycle (UET's oblivious load balancer), skipping failed ones.
type oblivious struct {
	base
	cycle permutedCycle
}

func (s *oblivious) Select(now monotime.Time) int {
	if i, ok := s.t.preselect(now); ok {
		return i
	}
	for range s.t.paths {
		if i := s.cycle.next(); s.t.usable(now, i) {
			return i
		}
	}
	return s.t.pickable(now)
}

// permutedCycle returns each of 0..n-1 once per cycle, in a random order
// drawn afresh for every cycle.
type permutedCycle struct {
	order []uint8
	pos   int
	rng   *rand.Rand
}

// newPermutedCycle draws its first order on first use.
func newPermutedCycle(n int, rng *rand.Rand) permutedCycle {
	c := permutedCycle{order: make([]uint8, n), pos: n, rng: rng}
	for i := range c.order {
		c.order[i] = uint8(i)
	}
	return c
}

func (c *permutedCycle) next() int {
	if c.pos == len(c.order) {
		for i := len(c.order) - 1; i > 0; i-- { // Fisher-Yates
			j := c.rng.IntN(i + 1)
			c.order[i], c.order[j] = c.order[j], c.order[i]
		}
		c.pos = 0
	}
	c.pos++
	return int(c.order[c.pos-1])
}

// bestRTT sends on the up path of lowest smoothed RTT, and every
// ExploreEvery-th packet on the next other up path in turn. Until a path
// has an RTT sample it goes round robin.
//
// It keeps the best and second-best paths so that the common case, an ack
// on the best path that leaves it best, costs O(1); it ranks all paths again
// only when health changes or the order of the two leaders may have.
type bestRTT struct {
	base
	best, second int    // -1: none
	ranked       uint64 // table version the ranking reflects
	sinceExplore int
	explore      int // next path to explore
}

const noRTT = monotime.Duration(1<<63 - 1)

func newBestRTT(t *Table, start int) *bestRTT {
	s := &bestRTT{base: base{t}, explore: start}
	s.rank()
	return s
}

// key orders paths: smoothed RTT for up paths with a sample, else noRTT.
func (s *bestRTT) key(i int) monotime.Duration {
	if i < 0 {
		return noRTT
	}
	p := &s.t.paths[i]
	if p.failed || p.rtt.Samples() == 0 {
		return noRTT
	}
	return p.rtt.Smoothed()
}

func (s *bestRTT) rank() {
	s.best, s.second = -1, -1
	bk, sk := noRTT, noRTT
	for i := range s.t.paths {
		switch k := s.key(i); {
		case k < bk:
			s.second, sk = s.best, bk
			s.best, bk = i, k
		case k < sk:
			s.second, sk = i, k
		}
	}
	s.ranked = s.t.version
}

func (s *bestRTT) Select(now monotime.Time) int {
	if i, ok := s.t.preselect(now); ok {
		return i
	}
	n := len(s.t.paths)
	if s.sinceExplore++; s.sinceExplore >= ExploreEvery {
		s.sinceExplore = 0
		for range n {
			i := s.explore
			if s.explore++; s.explore == n {
				s.explore = 0
			}
			if i != s.best && s.t.usable(now, i) {
				return i
			}
		}
	}
	for range n {
		if s.ranked != s.t.version {
			s.rank()
		}
		if s.best < 0 {
			break
		}
		if s.t.usable(now, s.best) {
			return s.best
		}
		// The best path has just failed (silence); rank again.
	}
	return s.t.pickable(now)
}

func (s *bestRTT) OnAcked(now monotime.Time, path int, bytes int, rtt monotime.Duration) {
	s.t.acked(now, path, bytes, rtt)
	if s.ranked != s.t.version {
		s.rank() // the ack restored a failed path
		return
	}
	if rtt <= 0 {
		return
	}
	switch k := s.key(path); {
	case path == s.best:
		if k > s.key(s.second) {
			s.rank()
		}
	case path == s.second:
		s.rank() // it may have passed the best or fallen behind a third
	case k < s.key(s.best):
		s.best, s.second = path, s.best
	case k < s.key(s.second):
		s.second = path
	}
}

// dwrr is deficit weighted round robin. Visiting the paths in turn, it adds
// each up path's quantum to its deficit and sends one packet on it when the
// deficit covers one, carrying the rest over. A path's quantum is its
// weight (see DWRRMinShare) in packets, the weight following the bytes
// acked on it over the last window (DWRRWindowRTTs); the up path that
// delivered most gets one packet per round. Long-run packet shares follow
// the weights: paths delivering 3:1 get 2.8:1 (the constant term's
// doing). Packet sizes do not depend on the path, so shares of packets are
// shares of bytes.
//
// Weights from delivery rates partly reinforce themselves: a path that gets
// few packets delivers few bytes. Paths whose capacity binds (they deliver
// less than they are sent) lose share; the others drift back to an equal
// share only through the constant term, by 1/DWRRMinShare of the gap per
// half window. After a failure a restored path so takes some hundred RTTs
// to regain its share. This is the policy Stellar compares against.
type dwrr struct {
	base
	quantum, deficit []int64 // in 1/credit of a packet
	older, newer     []uint64
	rate             []uint64 // bytes acked in the last full window
	cur              int
	visiting         bool // cur's quantum was added for this visit
	window           int  // in smoothed RTTs: DWRRWindowRTTs unless tuned
	rollAt           monotime.Time
	weighed          uint64 // table version the quanta reflect
}

const credit = 1024 // deficit units per packet

func newDWRR(t *Table, start, windowRTTs int) *dwrr {
	n := len(t.paths)
	s := &dwrr{
		base:    base{t},
		quantum: make([]int64, n), deficit: make([]int64, n),
		older: make([]uint64, n), newer: make([]uint64, n), rate: make([]uint64, n),
		cur: start, window: windowRTTs,
	}
	s.reweigh()
	return s
}

// roll ends a half window at now.
func (s *dwrr) roll(now monotime.Time) {
	rtt := MinSilence
	if s.t.conn.Samples() > 0 {
		rtt = s.t.conn.Smoothed()
	}
	for i := range s.rate {
		s.rate[i] = s.older[i] + s.newer[i]
		s.older[i], s.newer[i] = s.newer[i], 0
	}
	s.rollAt = now.Add(max(rtt*monotime.Duration(s.window)/2, monotime.Nanosecond))
	s.reweigh()
}

func (s *dwrr) reweigh() {
	var top uint64
	for i, r := range s.rate {
		if !s.t.paths[i].failed {
			top = max(top, r)
		}
	}
	for i, r := range s.rate {
		q := int64(credit)
		if top > 0 {
			const floor = credit / DWRRMinShare
			q = floor + int64(min(r, top)*(credit-floor)/top)
		}
		s.quantum[i] = q
	}
	s.weighed = s.t.version
}

func (s *dwrr) Select(now monotime.Time) int {
	if i, ok := s.t.preselect(now); ok {
		return i
	}
	if now >= s.rollAt {
		s.roll(now)
	}
	if s.weighed != s.t.version {
		s.reweigh()
	}
	n := len(s.t.paths)
	for range (DWRRMinShare + 1) * n {
		i := s.cur
		if !s.visiting {
			s.visiting = true
			if s.t.usable(now, i) {
				s.deficit[i] += s.quantum[i]
			} else {
				s.deficit[i] = 0
			}
		}
		if s.deficit[i] >= credit && !s.t.paths[i].failed {
			s.deficit[i] -= credit
			return i
		}
		s.visiting = false
		if s.cur++; s.cur == n {
			s.cur = 0
		}
	}
	return s.t.pickable(now)
}

func (s *dwrr) OnAcked(now monotime.Time, path int, bytes int, rtt monotime.Duration) {
	s.t.acked(now, path, bytes, rtt)
	if now >= s.rollAt {
		s.roll(now)
	}
	s.newer[path] += uint64(bytes)
}
