package hostmodel

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
	"github.com/sdrnet/sdrnet/sim/network"
)

// HostMemory is the path from a simulated NIC to the memory its packets'
// payloads are read from and written to: Alibaba Stellar's host side.
//
// Every DMA of a DATA packet's payload translates the pages it covers.
// The NIC's memory translation table (MTT) holds one entry per memory
// registration, tagged with the memory's type; it is on the NIC, so a
// lookup costs nothing here. What the tag says decides the rest:
//
//   - Host memory, or GPU memory under Stellar's eMTT (TranslateEMTT):
//     the MTT entry holds the physical address and the DMA goes ahead.
//   - GPU memory under commodity ATS (TranslateATS): the NIC asks its
//     address translation cache (ATC, ATCEntries pages of PageSize). A
//     miss sends a translation request over PCIe to the IOMMU, answered
//     after ATSLatency from its IOTLB (IOTLBEntries pages), or after
//     ATSLatency + WalkLatency when the IOTLB misses too and the IOMMU
//     walks the page table. The DMA engine keeps at most Outstanding
//     translations in flight per direction, so once the buffer a
//     connection streams through outgrows the ATC's reach (entries x
//     page size: an LRU cache swept cyclically misses every page), the
//     direction's throughput is bounded by Outstanding x PageSize per
//     miss latency: misses cost throughput, not only latency.
//
// A virtualized host (PinAll or PinOnDemand) must also have its guest
// memory pinned before a DMA may touch it. PinAll pins every byte of
// GuestMemory before the container starts (StartupTime), at PinPerGiB.
// PinOnDemand is Stellar's PVDMA: the container starts after Boot plus
// pinning what the boot touches, and the first DMA to touch a PinUnit of
// guest memory traps to the hypervisor (Fault), which pins the unit and
// keeps its guest-to-host translation in a map cache of MapCacheEntries
// units (0: unlimited; an evicted unit is unpinned and faults again).
// The hypervisor pins one unit at a time.
//
// A connection's DMAs address one buffer per direction and peer, the
// message's offset in it, reused by every message (perftest reuses one
// buffer alike): the working set is the message size. Control and parity
// packets are not translated (they are small, and parity lands in the
// NIC's scratch memory).
type HostMemory struct {
	cfg HostMemoryConfig

	atc, iotlb, pinned lru
	tx, rx             dmaPipe
	hypervisorFree     monotime.Time

	Stats HostMemoryStats
}

// HostMemoryConfig is every constant of the host memory path. The
// scenario keys under host. name their defaults and sources
// (docs/scenarios.md).
type HostMemoryConfig struct {
	Translation Translation
	// HostBuffers tags the connections' buffers in the MTT as host
	// memory: the MTT holds their physical addresses, so no DMA goes
	// through ATS whatever Translation says. False: GPU memory
	// (GPUDirect RDMA).
	HostBuffers  bool
	PageSize     int // bytes a translation covers
	ATCEntries   int
	IOTLBEntries int
	ATSLatency   monotime.Duration // an ATC miss answered from the IOTLB
	WalkLatency  monotime.Duration // added when the IOTLB misses too
	Outstanding  int               // translations in flight per direction

	Pinning         Pinning
	GuestMemory     int64             // bytes
	PinPerGiB       monotime.Duration // hypervisor time to pin a GiB
	PinUnit         int               // bytes pinned per first-touch fault
	Fault           monotime.Duration // a first touch's trap into the hypervisor
	MapCacheEntries int               // pinned units kept; 0 unlimited
	Boot            monotime.Duration // container start-up without pinning
	BootTouch       int64             // bytes the boot itself touches
}

// Translation is how the NIC translates addresses of GPU memory.
type Translation uint8

// Translations.
const (
	TranslateNone Translation = iota // the MTT holds every address (no GPU memory path)
	TranslateATS                     // commodity ATS: ATC, then the IOMMU
	TranslateEMTT                    // Stellar's eMTT: GPU memory tagged in the MTT skips ATS
)

// Pinning is when a virtualized host pins its guest memory.
type Pinning uint8

// Pinnings.
const (
	PinNone     Pinning = iota // bare metal: memory registration pins
	PinAll                     // every byte of guest memory before start-up
	PinOnDemand                // PVDMA: on the first DMA touch, with a map cache
)

// HostMemoryStats is what a host's memory path did.
type HostMemoryStats struct {
	Translations uint64 // pages looked up by DMAs under ATS
	ATCMisses    uint64
	IOTLBMisses  uint64
	Faults       uint64            // first touches that pinned a unit
	Stall        monotime.Duration // time the next in-order DMA completion waited for a translation or pin
}

// dmaPipe is one direction of the NIC's DMA engine: when each of its
// outstanding translation slots frees up, and when its last DMA
// completed (DMAs complete in order).
type dmaPipe struct {
	slots []monotime.Time
	last  monotime.Time
}

// NewHostMemory returns a memory path with cfg's constants.
func NewHostMemory(cfg HostMemoryConfig) *HostMemory {
	cfg.PageSize, cfg.PinUnit = max(cfg.PageSize, 1), max(cfg.PinUnit, 1)
	cfg.Outstanding = max(cfg.Outstanding, 1)
	units := cfg.MapCacheEntries
	if units <= 0 {
		units = int(min(cfg.GuestMemory/int64(cfg.PinUnit)+1, 1<<40))
	}
	return &HostMemory{cfg: cfg, atc: newLRU(max(cfg.ATCEntries, 1)), iotlb: newLRU(max(cfg.IOTLBEntries, 1)),
		pinned: newLRU(units),
		tx:     dmaPipe{slots: make([]monotime.Time, cfg.Outstanding)},
		rx:     dmaPipe{slots: make([]monotime.Time, cfg.Outstanding)}}
}

// Config returns the constants m runs with.
func (m *HostMemory) Config() HostMemoryConfig { return m.cfg }

// StartupTime is how long the container takes to start: Boot, plus
// pinning all guest memory (PinAll) or what the boot touches
// (PinOnDemand, a fault per unit).
func (m *HostMemory) StartupTime() monotime.Duration {
	c := m.cfg
	switch c.Pinning {
	case PinAll:
		return c.Boot + m.pinTime(c.GuestMemory)
	case PinOnDemand:
		units := (c.BootTouch + int64(c.PinUnit) - 1) / int64(c.PinUnit)
		return c.Boot + m.pinTime(c.BootTouch) + monotime.Duration(units)*c.Fault
	}
	return c.Boot
}

func (m *HostMemory) pinTime(bytes int64) monotime.Duration {
	return monotime.Duration(float64(m.cfg.PinPerGiB) * float64(bytes) / (1 << 30))
}

// read is a DMA read of packet p's payload for sending, write one that
// lands a received payload; each returns when the DMA may complete.
func (m *HostMemory) read(now monotime.Time, p *network.Packet) monotime.Time {
	return m.dmaPacket(now, &m.tx, p, uint64(uint32(p.Dst))<<1)
}

func (m *HostMemory) write(now monotime.Time, p *network.Packet) monotime.Time {
	return m.dmaPacket(now, &m.rx, p, uint64(uint32(p.Src))<<1|1)
}

func (m *HostMemory) dmaPacket(now monotime.Time, pipe *dmaPipe, p *network.Packet, region uint64) monotime.Time {
	if p.Control || len(p.Buf) < wire.CommonLen || wire.Type(p.Buf[1]) != wire.TypeData {
		return now
	}
	d, err := wire.ParseDataSplit(p.Buf, p.Payload)
	if err != nil || len(d.Payload) == 0 {
		return now
	}
	return m.dma(now, pipe, region, int64(d.Packet)*int64(d.MTU), len(d.Payload))
}

// dma translates the n bytes at off of region for one direction of the
// DMA engine and returns when the DMA may complete: after every page's
// translation (and first-touch pin) and after the direction's previous
// DMA.
func (m *HostMemory) dma(now monotime.Time, pipe *dmaPipe, region uint64, off int64, n int) monotime.Time {
	ready := now
	ps := int64(m.cfg.PageSize)
	for pg := off / ps; pg <= (off+int64(n)-1)/ps; pg++ {
		ready = max(ready, m.translate(now, pipe, region, pg))
	}
	// The stall counts the time during which the direction's next
	// completion waits for a translation, overlapping waits once.
	if free := max(now, pipe.last); ready > free {
		m.Stats.Stall += ready.Sub(free)
	}
	ready = max(ready, pipe.last)
	pipe.last = ready
	return ready
}

// translate returns when page pg of region is pinned and its address
// known.
func (m *HostMemory) translate(now monotime.Time, pipe *dmaPipe, region uint64, pg int64) monotime.Time {
	ready := now
	c := &m.cfg
	if c.Pinning == PinOnDemand {
		unit := pg * int64(c.PageSize) / int64(c.PinUnit)
		s, hit := m.pinned.touch(region<<40 | uint64(unit))
		if !hit {
			start := max(now, m.hypervisorFree)
			m.hypervisorFree = start.Add(c.Fault + m.pinTime(int64(c.PinUnit)))
			m.pinned.ready[s] = m.hypervisorFree
			m.Stats.Faults++
		}
		ready = max(ready, m.pinned.ready[s])
	}
	if c.Translation != TranslateATS || c.HostBuffers {
		return ready
	}
	m.Stats.Translations++
	key := region<<40 | uint64(pg)
	s, hit := m.atc.touch(key)
	if !hit {
		m.Stats.ATCMisses++
		lat := c.ATSLatency
		if _, hit := m.iotlb.touch(key); !hit {
			m.Stats.IOTLBMisses++
			lat += c.WalkLatency
		}
		i := 0 // the slot that frees first
		for j, t := range pipe.slots {
			if t < pipe.slots[i] {
				i = j
			}
		}
		done := max(ready, pipe.slots[i]).Add(lat)
		pipe.slots[i] = done
		m.atc.ready[s] = done
	}
	return max(ready, m.atc.ready[s])
}
