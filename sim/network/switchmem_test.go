package network

import (
	"math"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/engine"
)

func TestECNMarks(t *testing.T) {
	red := ECN{Min: 100, Max: 300, PMax: 0.5}
	for _, tc := range []struct {
		name  string
		ecn   ECN
		bytes int
		want  float64 // marking probability
	}{
		{"off", ECN{}, 1 << 20, 0},
		{"step below", StepECN(100), 100, 0},
		{"step above", StepECN(100), 101, 1},
		{"red below min", red, 100, 0},
		{"red quarter", red, 150, 0.125},
		{"red half", red, 200, 0.25},
		{"red at max", red, 300, 1},
		{"red above max", red, 1000, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := engine.New(3)
			const draws = 100000
			marked := 0
			for range draws {
				if tc.ecn.marks(tc.bytes, eng) {
					marked++
				}
			}
			got := float64(marked) / draws
			// Four standard deviations of a binomial proportion.
			if tol := 4 * math.Sqrt(tc.want*(1-tc.want)/draws); math.Abs(got-tc.want) > tol {
				t.Errorf("marked %.4f of packets, want %.4f", got, tc.want)
			}
		})
	}
}

// TestSharedBufferDynamicThreshold feeds n ports of one switch at twice
// their rate and checks each port's queue settles where the dynamic
// threshold puts it: q = alpha*(B - n*q), so q = alpha*B/(1 + n*alpha)
// (Choudhury and Hahne), to within a packet. Ports account their
// departures lazily, so a port that took a burst and then nothing still
// counts its bytes until asked: the last case checks that admission looks
// past that stale total before it refuses.
func TestSharedBufferDynamicThreshold(t *testing.T) {
	const (
		size = 256 << 10
		wire = 1000
		rate = 10e9 // a packet per 800 ns
		gap  = 400 * monotime.Nanosecond
	)
	for _, tc := range []struct {
		name  string
		ports int
		alpha float64
		burst int // packets port 0 gets before it falls silent; 0: no burst port
	}{
		{"one port", 1, 1, 0},
		{"two ports", 2, 1, 0},
		{"three ports alpha 2", 3, 2, 0},
		{"two ports alpha half", 2, 0.5, 0},
		{"one port beside a drained burst", 2, 1, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := engine.New(1)
			net := NewNetwork(eng)
			mem := NewSwitchMemory(net, size, tc.alpha)
			var ports []*Egress
			for range tc.ports {
				// A long wire: a port then learns of its departures
				// only when asked, not when its packets arrive.
				e := NewEgress(net, rate, 0, monotime.Millisecond, &sink{net: net})
				mem.Attach(e)
				ports = append(ports, e)
			}
			const packets = 1500
			for i := range packets {
				eng.At(monotime.Time(i)*monotime.Time(gap), engine.HandlerFunc(func(*engine.Engine, uint64) {
					for j, e := range ports {
						if j == 0 && tc.burst > 0 && i >= tc.burst {
							continue
						}
						p := net.NewPacket(nil, nil)
						p.Wire = wire
						e.Receive(p)
					}
				}), 0)
			}
			// used as last accounted overstates what is held; read it
			// without catching up, which would hide staleness.
			var peakUsed int
			eng.OnProgress(64, func(*engine.Engine) { peakUsed = max(peakUsed, mem.used) })
			eng.Run()
			congested := tc.ports
			if tc.burst > 0 {
				congested--
			}
			want := tc.alpha * size / (1 + float64(congested)*tc.alpha)
			for i, e := range ports {
				if i == 0 && tc.burst > 0 {
					continue
				}
				if got := float64(e.Stats.MaxBytes); math.Abs(got-want) > 2*wire {
					t.Errorf("port %d: queue peaked at %.0f bytes, want %.0f", i, got, want)
				}
				if e.Stats.Dropped == 0 || e.Bytes() != 0 {
					t.Errorf("port %d: %d drops, %d bytes left; want drops and an empty port", i, e.Stats.Dropped, e.Bytes())
				}
			}
			if peakUsed > size || mem.Used() != 0 {
				t.Errorf("memory peaked at %d of %d bytes, %d left at the end", peakUsed, size, mem.Used())
			}
		})
	}
}
