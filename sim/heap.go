package sim

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
func (x entry) seq() uint32  { return uint32(x.key >> 32) }

// root is the index of the heap's top entry.
const root = 3

func (x entry) less(y entry) bool {
	return x.t < y.t || (x.t == y.t && x.key < y.key)
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
		pos[h[j].slot()] = uint32(j)
		j = p
	}
	h[j] = x
	pos[x.slot()] = uint32(j)
}

// down fills the empty position j with x. It walks the hole down to a
// leaf along the smallest children without comparing against x, then
// lets x rise from there (Floyd's bottom-up variant). x is usually a
// former leaf, so it belongs near the bottom and the rise is short; this
// saves one comparison per level.
//
// The smallest of four siblings is found without branches: with random
// keys a branchy comparison mispredicts about half the time, and the
// comparisons were most of the engine's cost. The winner's words are
// selected with masks rather than reloaded, which keeps the chain from one
// level's load to the next level's address short.
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
				pos[h[j].slot()] = uint32(j)
				j = m // its children lie past n
			}
			break
		}
		g := (*[4]entry)(h[c : c+4])
		t0, k0 := uint64(g[0].t), g[0].key
		t1, k1 := uint64(g[1].t), g[1].key
		t2, k2 := uint64(g[2].t), g[2].key
		t3, k3 := uint64(g[3].t), g[3].key
		// The borrow out of (t1,k1)-(t0,k0) is 1 iff 1 orders before 0.
		// Times are never negative (At clamps to Now >= 0), so unsigned
		// order is time order.
		_, b := bits.Sub64(k1, k0, 0)
		_, b = bits.Sub64(t1, t0, b)
		mask := -b
		ta, ka, ia := t0^(t0^t1)&mask, k0^(k0^k1)&mask, b
		_, b = bits.Sub64(k3, k2, 0)
		_, b = bits.Sub64(t3, t2, b)
		mask = -b
		tb, kb, ib := t2^(t2^t3)&mask, k2^(k2^k3)&mask, 2+b
		_, b = bits.Sub64(kb, ka, 0)
		_, b = bits.Sub64(tb, ta, b)
		mask = -b
		t, k, i := ta^(ta^tb)&mask, ka^(ka^kb)&mask, ia^(ia^ib)&mask
		h[j] = entry{monotime.Time(t), k}
		pos[uint32(k)] = uint32(j)
		j = c + int(i)
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
