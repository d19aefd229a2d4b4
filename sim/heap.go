package sim

import (
	"cmp"
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
	h := e.heap
	for j > root {
		p := j>>2 + 2
		if !x.less(h[p]) {
			break
		}
		h[j] = h[p]
		e.pos[h[j].slot] = uint32(j)
		j = p
	}
	h[j] = x
	e.pos[x.slot] = uint32(j)
}

// down moves x, destined for the empty position j, towards the leaves
// until no child is smaller, then stores it.
func (e *Engine) down(j int, x entry) {
	h := e.heap
	n := len(h)
	for {
		c := 4*j - 8
		if c >= n {
			break
		}
		// Pick the smallest of up to four children.
		m := c
		if end := min(c+4, n); end == c+4 {
			// Full sibling group: the common case, unrolled so the
			// compiler can drop bounds checks.
			g := h[c : c+4 : c+4]
			k := 0
			if g[1].less(g[k]) {
				k = 1
			}
			if g[2].less(g[k]) {
				k = 2
			}
			if g[3].less(g[k]) {
				k = 3
			}
			m = c + k
		} else {
			for i := c + 1; i < end; i++ {
				if h[i].less(h[m]) {
					m = i
				}
			}
		}
		if !h[m].less(x) {
			break
		}
		h[j] = h[m]
		e.pos[h[j].slot] = uint32(j)
		j = m
	}
	h[j] = x
	e.pos[x.slot] = uint32(j)
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
