package topology

import (
	"fmt"

	"github.com/sdrnet/sdrnet/sim/engine"
)

// Topology builders for datacenter fabrics. Hosts are numbered rack by
// rack, so hosts i*perRack .. (i+1)*perRack-1 share a top-of-rack switch.

// LeafSpine builds a two-tier Clos: leaves of hostsPerLeaf hosts, each
// leaf cabled to every spine. Its oversubscription is
// hostsPerLeaf*HostRate / (spines*TierRate[0]).
func LeafSpine(eng *engine.Engine, leaves, spines, hostsPerLeaf int, cfg FabricConfig) (*Fabric, error) {
	if leaves < 1 || spines < 1 || hostsPerLeaf < 1 {
		return nil, fmt.Errorf("leaf-spine needs at least one leaf, spine and host per leaf, got %d, %d, %d", leaves, spines, hostsPerLeaf)
	}
	b := newFabricBuilder(eng, leaves*hostsPerLeaf, []int{leaves, spines}, cfg)
	hosts := int32(leaves * hostsPerLeaf)
	leaf := func(i int) int32 { return hosts + int32(i) }
	spine := func(i int) int32 { return hosts + int32(leaves+i) }
	for h := range leaves * hostsPerLeaf {
		b.attach(h, leaf(h/hostsPerLeaf))
	}
	for l := range leaves {
		for s := range spines {
			b.cable(leaf(l), spine(s), cfg.tier(0), 1)
		}
	}
	return b.finish("host", "leaf-spine"), nil
}

// FatTree builds a k-ary fat-tree (k even): k pods of k/2 edge and k/2
// aggregation switches, (k/2)^2 core switches, k^3/4 hosts, full
// bisection bandwidth when every tier runs at the host rate.
func FatTree(eng *engine.Engine, k int, cfg FabricConfig) (*Fabric, error) {
	if k < 2 || k%2 != 0 || k > 64 {
		return nil, fmt.Errorf("fat-tree k must be even, 2..64, got %d", k)
	}
	half := k / 2
	nHosts := k * k * k / 4
	b := newFabricBuilder(eng, nHosts, []int{k * half, k * half, half * half}, cfg)
	hosts := int32(nHosts)
	edge := func(pod, i int) int32 { return hosts + int32(pod*half+i) }
	agg := func(pod, i int) int32 { return hosts + int32(k*half+pod*half+i) }
	core := func(i, j int) int32 { return hosts + int32(k*k+i*half+j) }
	for h := range nHosts {
		b.attach(h, edge(h/(half*half), (h/half)%half))
	}
	for pod := range k {
		for e := range half {
			for a := range half {
				b.cable(edge(pod, e), agg(pod, a), cfg.tier(0), 1)
			}
		}
		for a := range half {
			for j := range half {
				b.cable(agg(pod, a), core(a, j), cfg.tier(1), 2)
			}
		}
	}
	return b.finish("host", "edge-agg", "agg-core"), nil
}

// MetaClos builds Meta's AI zone layout: zones of racks, each rack switch
// (RTSW) cabled to every cluster switch (CTSW, deep buffers) of its zone,
// and every CTSW to every aggregation switch (ATSW) joining the zones.
func MetaClos(eng *engine.Engine, zones, racks, hostsPerRack, ctsw, atsw int, cfg FabricConfig) (*Fabric, error) {
	if zones < 1 || racks < 1 || hostsPerRack < 1 || ctsw < 1 || (zones > 1 && atsw < 1) {
		return nil, fmt.Errorf("meta layout needs zones, racks, hosts, CTSWs >= 1 and ATSWs >= 1 across zones, got %d, %d, %d, %d, %d",
			zones, racks, hostsPerRack, ctsw, atsw)
	}
	nHosts := zones * racks * hostsPerRack
	b := newFabricBuilder(eng, nHosts, []int{zones * racks, zones * ctsw, atsw}, cfg)
	hosts := int32(nHosts)
	rtsw := func(z, r int) int32 { return hosts + int32(z*racks+r) }
	csw := func(z, c int) int32 { return hosts + int32(zones*racks+z*ctsw+c) }
	asw := func(a int) int32 { return hosts + int32(zones*racks+zones*ctsw+a) }
	for h := range nHosts {
		b.attach(h, rtsw(h/(racks*hostsPerRack), (h/hostsPerRack)%racks))
	}
	for z := range zones {
		for r := range racks {
			for c := range ctsw {
				b.cable(rtsw(z, r), csw(z, c), cfg.tier(0), 1)
			}
		}
		if zones > 1 {
			for c := range ctsw {
				for a := range atsw {
					b.cable(csw(z, c), asw(a), cfg.tier(1), 2)
				}
			}
		}
	}
	return b.finish("host", "rtsw-ctsw", "ctsw-atsw"), nil
}
