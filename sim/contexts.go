package sim

import "github.com/sdrnet/sdrnet/internal/monotime"

// ContextCache is an RDMA NIC's on-chip cache of connection (QP)
// contexts: a reliable connection needs its context on the NIC for every
// packet it sends or receives, the NIC keeps the most recently used
// Entries of them, and a miss fetches the context from host memory over
// PCIe, stalling that direction of the NIC for Miss (CSA-UD's motivation:
// "the NIC caches only a few thousand QP contexts, and each miss costs a
// PCIe round trip"). Least recently used contexts are evicted first.
//
// A host keys a context by its peer and path: one reliable connection,
// and one QP per path when a connection spreads over several (Meta's QP
// scaling). Zero-allocation once every context has been seen.
type ContextCache struct {
	Entries int               // contexts the NIC holds
	Miss    monotime.Duration // a miss's stall: a PCIe round trip

	Hits, Misses uint64
	Stall        monotime.Duration // summed over misses

	index      map[uint64]int32 // key -> slot
	key        []uint64
	prev, next []int32 // slots in recency order, head most recent
	head, tail int32
}

// NewContextCache returns a cache of entries contexts whose misses cost
// miss each.
func NewContextCache(entries int, miss monotime.Duration) *ContextCache {
	return &ContextCache{Entries: entries, Miss: miss, index: make(map[uint64]int32, entries), head: -1, tail: -1}
}

// Touch uses the context of key and returns the stall it costs: zero on
// a hit, Miss on a miss (which brings it in, evicting the least recently
// used context when the cache is full).
func (c *ContextCache) Touch(key uint64) monotime.Duration {
	if s, ok := c.index[key]; ok {
		c.Hits++
		c.unlink(s)
		c.pushFront(s)
		return 0
	}
	c.Misses++
	c.Stall += c.Miss
	var s int32
	if len(c.key) < c.Entries {
		s = int32(len(c.key))
		c.key, c.prev, c.next = append(c.key, key), append(c.prev, -1), append(c.next, -1)
	} else {
		s = c.tail
		delete(c.index, c.key[s])
		c.unlink(s)
		c.key[s] = key
	}
	c.index[key] = s
	c.pushFront(s)
	return c.Miss
}

// MissRate is misses over uses; zero before any.
func (c *ContextCache) MissRate() float64 {
	if n := c.Hits + c.Misses; n > 0 {
		return float64(c.Misses) / float64(n)
	}
	return 0
}

func (c *ContextCache) unlink(s int32) {
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

func (c *ContextCache) pushFront(s int32) {
	c.prev[s], c.next[s] = -1, c.head
	if c.head >= 0 {
		c.prev[c.head] = s
	}
	c.head = s
	if c.tail < 0 {
		c.tail = s
	}
}

// contextKey names the context a packet between this host and peer on
// path uses.
func contextKey(peer int32, path uint16) uint64 { return uint64(uint32(peer))<<16 | uint64(path) }
