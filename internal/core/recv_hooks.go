package core

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// A receive slot is the reliability.RecvMessage its scheme's hooks act on:
// they read its bitmap and the receiver's measurements, and queue NACKs.

var _ reliability.RecvMessage = (*recvMsg)(nil)

func (m *recvMsg) Packets() uint32 { return m.npkts }
func (m *recvMsg) Present() uint32 { return m.pktCount }
func (m *recvMsg) Highest() uint32 { return m.hi }

func (m *recvMsg) NextMissing(from, to uint32) uint32 { return m.pkts.nextClear(from, to) }

func (m *recvMsg) WholeFrom() uint32 { return m.cumChunk << m.geo.ChunkShift }

func (m *recvMsg) Nack(reason wire.NackReason, from, to uint32) { m.r.queueNack(m, reason, from, to) }

func (m *recvMsg) Fallback() {
	m.r.stats.Fallbacks++
	m.r.queueNack(m, wire.NackFallback, 0, m.npkts)
}

func (m *recvMsg) GapDelay() monotime.Duration  { return m.r.nackDelay(m) }
func (m *recvMsg) RoundTrip() monotime.Duration { return m.r.roundTrip() }
func (m *recvMsg) FirstArrival() monotime.Time  { return m.firstAt }

func (m *recvMsg) PacketTime() monotime.Duration { return m.r.packetTime(m) }

func (m *recvMsg) Injection() monotime.Duration {
	return monotime.Duration(m.r.ec.txPackets(m)-m.firstPos) * m.r.packetTime(m)
}

// Reordered learns from an original packet that arrives after its gap
// was NACKed: reordering, not loss. The window grows to cover how late it
// was, with margin.
func (m *recvMsg) Reordered(now monotime.Time) {
	r := m.r
	r.stats.SpuriousNacks++
	late := r.nackDelay(m) + now.Sub(m.lastNackAt)
	// Capped, as RACK caps its window at SRTT: the largest of half the
	// base round trip (a long haul), the spread queueing adds to round
	// trips (sprayed paths), and half the sender's minimum RTO (a fabric,
	// where the receiver's few samples miss the spread); but never so far
	// that the sender's timer beats the NACK (TestReorderWindowBeatsTimer).
	rtt := r.roundTrip()
	timer := max(m.scheme.RetransmitTimeout(rtt), MinRTO)
	spread := min(r.rtt.Conservative()-rtt, (timer-2*rtt)/2)
	r.reorder = min(max(r.reorder, late+late/2), max(rtt/2, spread, MinRTO/2))
}

// nackDelay is how long a gap in m stands before it is NACKed: the
// scheme's delay, stretched to the reordering the connection has shown.
func (r *receiver) nackDelay(m *recvMsg) monotime.Duration {
	d := m.scheme.NackDelay(r.roundTrip())
	if d == 0 {
		return 0
	}
	return max(d, r.reorder)
}
