package hostmodel

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
// scaling); a host whose transport rides unreliable datagrams (CSA-UD)
// uses one context for all. Zero-allocation once every context has been seen.
type ContextCache struct {
	Entries int               // contexts the NIC holds
	Miss    monotime.Duration // a miss's stall: a PCIe round trip

	Hits, Misses uint64
	Stall        monotime.Duration // summed over misses

	cache lru
}

// NewContextCache returns a cache of entries contexts whose misses cost
// miss each.
func NewContextCache(entries int, miss monotime.Duration) *ContextCache {
	return &ContextCache{Entries: entries, Miss: miss, cache: newLRU(entries)}
}

// Touch uses the context of key and returns the stall it costs: zero on
// a hit, Miss on a miss (which brings it in, evicting the least recently
// used context when the cache is full).
func (c *ContextCache) Touch(key uint64) monotime.Duration {
	if _, hit := c.cache.touch(key); hit {
		c.Hits++
		return 0
	}
	c.Misses++
	c.Stall += c.Miss
	return c.Miss
}

// MissRate is misses over uses; zero before any.
func (c *ContextCache) MissRate() float64 {
	if n := c.Hits + c.Misses; n > 0 {
		return float64(c.Misses) / float64(n)
	}
	return 0
}

// contextKey names the context a packet between this host and peer on
// path uses: the connection's, or the host's one datagram QP.
func (h *Host) contextKey(peer int32, path uint16) uint64 {
	if h.Datagram {
		return 1 << 48 // no peer's key: peers fit in 32 bits, paths in 16
	}
	return uint64(uint32(peer))<<16 | uint64(path)
}
