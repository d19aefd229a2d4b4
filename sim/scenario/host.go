package scenario

import "github.com/sdrnet/sdrnet/sim/hostmodel"

// hostMemory is the host memory path of a point's hosts (the host.
// section), nil where the point enables none: no GPU-memory translation
// and no pinning give exactly the results of a run without it.
func hostMemory(v *values) *hostmodel.HostMemoryConfig {
	translation := map[string]hostmodel.Translation{"off": hostmodel.TranslateNone, "ats": hostmodel.TranslateATS, "emtt": hostmodel.TranslateEMTT}[v.pt.Values["host.translation"]]
	pinning := map[string]hostmodel.Pinning{"off": hostmodel.PinNone, "all": hostmodel.PinAll, "on_demand": hostmodel.PinOnDemand}[v.pt.Values["host.pinning"]]
	if translation == hostmodel.TranslateNone && pinning == hostmodel.PinNone {
		return nil
	}
	return &hostmodel.HostMemoryConfig{
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
func attachHostMemory(hosts []*hostmodel.Host, cfg *hostmodel.HostMemoryConfig) {
	if cfg == nil {
		return
	}
	for _, h := range hosts {
		h.Memory = hostmodel.NewHostMemory(*cfg)
	}
}

// hostMemoryMetrics fills cell's host memory figures: the container's
// start-up time, the ATC's miss rate, the DMA stall summed over hosts
// and the first-touch pins.
func hostMemoryMetrics(hosts []*hostmodel.Host, cell *Cell) {
	var lookups, misses uint64
	for _, h := range hosts {
		m := h.Memory
		if m == nil {
			continue
		}
		if m.Config().Pinning != hostmodel.PinNone { // bare metal: no container to start
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
