package engine

import (
	"math/bits"
	"slices"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// The event queue is a 4-ary min-heap of 16-byte entries in a slice.
//
// Why 4-ary: a pop costs one cache line per level when the four children
// of a node share a line, and a 4-ary heap has half the levels of a binary
// one. Why the key in the entry: comparisons then never leave the heap
// array; the pool is touched only to record an entry's new position.
// Why 16 bytes: four entries make exactly one 64-byte line. The first root
// indices are left unused so that the children of every node, 4j-8..4j-5,
// start on a multiple of four entries; large slices are page-aligned, so
// in a big heap each sibling group is one cache line.
//
// key packs the sequence number (high 32 bits) above the slot index (low
// 32 bits). Sequence numbers are unique among pending events, so ordering
// by (t, key) is ordering by (t, seq), and a comparison is one 128-bit
// subtraction. When the 32-bit sequence runs out, the pending events are
// renumbered in order (see renumber): the order stays exact at the cost of
// one sort per four billion events.
type entry struct {
	t   monotime.Time
	key uint64
}

func mkEntry(t monotime.Time, seq, slot uint32) entry {
	return entry{t, uint64(seq)<<32 | uint64(slot)}
}

func (x entry) slot() uint32 { return uint32(x.key) }

// root is the index of the heap's top entry.
const root = 3

// prefetchMin is the heap size (entries) above which sinking touches the
// grandchildren's cache lines ahead of need. Below it the heap lives in
// the L2 cache and the extra loads only cost time.
const prefetchMin = 1 << 14

func (x entry) less(y entry) bool {
	return x.t < y.t || (x.t == y.t && x.key < y.key)
}

// before is 1 if x orders before y and 0 otherwise: the borrow out of the
// 128-bit subtraction (t, key) - (t', key'). Times are never negative (At
// clamps to Now >= 0), so unsigned order is time order. It and pick are
// branch-free because with random keys a branchy comparison mispredicts
// about half the time, and comparisons are most of the engine's cost.
func before(x, y entry) uint64 {
	_, b := bits.Sub64(x.key, y.key, 0)
	_, b = bits.Sub64(uint64(x.t), uint64(y.t), b)
	return b
}

// pick returns y if b is 1 and x if b is 0, without a branch.
func pick(b uint64, x, y entry) entry {
	m := -b
	return entry{x.t ^ (x.t^y.t)&monotime.Time(m), x.key ^ (x.key^y.key)&m}
}

// up moves x, destined for the empty position j, towards the root until
// its parent is not greater, then stores it. Moving a hole instead of
// swapping halves the writes. New events mostly belong near the bottom,
// so the loop rarely runs and its branch predicts well.
func (e *Engine) up(j int, x entry) {
	h, pos := e.heap, e.pos
	for j > root {
		p := j>>2 + 2
		if !x.less(h[p]) {
			break
		}
		h[j] = h[p]
		pos[h[j].slot()] = uint32(j)
		j = p
	}
	h[j] = x
	pos[x.slot()] = uint32(j)
}

// popRoot removes the top entry. The last entry has to be reinserted; it
// was a leaf, so it almost surely belongs near the bottom again. Rather
// than compare it at every level on the way down, the hole left at the
// root walks down to a leaf along the smallest children and the last
// entry rises from there (Floyd's bottom-up variant): one comparison
// fewer per level, and no data-dependent branch on the way down.
func (e *Engine) popRoot() {
	n := len(e.heap) - 1
	x := e.heap[n]
	e.heap = e.heap[:n]
	if n == root {
		return
	}
	h, pos := e.heap, e.pos
	j := root
	var sink monotime.Time
	big := n > prefetchMin
	for {
		c := 4*j - 8
		if c+4 > n {
			if c < n { // a last, partial sibling group
				m := c
				for i := c + 1; i < n; i++ {
					if h[i].less(h[m]) {
						m = i
					}
				}
				h[j] = h[m]
				pos[h[j].slot()] = uint32(j)
				j = m // its children lie past n
			}
			break
		}
		if gc := 4*c - 8; big && gc+16 <= n {
			// Start loading the four lines one of which the next level
			// reads, while this level's line is still on its way: it
			// halves the memory stall per level once the heap outgrows
			// the cache. Go has no prefetch instruction; a load whose
			// value only feeds e.sink does the same.
			sink ^= h[gc].t ^ h[gc+4].t ^ h[gc+8].t ^ h[gc+12].t
		}
		g := (*[4]entry)(h[c : c+4])
		b01, b23 := before(g[1], g[0]), before(g[3], g[2])
		w01, w23 := pick(b01, g[0], g[1]), pick(b23, g[2], g[3])
		b := before(w23, w01)
		w := pick(b, w01, w23)
		h[j] = w
		pos[w.slot()] = uint32(j)
		j = c + int(b01^(b01^(2+b23))&-b)
	}
	e.sink = sink
	e.up(j, x)
}

// remove deletes the entry at j: the last entry fills the hole and moves
// whichever way restores the order. j is random here (a cancelled timer),
// so the last entry usually belongs right at j: a top-down sift that
// stops at the first level where it fits is cheaper than the bottom-up
// walk of popRoot.
func (e *Engine) remove(j int) {
	n := len(e.heap) - 1
	x := e.heap[n]
	e.heap = e.heap[:n]
	if j == n {
		return
	}
	h, pos := e.heap, e.pos
	if j > root && x.less(h[j>>2+2]) {
		e.up(j, x)
		return
	}
	for {
		c := 4*j - 8
		if c >= n {
			break
		}
		var w entry
		m := c
		if c+4 <= n {
			g := (*[4]entry)(h[c : c+4])
			b01, b23 := before(g[1], g[0]), before(g[3], g[2])
			w01, w23 := pick(b01, g[0], g[1]), pick(b23, g[2], g[3])
			b := before(w23, w01)
			w = pick(b, w01, w23)
			m += int(b01 ^ (b01^(2+b23))&-b)
		} else {
			for i := c + 1; i < n; i++ {
				if h[i].less(h[m]) {
					m = i
				}
			}
			w = h[m]
		}
		if !w.less(x) {
			break
		}
		h[j] = w
		pos[w.slot()] = uint32(j)
		j = m
	}
	h[j] = x
	pos[x.slot()] = uint32(j)
}

// renumber gives the pending events the sequence numbers 0..n-1 in their
// current order and restarts the counter at n. Relative order among
// pending events is all that ties depend on, so the heap stays valid and
// every tie still breaks in scheduling order. It allocates, but runs once
// per four billion scheduled events.
func (e *Engine) renumber() {
	keys := make([]uint64, 0, len(e.heap)-root)
	for _, x := range e.heap[root:] {
		keys = append(keys, x.key)
	}
	slices.Sort(keys) // by sequence number: it is in the high bits
	for rank, k := range keys {
		j := e.pos[uint32(k)]
		e.heap[j] = mkEntry(e.heap[j].t, uint32(rank), uint32(k))
	}
	e.seq = uint32(len(keys))
}
