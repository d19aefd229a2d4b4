package scenario

import "github.com/sdrnet/sdrnet/sim"

// hostMemory is the host memory path of a point's hosts (the host.
// section), nil where the point enables none: no GPU-memory translation
// and no pinning give exactly the results of a run without it.
func hostMemory(v *values) *sim.HostMemoryConfig {
	translation := map[string]sim.Translation{"off": sim.TranslateNone, "ats": sim.TranslateATS, "emtt": sim.TranslateEMTT}[v.pt.Values["host.translation"]]
	pinning := map[string]sim.Pinning{"off": sim.PinNone, "all": sim.PinAll, "on_demand": sim.PinOnDemand}[v.pt.Values["host.pinning"]]
	if translation == sim.TranslateNone && pinning == sim.PinNone {
		return nil
	}
	return &sim.HostMemoryConfig{
		Translation:     translation,
		HostBuffers:     v.pt.Values["host.memory"] == "host",
		PageSize:        v.int("host.page"),
		ATCEntries:      v.int("host.atc"),
		IOTLBEntries:    v.int("host.iotlb"),
		ATSLatency:      v.duration("host.ats_latency"),
		WalkLatency:     v.duration("host.walk_latency"),
		Outstanding:     v.int("host.outstanding"),
		Pinning:         pinning,
		GuestMemory:     int64(v.int("host.guest_memory")),
		PinPerGiB:       v.duration("host.pin_per_gib"),
		PinUnit:         v.int("host.pin_unit"),
		Fault:           v.duration("host.fault"),
		MapCacheEntries: v.int("host.map_cache"),
		Boot:            v.duration("host.boot"),
		BootTouch:       int64(v.int("host.boot_touch")),
	}
}

// attachHostMemory gives every host its own memory path (cfg nil: none).
func attachHostMemory(hosts []*sim.Host, cfg *sim.HostMemoryConfig) {
	if cfg == nil {
		return
	}
	for _, h := range hosts {
		h.Memory = sim.NewHostMemory(*cfg)
	}
}

// hostMemoryMetrics fills cell's host memory figures: the container's
// start-up time, the ATC's miss rate, the DMA stall summed over hosts
// and the first-touch pins.
func hostMemoryMetrics(hosts []*sim.Host, cell *Cell) {
	var lookups, misses uint64
	for _, h := range hosts {
		m := h.Memory
		if m == nil {
			continue
		}
		if m.Config().Pinning != sim.PinNone { // bare metal: no container to start
			cell.StartupSec = max(cell.StartupSec, m.StartupTime().Seconds())
		}
		lookups, misses = lookups+m.Stats.Translations, misses+m.Stats.ATCMisses
		cell.DMAStallSec += m.Stats.Stall.Seconds()
		cell.PinFaults += m.Stats.Faults
	}
	if lookups > 0 {
		cell.ATCMissRate = float64(misses) / float64(lookups)
	}
}
