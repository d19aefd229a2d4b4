package core

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// A send slot is the reliability.SendMessage its scheme's timer hook acts
// on: the hook says what to send again, the core queues it.

var _ reliability.SendMessage = (*sendMsg)(nil)

func (m *sendMsg) Packets() uint32 { return m.npkts }
func (m *sendMsg) Chunks() uint32  { return m.nchunks }
func (m *sendMsg) Cum() uint32     { return m.cum }

// Resend queues [from, to) as far as the first pass has gone: a chunk's
// timer may be armed before the pass has sent all of it (a NACKed packet
// of it was resent), and a tail resent ahead of its first transmission
// let the chunk be acknowledged before the pass counted the tail in
// flight, where it then stayed, shutting a small window for good.
func (m *sendMsg) Resend(from, to uint32) {
	if to = min(to, m.high); from < to {
		m.s.retx.push(retxRange{seq: m.seq, epoch: m.epoch, start: from, end: to})
	}
}

func (m *sendMsg) ResendChunk(c uint32) {
	start := c << m.s.c.shift
	m.Resend(start, start+1<<m.s.c.shift)
}

func (m *sendMsg) ResendUnacked() {
	shift := m.s.c.shift
	for c := m.acked.nextClear(0, m.nchunks); c < m.nchunks; {
		e := m.acked.nextSet(c, m.nchunks)
		m.Resend(c<<shift, e<<shift)
		c = m.acked.nextClear(e, m.nchunks)
	}
}

func (m *sendMsg) Rewind(from uint32) { m.s.rewind(m, from) }

func (m *sendMsg) ArmBackstop(now monotime.Time) { m.s.armBackstop(now, m) }
