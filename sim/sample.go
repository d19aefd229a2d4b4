package sim

import "github.com/sdrnet/sdrnet/internal/monotime"

// QueueSampler records the depth of every switch port's queue at a fixed
// interval, grouped by tier, so a run reports how deep and how steady the
// queues were over time and not only their peaks: Stellar's claim for
// spraying is about the distribution, not the maximum. NIC queues are left
// out; they hold what the host has not yet paced out, not congestion.
// Samples go into a histogram per tier: constant memory, however long
// the run.
//
// The sampler reschedules itself for as long as the engine runs, so it
// suits runs that end by Stop or RunUntil (as RunFlows does).
type QueueSampler struct {
	every monotime.Duration
	ports []*Port
	tiers []Histogram // bytes
}

// SampleQueues starts sampling f's switch ports every interval from now.
func SampleQueues(eng *Engine, f *Fabric, every monotime.Duration) *QueueSampler {
	s := &QueueSampler{every: max(every, monotime.Nanosecond), tiers: make([]Histogram, len(f.Tiers))}
	for _, p := range f.Ports {
		if int(p.From) >= len(f.Hosts) && p.Tier < len(f.Tiers) {
			s.ports = append(s.ports, p)
		}
	}
	eng.After(s.every, s, 0)
	return s
}

// OnEvent takes one sample of every port.
func (s *QueueSampler) OnEvent(e *Engine, _ uint64) {
	for _, p := range s.ports {
		s.tiers[p.Tier].Add(int64(p.E.Bytes()))
	}
	e.After(s.every, s, 0)
}

// Tier returns the samples of tier i's ports (every port at every
// sampling instant); nil for a tier out of range.
func (s *QueueSampler) Tier(i int) *Histogram {
	if i < 0 || i >= len(s.tiers) {
		return nil
	}
	return &s.tiers[i]
}
