package hostmodel

import "github.com/sdrnet/sdrnet/internal/monotime"

// lru is a set of at most entries keys, evicting the least recently used:
// the bookkeeping of every cache a simulated NIC or host keeps (connection
// contexts, address translations, pinned pages). Each entry carries the
// time its content is ready, so a second use of an entry still being
// fetched waits for the same fetch. Zero-allocation once full.
type lru struct {
	entries    int
	index      map[uint64]int32 // key -> slot
	key        []uint64
	ready      []monotime.Time
	prev, next []int32 // slots in recency order, head most recent
	head, tail int32
}

func newLRU(entries int) lru {
	return lru{entries: entries, index: make(map[uint64]int32, min(entries, 1<<16)), head: -1, tail: -1}
}

// touch uses key and returns its slot and whether it was there. A miss
// brings key in, evicting the least recently used key when full; its
// ready time is for the caller to set.
func (c *lru) touch(key uint64) (slot int32, hit bool) {
	if s, ok := c.index[key]; ok {
		c.unlink(s)
		c.pushFront(s)
		return s, true
	}
	var s int32
	if len(c.key) < c.entries {
		s = int32(len(c.key))
		c.key, c.ready = append(c.key, key), append(c.ready, 0)
		c.prev, c.next = append(c.prev, -1), append(c.next, -1)
	} else {
		s = c.tail
		delete(c.index, c.key[s])
		c.unlink(s)
		c.key[s] = key
	}
	c.index[key] = s
	c.pushFront(s)
	return s, false
}

func (c *lru) unlink(s int32) {
	p, n := c.prev[s], c.next[s]
	if p >= 0 {
		c.next[p] = n
	} else {
		c.head = n
	}
	if n >= 0 {
		c.prev[n] = p
	} else {
		c.tail = p
	}
}

func (c *lru) pushFront(s int32) {
	c.prev[s], c.next[s] = -1, c.head
	if c.head >= 0 {
		c.prev[c.head] = s
	}
	c.head = s
	if c.tail < 0 {
		c.tail = s
	}
}
