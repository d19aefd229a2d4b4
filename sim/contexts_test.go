package sim

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/hostmodel"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// TestContextCacheSlowsAllToAll: an all-to-all among 16 hosts gives each
// NIC 15 peers. A cache that holds them all misses once per context and
// costs next to nothing; a cache of 4 thrashes, stalls the NICs and
// slows the collective; no cache gives exactly the run without one.
func TestContextCacheSlowsAllToAll(t *testing.T) {
	run := func(entries int) (monotime.Duration, uint64, uint64, monotime.Duration) {
		eng := engine.New(3)
		f, err := topology.LeafSpine(eng, 4, 2, 4, dcConfig(100e9, topology.EECMP))
		if err != nil {
			t.Fatal(err)
		}
		var caches []*hostmodel.ContextCache
		if entries > 0 {
			for _, h := range f.Hosts {
				h.Contexts = hostmodel.NewContextCache(entries, monotime.Microsecond)
				caches = append(caches, h.Contexts)
			}
		}
		res, err := RunFlows(&f.Topology, AllToAll(hostList(16), 256<<10), flowsCfg(1, path.Single))
		if err != nil {
			t.Fatal(err)
		}
		var hits, misses uint64
		var stall monotime.Duration
		for _, c := range caches {
			hits, misses, stall = hits+c.Hits, misses+c.Misses, stall+c.Stall
		}
		return res.End.Sub(0), hits, misses, stall
	}
	off, _, _, _ := run(0)
	big, bigHits, bigMisses, bigStall := run(64)
	small, smallHits, smallMisses, smallStall := run(4)
	// Every host talks to 15 peers, both ways: 15 contexts a host, each
	// missed once with room for all.
	if bigMisses != 16*15 || bigStall != monotime.Duration(bigMisses)*monotime.Microsecond {
		t.Errorf("room for every context: %d misses (stall %v), want one per host and peer (240)", bigMisses, bigStall)
	}
	if smallMisses < 10*bigMisses || smallStall <= bigStall {
		t.Errorf("4 contexts for 15 peers: %d misses of %d uses, against %d with room for all", smallMisses, smallMisses+smallHits, bigMisses)
	}
	if !(off <= big && big < small) {
		t.Errorf("all-to-all took %v without a cache model, %v with room for all, %v with 4 contexts: want the small cache slowest", off, big, small)
	}
	t.Logf("all-to-all: %v off, %v with 64 contexts (%d misses of %d), %v with 4 (%d misses of %d)",
		off, big, bigMisses, bigMisses+bigHits, small, smallMisses, smallMisses+smallHits)
}

// TestDatagramHosts runs a CSA-UD all-to-all among 16 hosts twice: with
// every host's peers on one datagram endpoint, and with a connection per
// peer. Leasing slots is invisible to the protocol, so both runs end at
// the same picosecond; the datagram hosts end with no slots leased once
// the last ACKs have landed. A flow's two ends are peers of each other,
// so a host has 15 peers it sends to and 15 it receives from.
func TestDatagramHosts(t *testing.T) {
	run := func(datagram bool) (monotime.Duration, []*hostmodel.Host) {
		eng := engine.New(5)
		f, err := topology.LeafSpine(eng, 4, 2, 4, dcConfig(100e9, topology.EECMP))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range f.Hosts {
			h.Datagram = datagram
		}
		cfg := flowsCfg(4, path.Oblivious)
		cfg.Scheme = reliability.CSAUD{}
		res, err := RunFlows(&f.Topology, AllToAll(hostList(16), 256<<10), cfg)
		if err != nil {
			t.Fatal(err)
		}
		// The run ends at the last arrival; let the last ACKs land.
		eng.RunUntil(res.End.Add(10 * monotime.Millisecond))
		return res.End.Sub(0), f.Hosts
	}
	conns, _ := run(false)
	ud, hosts := run(true)
	if ud != conns {
		t.Errorf("all-to-all took %v on datagram endpoints, %v on connections: leasing changed the protocol", ud, conns)
	}
	for _, h := range hosts {
		st, ok := h.DatagramStats()
		if !ok || st.Peers != 30 || st.Leased != 0 || st.Blocks == 0 || st.Blocks > 30 {
			t.Fatalf("host %d: datagram endpoint %v, %+v: want 30 peers (15 each way), none leased", h.ID, ok, st)
		}
	}
	st, _ := hosts[0].DatagramStats()
	t.Logf("all-to-all in %v either way; host 0: %+v", ud, st)
}
