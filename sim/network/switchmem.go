package network

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/engine"
)

// Switch buffers: what an output port admits, marks and counts, and the
// packet memory a switch's ports share.

// ECN marks packets by the bytes waiting when they arrive, RED-style on
// the instantaneous queue as DCQCN's switches do: none up to Min, with a
// probability rising linearly to PMax at Max, every packet above Max.
// Min == Max is a step threshold; Min zero marks nothing.
type ECN struct {
	Min, Max int // bytes
	PMax     float64
}

// StepECN marks every packet that finds more than threshold bytes waiting.
func StepECN(threshold int) ECN { return ECN{Min: threshold, Max: threshold, PMax: 1} }

func (m ECN) marks(bytes int, eng *engine.Engine) bool {
	switch {
	case m.Min <= 0 || bytes <= m.Min:
		return false
	case bytes >= m.Max:
		return true
	}
	return eng.Rand().Float64() < m.PMax*float64(bytes-m.Min)/float64(m.Max-m.Min)
}

// buffer is what Queue and Egress share: the bytes waiting (including the
// packet being sent), drop-tail at Limit or at the switch's shared memory
// with control packets exempt, and ECN marking.
type buffer struct {
	Limit int // bytes; zero: no per-port limit
	ECN   ECN
	// Lossless ports (under PFC) never drop data: the ingress's headroom
	// bounds what they hold.
	Lossless bool
	// ControlInLine puts control packets in line with data: no priority
	// queue, the same drop-tail and the same PFC class.
	ControlInLine bool
	mem           *SwitchMemory // the memory this port shares; nil: none
	bytes         int
	Stats         QueueStats
}

// admit takes p in, marking it if the buffer is above the ECN threshold,
// or counts it dropped and returns false (the caller frees it).
func (b *buffer) admit(p *Packet, eng *engine.Engine) bool {
	if !b.first(p) && !b.Lossless && !b.fits(p.Wire) {
		b.Stats.Dropped++
		return false
	}
	if b.ECN.marks(b.bytes, eng) {
		p.ECN = true
		b.Stats.Marked++
	}
	b.took(p.Wire)
	return true
}

// first reports whether p goes ahead of data: a control packet, unless
// control waits in line.
func (b *buffer) first(p *Packet) bool { return p.Control && !b.ControlInLine }

func (b *buffer) fits(wire int) bool {
	if b.Limit > 0 && b.bytes+wire > b.Limit {
		return false
	}
	return b.mem == nil || b.mem.admits(b.bytes, wire)
}

// took counts wire bytes in.
func (b *buffer) took(wire int) {
	b.Stats.Enqueued++
	b.bytes += wire
	b.Stats.MaxBytes = max(b.Stats.MaxBytes, b.bytes)
	if b.mem != nil {
		b.mem.used += wire
	}
}

// gave counts wire bytes out.
func (b *buffer) gave(wire int) {
	b.bytes -= wire
	b.Stats.SentBytes += uint64(wire)
	if b.mem != nil {
		b.mem.used -= wire
	}
}

// SwitchMemory is one switch's packet memory. With a Size its output
// ports share it under a dynamic threshold (Choudhury and Hahne): a port
// may take a data packet while its queue is shorter than Alpha times the
// memory still free, so one congested port cannot take all of it, yet a
// lone busy port may use most of an idle switch. With PFC it also holds
// the switch's ingress accounting (see pfc.go).
type SwitchMemory struct {
	Size  int // bytes; zero: the ports do not share a limit
	Alpha float64
	net   *Network
	ports []*Egress
	// used sums the ports' bytes as last accounted. Ports account their
	// departures lazily, so used can only overstate the memory held: a
	// packet it admits fits; one it would refuse is looked at again after
	// every port has caught up.
	used int
	pfc  *pfcState
}

// NewSwitchMemory returns a switch's memory of size bytes (zero: no
// shared limit) with dynamic threshold alpha.
func NewSwitchMemory(n *Network, size int, alpha float64) *SwitchMemory {
	return &SwitchMemory{Size: size, Alpha: alpha, net: n}
}

// Attach makes e one of the switch's output ports. Enable PFC first.
func (m *SwitchMemory) Attach(e *Egress) {
	// Ports touch the memory per packet only where it is shared or
	// under PFC: elsewhere it would cost a cache miss for nothing.
	if m.Size > 0 {
		e.mem = m
	}
	if m.pfc != nil {
		e.pfcMem = m
	}
	m.ports = append(m.ports, e)
}

// Used returns the bytes the switch holds now.
func (m *SwitchMemory) Used() int {
	m.catchUp()
	return m.used
}

func (m *SwitchMemory) admits(queue, wire int) bool {
	if m.fits(queue, wire) {
		return true
	}
	m.catchUp()
	return m.fits(queue, wire)
}

func (m *SwitchMemory) fits(queue, wire int) bool {
	free := m.Size - m.used
	return wire <= free && float64(queue) < m.Alpha*float64(free)
}

// catchUp accounts every port's departures up to now.
func (m *SwitchMemory) catchUp() {
	now := m.net.Eng.Now()
	for _, e := range m.ports {
		e.advance(now)
	}
}

// nextDeparture returns the earliest time one of the ports will finish
// sending a packet, or Never.
func (m *SwitchMemory) nextDeparture() monotime.Time {
	next := monotime.Never
	for _, e := range m.ports {
		if e.sending != nil {
			next = min(next, e.sendingDep)
		}
	}
	return next
}
