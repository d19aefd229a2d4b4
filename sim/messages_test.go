package sim

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/network"
	"github.com/sdrnet/sdrnet/sim/topology"
)

func longHaul(eng *engine.Engine, loss float64, km float64) *topology.Topology {
	return topology.TwoSites(eng, topology.TwoSitesConfig{HostsPerSite: 1, HostRate: 400e9, HostDelay: monotime.Microsecond,
		TrunkRate: 400e9, TrunkDelay: network.DelayForDistance(km),
		TrunkLoss: func() network.LossModel { return network.Bernoulli{P: loss} }})
}

func coreConfig(rtt monotime.Duration) core.Config {
	return core.Config{InitialRTT: rtt, Rate: 400e9}
}

// TestMessagesDelivered runs real bytes through the simulated network with
// every scheme under loss; RunMessages compares every delivered message.
func TestMessagesDelivered(t *testing.T) {
	for _, name := range []string{"sr", "sr-nack", "ec:32,8", "xor:32,8", "gbn", "ec:4,2"} {
		t.Run(name, func(t *testing.T) {
			s, err := reliability.Parse(name)
			if err != nil {
				t.Fatal(err)
			}
			eng := engine.New(7)
			top := longHaul(eng, 0.01, 100)
			res, err := RunMessages(top, 0, 1, MessagesConfig{Size: 3<<20 + 11, Count: 4, Scheme: s, Core: coreConfig(monotime.Millisecond)})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Completions) != 4 {
				t.Fatalf("%d completions, want 4", len(res.Completions))
			}
			if top.Trunk[0].Stats.Lost == 0 {
				t.Fatal("no packet was lost: the test exercised nothing")
			}
		})
	}
}

// TestLosslessCompletion checks a clean long-haul transfer against the
// arithmetic: one-way delay plus serialization of every packet with its
// headers, at both hops (NIC and trunk run at the same rate, so the
// trunk adds only the last packet's time).
func TestLosslessCompletion(t *testing.T) {
	eng := engine.New(1)
	top := longHaul(eng, 0, 3750)
	const size = 16 << 20
	res, err := RunMessages(top, 0, 1, MessagesConfig{Size: size, Count: 1, Scheme: reliability.SelectiveRepeat{},
		Core: coreConfig(37500 * monotime.Microsecond), Virtual: true})
	if err != nil {
		t.Fatal(err)
	}
	pkts := size / 4096
	perPacket := monotime.TransmitTime(4096+wire.MessageLen+network.DefaultOverhead, 400e9)
	want := monotime.Duration(pkts)*perPacket + perPacket + // NIC, then the last packet on the trunk
		perPacket + // and on the access link into the receiver
		network.DelayForDistance(3750) + 2*monotime.Microsecond
	if got := res.Completions[0]; got != want {
		t.Fatalf("completion %v, want %v", got, want)
	}
}

func TestDeterministic(t *testing.T) {
	run := func(seed uint64) MessagesResult {
		eng := engine.New(seed)
		res, err := RunMessages(longHaul(eng, 0.005, 500), 0, 1, MessagesConfig{Size: 2 << 20, Count: 5,
			Scheme: reliability.SelectiveRepeat{NACK: true}, Core: coreConfig(5 * monotime.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, c := run(3), run(3), run(4)
	if a.Stats != b.Stats || len(a.Completions) != len(b.Completions) {
		t.Fatalf("same seed, different runs: %+v vs %+v", a.Stats, b.Stats)
	}
	for i := range a.Completions {
		if a.Completions[i] != b.Completions[i] {
			t.Fatalf("message %d: %v vs %v", i, a.Completions[i], b.Completions[i])
		}
	}
	if a.Stats == c.Stats {
		t.Fatal("different seeds, identical runs")
	}
}

// TestTimerArmedBySending is a regression test: a retransmission sent by
// the NIC arms a new core timer, and if that packet is lost nothing else
// wakes the host. The host must re-arm its timer when it sends, or this
// run (found by the long-haul scenario) stalls at message 999.
func TestTimerArmedBySending(t *testing.T) {
	eng := engine.New(1000003)
	top := topology.TwoSites(eng, topology.TwoSitesConfig{HostsPerSite: 1, HostRate: 400e9, HostDelay: monotime.Microsecond,
		TrunkRate: 400e9, TrunkDelay: 12500 * monotime.Microsecond,
		TrunkLoss: func() network.LossModel { return network.Bernoulli{P: 0.01} }})
	_, err := RunMessages(top, 0, 1, MessagesConfig{Size: 128 << 10, Count: 1000, Scheme: reliability.SelectiveRepeat{},
		Core: core.Config{InitialRTT: 25004 * monotime.Microsecond, Rate: 400e9}, Virtual: true})
	if err != nil {
		t.Fatal(err)
	}
}
