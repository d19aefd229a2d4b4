package engine

import (
	"fmt"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// benchPopulations are steady numbers of pending events: a small
// scenario, a k=16 fat-tree's links and queues, and ten times more, where
// the heap no longer fits in cache. htsim's red-black multimap slows as
// this grows; the heap's cost per event should stay nearly flat.
var benchPopulations = []int{1_000, 100_000, 1_000_000}

// inFlight is a packet in flight: every event schedules exactly one new
// event at a random future time drawn from the engine's stream, so the
// population stays at N and the clock keeps moving, and stops the run
// after b.N events.
type inFlight struct {
	left uint64
}

func (p *inFlight) OnEvent(e *Engine, _ uint64) {
	p.left--
	if p.left == 0 {
		e.Stop()
	}
	// Up to 10 us: a few hops of a datacenter path at picosecond grain.
	e.After(monotime.Duration(e.Rand().Uint64N(uint64(10*monotime.Microsecond)))+1, p, 0)
}

func BenchmarkScheduleRun(b *testing.B) {
	for _, n := range benchPopulations {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			e := New(1)
			p := &inFlight{}
			for range n {
				e.After(monotime.Duration(e.Rand().Uint64N(uint64(10*monotime.Microsecond))), p, 0)
			}
			// Warm up: let the heap reach its steady shape (times spread
			// by repeated rescheduling, not by the initial fill).
			p.left = uint64(2 * n)
			e.Run()
			p.left = uint64(b.N)
			b.ReportAllocs()
			b.ResetTimer()
			e.Run()
			b.StopTimer()
			if e.Pending() != n {
				b.Fatalf("population drifted to %d", e.Pending())
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/1e6, "Mevents/s")
		})
	}
}

// nop is a handler for events that are cancelled before they run.
type nop struct{}

func (nop) OnEvent(*Engine, uint64) {}

// BenchmarkCancel measures cancel-and-reschedule of a random pending
// event in a steady population: what a transport does to a retransmission
// timer on every acknowledgement. One op is one Cancel plus one At.
func BenchmarkCancel(b *testing.B) {
	for _, n := range benchPopulations {
		b.Run(fmt.Sprintf("N=%d", n), func(b *testing.B) {
			e := New(1)
			rng := e.Rand()
			window := uint64(10 * monotime.Microsecond)
			ids := make([]EventID, n)
			for i := range ids {
				ids[i] = e.At(monotime.Time(rng.Uint64N(window)), nop{}, 0)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				i := rng.IntN(n)
				if !e.Cancel(ids[i]) {
					b.Fatal("Cancel of a pending event failed")
				}
				ids[i] = e.At(monotime.Time(rng.Uint64N(window)), nop{}, 0)
			}
		})
	}
}
