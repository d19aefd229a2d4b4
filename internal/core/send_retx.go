package core

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// The sender's retransmission queue: NACKs (and the schemes' timers, see
// send_timers.go) put ranges of packets on it; poll sends them ahead of new
// data.

// retxRange asks for packets [start, end) of message seq to be resent.
type retxRange struct {
	seq, epoch uint32
	start, end uint32
}

func (s *sender) onNack(now monotime.Time, n *wire.Nack) {
	s.awaiting = 0
	m := s.lookup(n.Msg)
	if m == nil {
		return
	}
	switch n.Reason {
	case wire.NackTooLarge:
		s.fail(m, ErrMessageTooLarge)
		return
	case wire.NackOutOfOrder:
		if n.Len() > 0 {
			s.packetLost(now, m, n.Range(0).Start)
			s.rewind(m, n.Range(0).Start)
		}
		return
	case wire.NackUnknown:
		return
	case wire.NackDecoded: // lost on their paths, but nothing to resend
		for i := range n.Len() {
			r := n.Range(i)
			for p := uint64(r.Start); p < min(uint64(r.Start)+uint64(r.Count), uint64(m.npkts)); p++ {
				s.packetLost(now, m, uint32(p))
				s.noteLost(m, uint32(p))
			}
		}
		return
	}
	unit := uint32(1)
	if n.Unit == wire.UnitChunk {
		unit = 1 << s.c.shift
	}
	for i := range n.Len() {
		r := n.Range(i)
		start := uint64(r.Start) * uint64(unit)
		end := min((uint64(r.Start)+uint64(r.Count))*uint64(unit), uint64(m.high))
		if start < end {
			s.ccLost(now, int64(end-start)*int64(m.geo.MTU), false)
			if unit == 1 {
				for p := start; p < end; p++ {
					s.noteLost(m, uint32(p))
				}
			} else { // a chunk NACK says at least one packet of each chunk
				for c := start; c < end; c += uint64(unit) {
					s.noteLost(m, uint32(c))
				}
			}
			if s.c.mp.sel != nil {
				for p := start; p < end; p++ {
					s.packetLost(now, m, uint32(p))
				}
			}
			s.retx.push(retxRange{seq: m.seq, epoch: m.epoch, start: uint32(start), end: uint32(end)})
		}
	}
}

// rewind makes a go-back-N sender resend everything from packet from on.
func (s *sender) rewind(m *sendMsg, from uint32) {
	if from < m.cum || from >= m.high {
		return
	}
	m.epoch++
	s.retx.push(retxRange{seq: m.seq, epoch: m.epoch, start: from, end: m.high})
}

func (s *sender) pollRetransmit(now monotime.Time, buf []byte) int {
	for s.retx.len() > 0 {
		r := s.retx.peek()
		m := &s.slots[r.seq&s.c.slotMask]
		if !m.used || m.seq != r.seq || m.epoch != r.epoch {
			s.retx.pop()
			continue
		}
		// Skip packets the receiver already has, but never a range's last:
		// if our ACK of a whole chunk was lost, that packet makes the
		// receiver say it again.
		for r.start < r.end {
			if m.acked.test(r.start >> s.c.shift) {
				r.start = (r.start>>s.c.shift + 1) << s.c.shift
			} else if m.delivered.test(r.start) && r.start+1 < r.end {
				r.start++
			} else {
				break
			}
		}
		if r.start >= r.end {
			s.retx.pop()
			continue
		}
		p := r.start
		r.start++
		c := p >> s.c.shift
		m.retx.set(c)
		s.c.mp.path = s.c.pickPathUp(now)
		n := s.encodeData(now, m, p, buf, wire.FlagRetransmit)
		s.stats.RetxPackets++
		s.stats.RetxBytes += uint64(m.geo.PayloadLen(p))
		// A chunk the first pass has not finished gets its timer when the
		// pass finishes it: one armed now would fire again and again while
		// the pass paces its tail out, its resends taking the pace.
		if (r.start >= r.end || r.start&(1<<s.c.shift-1) == 0) && m.high >= min((c+1)<<s.c.shift, m.npkts) {
			s.chunkSent(now, m, c)
		}
		if r.start >= r.end {
			s.retx.pop()
		}
		return n
	}
	return 0
}
