package sim

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// The event queue is a 4-ary min-heap of 16-byte entries in a slice.
//
// Why 4-ary: a pop costs one cache line per level when the four children
// of a node share a line, and a 4-ary heap has half the levels of a binary
// one. Why the key in the entry: comparisons then never leave the heap
// array; the slot is touched only to record the entry's new position.
// Why 16 bytes: four entries make exactly one 64-byte line. The first root
// indices are left unused so that the children of every node, 4j-8..4j-5,
// start on a multiple of four entries; large slices are page-aligned, so
// in a big heap each sibling group is one cache line.
//
// The sequence number is 32 bits to fit the entry. When it runs out the
// pending events are renumbered in order (see renumber), which keeps the
// order exact at a cost of one sort per four billion events.
type entry struct {
	t    monotime.Time
	slot uint32
	seq  uint32
}

// root is the index of the heap's top entry.
const root = 3

func (a entry) less(b entry) bool {
	return a.t < b.t || (a.t == b.t && a.seq < b.seq)
}

// up moves x, destined for the empty position j, towards the root until
// its parent is not greater, then stores it. Moving a hole instead of
// swapping halves the writes.
func (e *Engine) up(j int, x entry) {
	h, pos := e.heap, e.pos
	for j > root {
		p := j>>2 + 2
		if !x.less(h[p]) {
			break
		}
		h[j] = h[p]
		pos[h[j].slot] = uint32(j)
		j = p
	}
	h[j] = x
	pos[x.slot] = uint32(j)
}

// lessBit is 1 if a orders before b and 0 otherwise, computed as the
// borrow out of the 128-bit subtraction (t, seq) - (t', seq'). Times are
// never negative (At clamps to Now >= 0), so unsigned order is time order.
// Being branch-free matters: random keys make a branchy comparison
// mispredict about half the time, and the comparisons in down were most
// of the engine's cost before this.
func lessBit(a, b *entry) uint64 {
	_, c := bits.Sub64(uint64(a.seq), uint64(b.seq), 0)
	_, c = bits.Sub64(uint64(a.t), uint64(b.t), c)
	return c
}

// down fills the empty position j with x. It walks the hole down to a
// leaf along the smallest children without comparing against x, then
// lets x rise from there (Floyd's bottom-up variant). x is usually a
// former leaf, so it belongs near the bottom and the rise is short; this
// saves one comparison per level, and the descent's only branch is the
// loop bound, which predicts well.
func (e *Engine) down(j int, x entry) {
	h, pos := e.heap, e.pos
	n := len(h)
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
				pos[h[j].slot] = uint32(j)
				j = m // its children lie past n
			}
			break
		}
		// Smallest of four siblings as a branch-free tournament; written
		// out because the inliner will not take it as a function.
		g := (*[4]entry)(h[c : c+4])
		a := lessBit(&g[1], &g[0])      // winner of 0,1 is a
		b := 2 + lessBit(&g[3], &g[2])  // winner of 2,3 is b
		w := -lessBit(&g[b&3], &g[a&1]) // all ones if b beats a
		m := c + int(a^((a^b)&w))
		h[j] = h[m]
		pos[h[j].slot] = uint32(j)
		j = m
	}
	e.up(j, x)
}

// popRoot removes the top entry.
func (e *Engine) popRoot() {
	n := len(e.heap) - 1
	last := e.heap[n]
	e.heap = e.heap[:n]
	if n > root {
		e.down(root, last)
	}
}

// remove deletes the entry at j: the last entry fills the hole and moves
// whichever way restores the order.
func (e *Engine) remove(j int) {
	n := len(e.heap) - 1
	last := e.heap[n]
	e.heap = e.heap[:n]
	if j == n {
		return
	}
	if j > root && last.less(e.heap[j>>2+2]) {
		e.up(j, last)
	} else {
		e.down(j, last)
	}
}

// renumber gives the pending events the sequence numbers 0..n-1 in their
// current order and restarts the counter at n. Relative order among
// pending events is all that ties depend on, so the heap stays valid and
// every tie still breaks in scheduling order. It allocates, but runs once
// per four billion scheduled events.
func (e *Engine) renumber() {
	idx := make([]int, 0, len(e.heap)-root)
	for j := root; j < len(e.heap); j++ {
		idx = append(idx, j)
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(e.heap[a].seq, e.heap[b].seq) })
	for rank, j := range idx {
		e.heap[j].seq = uint32(rank)
	}
	e.seq = uint32(len(idx))
}
