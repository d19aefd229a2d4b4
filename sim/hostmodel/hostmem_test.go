package hostmodel

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

func testMemory(tr Translation, pin Pinning) HostMemoryConfig {
	return HostMemoryConfig{Translation: tr, PageSize: 4096, ATCEntries: 32, IOTLBEntries: 64,
		ATSLatency: 550 * monotime.Nanosecond, WalkLatency: 330 * monotime.Nanosecond, Outstanding: 4,
		Pinning: pin, GuestMemory: 64 << 30, PinPerGiB: 250 * monotime.Millisecond, PinUnit: 2 << 20,
		Fault: 5 * monotime.Microsecond, Boot: 5 * monotime.Second, BootTouch: 1 << 30}
}

// sweep DMAs a buffer of n pages once, a page at a time at time now, and
// returns when the last DMA completes.
func sweep(m *HostMemory, pipe *dmaPipe, now monotime.Time, pages int) monotime.Time {
	var end monotime.Time
	for pg := range pages {
		end = m.dma(now, pipe, 7, int64(pg)*4096, 4096)
	}
	return end
}

// TestHostMemoryTranslation: under ATS a buffer within the ATC's reach
// misses once per page and then never; one beyond it misses every page
// on every pass (an LRU cache swept in a cycle), and the misses pipeline
// Outstanding at a time, so a pass takes pages / Outstanding miss
// latencies. eMTT translates nothing.
func TestHostMemoryTranslation(t *testing.T) {
	cfg := testMemory(TranslateATS, PinNone)
	m := NewHostMemory(cfg)
	sweep(m, &m.rx, 0, 16)
	before := m.Stats.ATCMisses
	if end := sweep(m, &m.rx, monotime.Time(monotime.Millisecond), 16); end != monotime.Time(monotime.Millisecond) || m.Stats.ATCMisses != before {
		t.Errorf("second pass over 16 pages (within the ATC's 32): %d more misses, ends %v", m.Stats.ATCMisses-before, end)
	}

	m = NewHostMemory(cfg)
	const pages = 1024 // beyond the ATC's and the IOTLB's reach
	sweep(m, &m.rx, 0, pages)
	start := monotime.Time(monotime.Second)
	end := sweep(m, &m.rx, start, pages)
	if m.Stats.ATCMisses != 2*pages || m.Stats.IOTLBMisses != 2*pages {
		t.Errorf("ATC misses %d, IOTLB misses %d over two passes of %d pages: want every page to miss both", m.Stats.ATCMisses, m.Stats.IOTLBMisses, pages)
	}
	want := monotime.Duration(pages/cfg.Outstanding) * (cfg.ATSLatency + cfg.WalkLatency)
	if got := end.Sub(start); got != want {
		t.Errorf("a thrashing pass took %v, want %v (pages / outstanding x miss latency)", got, want)
	}

	m = NewHostMemory(testMemory(TranslateEMTT, PinNone))
	if end := sweep(m, &m.rx, 0, pages); end != 0 || m.Stats.Translations != 0 {
		t.Errorf("eMTT: DMAs end at %v after %d translations, want at once and none", end, m.Stats.Translations)
	}
	cfg.HostBuffers = true // host memory: the MTT maps it, ATS or not
	m = NewHostMemory(cfg)
	if end := sweep(m, &m.rx, 0, pages); end != 0 || m.Stats.Translations != 0 {
		t.Errorf("host memory under ATS: DMAs end at %v after %d translations, want at once and none", end, m.Stats.Translations)
	}
}

// TestHostMemoryPinning: pinning all guest memory costs start-up time in
// proportion to its size; PVDMA starts after the boot and moves the cost
// to the first touch of each unit, once.
func TestHostMemoryPinning(t *testing.T) {
	all := NewHostMemory(testMemory(TranslateNone, PinAll))
	if got, want := all.StartupTime(), 5*monotime.Second+64*250*monotime.Millisecond; got != want {
		t.Errorf("pin-all start-up %v, want %v", got, want)
	}
	if end := sweep(all, &all.tx, 0, 1024); end != 0 {
		t.Errorf("pinned memory: DMAs wait until %v", end)
	}
	lazy := NewHostMemory(testMemory(TranslateNone, PinOnDemand))
	bootPin := 250 * monotime.Millisecond
	if got, want := lazy.StartupTime(), 5*monotime.Second+bootPin+512*5*monotime.Microsecond; got != want {
		t.Errorf("on-demand start-up %v, want %v", got, want)
	}
	const pages = 2048 // 8 MiB: four 2 MiB units
	end := sweep(lazy, &lazy.tx, 0, pages)
	unit := 5*monotime.Microsecond + monotime.Duration(float64(250*monotime.Millisecond)*2/1024)
	if lazy.Stats.Faults != 4 || end.Sub(0) != 4*unit {
		t.Errorf("cold pass: %d faults ending at %v, want 4 ending at %v", lazy.Stats.Faults, end, 4*unit)
	}
	at := monotime.Time(monotime.Second)
	if end := sweep(lazy, &lazy.tx, at, pages); end != at || lazy.Stats.Faults != 4 {
		t.Errorf("warm pass: %d faults in all, ends %v after it began", lazy.Stats.Faults, end.Sub(at))
	}
}

// BenchmarkHostMemoryDMA is the memory path's cost per 4 KiB DMA under
// ATS with a buffer beyond both caches' reach (every page misses both),
// pins on demand: zero allocations once the caches are full.
func BenchmarkHostMemoryDMA(b *testing.B) {
	m := NewHostMemory(testMemory(TranslateATS, PinOnDemand))
	const pages = 4096
	sweep(m, &m.rx, 0, pages)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m.dma(monotime.Time(i), &m.rx, 7, int64(i%pages)*4096, 4096)
	}
}
