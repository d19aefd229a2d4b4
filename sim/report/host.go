package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/sdrnet/sdrnet/internal/units"
	"github.com/sdrnet/sdrnet/sim/scenario"
)

// Stellar's host-side figures (SIGCOMM 2025; REFERENCES.md): GPUDirect
// write throughput on a 200 Gbit/s NIC under commodity ATS, from small
// to large messages; and a secure container's start-up with all 1.6 TB
// of its memory pinned at boot, and how much faster PVDMA starts.
var (
	paperATS          = []float64{190, 170, 150} // Gbit/s
	paperPinAll       = 390.0                    // seconds, 1.6 TB
	paperPVDMASpeedup = 15.0                     // up to
	paperPVDMAStartup = 20.0                     // seconds, under, even with huge memory
)

// hostView is the report's section on the host memory path, Stellar's
// figures beside ours: throughput against message size under ATS and
// eMTT (Translation), and start-up against guest memory under pin-all
// and PVDMA (Pinning). Either part is nil where the grid does not
// compare it.
type hostView struct {
	Translation *translationPart
	Pinning     *pinningPart
}

type translationPart struct {
	Paper, Ours, Knee string
	Table             table
}

type pinningPart struct {
	Paper, Ours, Cold string
	Table             table
}

func host(cells []scenario.Cell) *hostView {
	v := &hostView{Translation: translationOf(cells), Pinning: pinningOf(cells)}
	if v.Translation == nil && v.Pinning == nil {
		return nil
	}
	return v
}

// pair is the cells of one setting of the other parameters with the two
// variants of a compared parameter.
type pair struct {
	x    float64 // the setting's value of the axis parameter
	a, b *scenario.Cell
}

// pairs matches the cells with param=a to those with param=b that share
// every other parameter, ordered by axis (a numeric parameter).
func pairs(cells []scenario.Cell, param, a, b, axis string) []pair {
	key := func(c *scenario.Cell) string {
		var parts []string
		for k, val := range c.Params {
			if k != param {
				parts = append(parts, k+"="+val)
			}
		}
		slices.Sort(parts)
		return strings.Join(parts, " ")
	}
	byKey := map[string]*pair{}
	var out []*pair
	for i := range cells {
		c := &cells[i]
		if c.Params[param] != a && c.Params[param] != b {
			continue
		}
		k := key(c)
		p := byKey[k]
		if p == nil {
			x, _, _ := scenario.Number(axis, c.Params[axis])
			p = &pair{x: x}
			byKey[k] = p
			out = append(out, p)
		}
		if c.Params[param] == a {
			p.a = c
		} else {
			p.b = c
		}
	}
	var done []pair
	for _, p := range out {
		if p.a != nil && p.b != nil {
			done = append(done, *p)
		}
	}
	slices.SortStableFunc(done, func(p, q pair) int { return cmp.Compare(p.x, q.x) })
	return done
}

func translationOf(cells []scenario.Cell) *translationPart {
	ps := pairs(cells, "host.translation", "ats", "emtt", "workload.size")
	if len(ps) < 2 {
		return nil
	}
	gb := func(c *scenario.Cell) string { return fmt.Sprintf("%.1f", c.GoodputBps/1e9) }
	part := &translationPart{Paper: fmt.Sprintf("Stellar: on a 200 Gbit/s NIC, GPUDirect RDMA write throughput under commodity ATS falls from about %g to %g to about %g Gbit/s as messages grow (ATC and IOTLB thrashing); with eMTT it stays flat.",
		paperATS[0], paperATS[1], paperATS[2])}
	first, last := ps[0], ps[len(ps)-1]
	part.Ours = fmt.Sprintf("Ours: under ATS from %s Gbit/s at %s to %s Gbit/s at %s; under eMTT from %s to %s Gbit/s.",
		gb(first.a), units.FormatSize(int64(first.x)), gb(last.a), units.FormatSize(int64(last.x)), gb(first.b), gb(last.b))
	ats, emtt := pairCells(ps, true), pairCells(ps, false)
	part.Knee = knees(ps)
	part.Table = newTable(len(ps),
		textColumn(ats, "message size", func(c scenario.Cell) string { return c.Params["workload.size"] }),
		numberColumn(ats, "ATS goodput", gbps, always(func(c scenario.Cell) float64 { return c.GoodputBps })),
		numberColumn(emtt, "eMTT goodput", gbps, always(func(c scenario.Cell) float64 { return c.GoodputBps })),
		numberColumn(ats, "ATS: ATC misses", percent, always(func(c scenario.Cell) float64 { return c.ATCMissRate })),
		numberColumn(ats, "ATS: DMA stall", timeUnit, always(func(c scenario.Cell) float64 { return c.DMAStallSec })),
	)
	return part
}

// knees says where the ATS curve falls and why: at each cache's reach
// (entries x page) that the message sizes bracket, whether throughput
// fell there, against the bound that thrashing sets, outstanding pages
// per miss latency (an independent calculation from the constants).
func knees(ps []pair) string {
	c := ps[0].a.Params
	num := func(k string) float64 { x, _, _ := scenario.Number(k, c[k]); return x }
	page, out := num("host.page"), num("host.outstanding")
	ats, walk := num("host.ats_latency"), num("host.walk_latency")
	gb := func(v float64) string { return fmt.Sprintf("%.1f Gbit/s", v/1e9) }
	var says []string
	for _, cache := range []struct {
		name, key string
		latency   float64
	}{{"the NIC's ATC", "host.atc", ats}, {"the IOMMU's IOTLB", "host.iotlb", ats + walk}} {
		n := num(cache.key)
		reach := n * page
		i := slices.IndexFunc(ps, func(p pair) bool { return p.x > reach })
		if i <= 0 {
			continue
		}
		lo, hi := ps[i-1], ps[i]
		bound := out * page * 8 / cache.latency
		what := fmt.Sprintf("A buffer outgrows %s (%g x %s = %s of reach) between %s and %s",
			cache.name, n, units.FormatSize(int64(page)), units.FormatSize(int64(reach)), units.FormatSize(int64(lo.x)), units.FormatSize(int64(hi.x)))
		limit := fmt.Sprintf("%g outstanding x %s per %s = %s", out, units.FormatSize(int64(page)), seconds(cache.latency), gb(bound))
		if hi.a.GoodputBps < 0.98*lo.a.GoodputBps {
			says = append(says, fmt.Sprintf("%s: ATS falls there from %s to %s, against the bound thrashing sets, %s.",
				what, gb(lo.a.GoodputBps), gb(hi.a.GoodputBps), limit))
		} else {
			says = append(says, fmt.Sprintf("%s: ATC misses rise to %.0f%% there but cost no throughput, the bound they set (%s) being above what the link delivers.",
				what, 100*hi.a.ATCMissRate, limit))
		}
	}
	if len(says) == 0 {
		return "The message sizes do not bracket either cache's reach (entries x page), so the curve has no knee."
	}
	return strings.Join(says, " ")
}

// pairCells is the a (first) or b cells of ps.
func pairCells(ps []pair, first bool) []scenario.Cell {
	out := make([]scenario.Cell, len(ps))
	for i, p := range ps {
		if first {
			out[i] = *p.a
		} else {
			out[i] = *p.b
		}
	}
	return out
}

func pinningOf(cells []scenario.Cell) *pinningPart {
	ps := pairs(cells, "host.pinning", "all", "on_demand", "host.guest_memory")
	if len(ps) == 0 {
		return nil
	}
	part := &pinningPart{Paper: fmt.Sprintf("Stellar: pinning all guest memory at boot makes a secure container with 1.6 TB take up to %g s to start; PVDMA, pinning on first touch with a map cache, starts up to %gx faster, under %g s even with very large memory.",
		paperPinAll, paperPVDMASpeedup, paperPVDMAStartup)}
	last := ps[len(ps)-1]
	lo, hi := last.b.StartupSec, last.b.StartupSec
	for _, p := range ps {
		lo, hi = min(lo, p.b.StartupSec), max(hi, p.b.StartupSec)
	}
	spread := "stays at " + seconds(lo)
	if hi > lo {
		spread = "ranges from " + seconds(lo) + " to " + seconds(hi)
	}
	part.Ours = fmt.Sprintf("Ours: with %s of guest memory, pin-all starts in %s and PVDMA in %s, %s faster; from %s to %s of memory PVDMA's start-up %s.",
		last.a.Params["host.guest_memory"], seconds(last.a.StartupSec), seconds(last.b.StartupSec), times(last.a.StartupSec/last.b.StartupSec),
		ps[0].a.Params["host.guest_memory"], last.a.Params["host.guest_memory"], spread)
	if l := last.b; l.ColdGoodputBps > 0 {
		part.Cold = fmt.Sprintf("Where the cost moves: under PVDMA the first pass over cold memory (the first %s message) ran at %.1f Gbit/s with %d first-touch pins, the warm passes at %.1f Gbit/s; with all memory pinned, %.1f and %.1f Gbit/s.",
			l.Params["workload.size"], l.ColdGoodputBps/1e9, l.PinFaults, l.WarmGoodputBps/1e9, last.a.ColdGoodputBps/1e9, last.a.WarmGoodputBps/1e9)
	}
	all, lazy := pairCells(ps, true), pairCells(ps, false)
	part.Table = newTable(len(ps),
		textColumn(all, "guest memory", func(c scenario.Cell) string { return c.Params["host.guest_memory"] }),
		numberColumn(all, "pin-all start-up", timeUnit, always(func(c scenario.Cell) float64 { return c.StartupSec })),
		numberColumn(lazy, "PVDMA start-up", timeUnit, always(func(c scenario.Cell) float64 { return c.StartupSec })),
		numberColumn(lazy, "PVDMA cold pass", gbps, always(func(c scenario.Cell) float64 { return c.ColdGoodputBps })),
		numberColumn(lazy, "PVDMA warm", gbps, always(func(c scenario.Cell) float64 { return c.WarmGoodputBps })),
	)
	return part
}
