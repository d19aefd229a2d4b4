package topology

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/network"
)

// QueueSampler records the depth of every switch port's queue at a fixed
// interval, grouped by tier, so a run reports how deep and how steady the
// queues were over time and not only their peaks: Stellar's claim for
// spraying is about the distribution, not the maximum. NIC queues are left
// out; they hold what the host has not yet paced out, not congestion.
// Samples go into a histogram per tier, and the tier's deepest port at
// each instant into a series of at most SeriesBins bins: constant memory,
// however long the run.
//
// The sampler reschedules itself for as long as the engine runs, so it
// suits runs that end by Stop or RunUntil (as RunFlows does).
//
// A fabric in parts has a sampler per part, each sampling its own ports
// at the same instants on its own engine; their samples merge when asked.
type QueueSampler struct {
	every  monotime.Duration
	ports  []*Port
	tiers  []network.Histogram // bytes
	series []series            // per tier
	deep   []int64             // per tier, the deepest port of this sample
	parts  []*QueueSampler
}

// SeriesBins bounds a tier's queue-depth series.
const SeriesBins = 256

// series is a tier's deepest queue over time: bin i holds the largest of
// samples i*span .. (i+1)*span-1. When the bins are full, neighbours merge
// and span doubles.
type series struct {
	span, n int // samples per bin; samples in the last bin
	max     []int64
}

func (s *series) add(v int64) {
	if len(s.max) == 0 || s.n == s.span {
		if len(s.max) == SeriesBins {
			for i := range SeriesBins / 2 {
				s.max[i] = max(s.max[2*i], s.max[2*i+1])
			}
			s.max = s.max[:SeriesBins/2]
			s.span *= 2
		}
		s.max = append(s.max, 0)
		s.n = 0
	}
	s.max[len(s.max)-1] = max(s.max[len(s.max)-1], v)
	s.n++
}

// SampleQueues starts sampling f's switch ports every interval from now:
// on eng, or where f runs in parts, on each part's engine.
func SampleQueues(eng *engine.Engine, f *Fabric, every monotime.Duration) *QueueSampler {
	s := newQueueSampler(f, every)
	samplers, engines := []*QueueSampler{s}, []*engine.Engine{eng}
	if g := f.Group; g != nil {
		engines = engines[:0]
		for i := range g.Parts() {
			s.parts = append(s.parts, newQueueSampler(f, every))
			engines = append(engines, g.Part(i))
		}
		samplers = s.parts
	}
	for i, p := range f.Ports {
		if int(p.From) >= len(f.Hosts) && p.Tier < len(f.Tiers) {
			sub := samplers[0]
			if f.Group != nil {
				sub = samplers[f.portPart[i]]
			}
			sub.ports = append(sub.ports, p)
		}
	}
	for i, sub := range samplers {
		engines[i].After(sub.every, sub, 0)
	}
	return s
}

func newQueueSampler(f *Fabric, every monotime.Duration) *QueueSampler {
	s := &QueueSampler{every: max(every, monotime.Nanosecond), tiers: make([]network.Histogram, len(f.Tiers)),
		series: make([]series, len(f.Tiers)), deep: make([]int64, len(f.Tiers))}
	for i := range s.series {
		s.series[i].span = 1
	}
	return s
}

// gather merges the parts' samples, after a run in parts: every part
// sampled the same instants, so their series have the same bins.
func (s *QueueSampler) gather() {
	if len(s.parts) == 0 {
		return
	}
	for i := range s.tiers {
		s.tiers[i] = network.Histogram{}
		s.series[i] = s.parts[0].series[i]
		s.series[i].max = nil
		for _, sub := range s.parts {
			s.tiers[i].Merge(&sub.tiers[i])
			bins := sub.series[i].max
			if s.series[i].max == nil {
				s.series[i].max = make([]int64, len(bins))
			}
			for k := range min(len(bins), len(s.series[i].max)) {
				s.series[i].max[k] = max(s.series[i].max[k], bins[k])
			}
		}
	}
}

// OnEvent takes one sample of every port.
func (s *QueueSampler) OnEvent(e *engine.Engine, _ uint64) {
	clear(s.deep)
	for _, p := range s.ports {
		b := int64(p.E.Bytes())
		s.tiers[p.Tier].Add(b)
		s.deep[p.Tier] = max(s.deep[p.Tier], b)
	}
	for i, d := range s.deep {
		s.series[i].add(d)
	}
	e.After(s.every, s, 0)
}

// Tier returns the samples of tier i's ports (every port at every
// sampling instant); nil for a tier out of range.
func (s *QueueSampler) Tier(i int) *network.Histogram {
	if i < 0 || i >= len(s.tiers) {
		return nil
	}
	s.gather()
	return &s.tiers[i]
}

// Series returns tier i's deepest port over time: bin k holds the largest
// queue any of the tier's ports had at the samples taken during
// [k*width, (k+1)*width) from the start; nil for a tier out of range.
func (s *QueueSampler) Series(i int) (deepest []int64, width monotime.Duration) {
	if i < 0 || i >= len(s.series) {
		return nil, 0
	}
	s.gather()
	return s.series[i].max, s.every * monotime.Duration(s.series[i].span)
}
