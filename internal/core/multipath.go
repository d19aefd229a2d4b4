package core

import (
	"math/bits"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
)

// Multipath: a connection sprays its packets over cfg.Paths paths (UDP
// source ports on a real network, ECMP hash inputs in the simulator),
// choosing each packet's path with a path.Selector that learns from what
// the sender hears back. Every data packet transmission is reported to the
// selector exactly once: acked when the receiver reports the packet (its
// chunk's ACK, or the packet bits an ACK carries for an incomplete
// chunk), lost when the receiver NACKs it, forgotten when it is sent again
// before anything was heard of it (a timeout or a go-back-N rewind: the
// copy may have arrived). Parity and control packets take a path too, but
// are not accounted: nothing acknowledges them individually.

// multipath is a connection's path state; sel is nil for a single path,
// which then costs nothing per packet.
type multipath struct {
	sel      path.Selector
	path     Path // the path of the packet poll just produced
	ctrlTurn Path // the path the next control packet tries first
}

// initPaths forgets the paths: the selector is made when the sender first
// needs it (usePaths), so a connection that only receives never makes one.
func (c *Conn) initPaths() { c.mp = multipath{} }

// usePaths makes the path selector, once. Until then every path is as a
// fresh selector has it, up and unused, which is all that a connection's
// control packets read (ctrlPath). Single needs none: every packet takes
// path 0, whatever its health, so it is kept as a single-path connection
// is, without per-path accounting.
func (c *Conn) usePaths() {
	if c.mp.sel != nil || c.cfg.Paths <= 1 || c.cfg.Select == path.Single {
		return
	}
	// Rotated, not shifted: every bit of a random 64-bit id counts, and an
	// id below 2^32 gives the seed it always did.
	seed := c.cfg.Seed ^ bits.RotateLeft64(c.id, 32) ^ c.peerID
	c.mp.sel, _ = path.NewTuned(c.cfg.Select, c.cfg.Paths, seed, c.cfg.SelectTuning) // arguments checked by Config
}

// pickPath chooses the path of a data packet that is sure to leave. Asked
// on every poll, as it once was, the selector's turn passed on each poll
// that sent nothing or a control packet: round robin over four paths sent
// all of 200 one-packet messages down one of them, and OBS's one packet
// per path per cycle became 45 to 55 of 200 each (TestSelectPerPacket).
func (c *Conn) pickPath(now monotime.Time) Path {
	if c.mp.sel == nil {
		return 0
	}
	return Path(c.mp.sel.Select(now))
}

// ctrlPath chooses a control packet's path without taking the selector's
// turn, which is the data packets': the next up path in turn (every path
// in turn when none is up), or path 0 for Single, whose one path it is.
// It reads health without judging it (no silence check), as control
// packets are not accounted to their path.
func (c *Conn) ctrlPath() Path {
	if c.cfg.Paths <= 1 || c.cfg.Select == path.Single {
		return 0
	}
	t := path.TableOf(c.mp.sel) // nil: not made yet, every path up
	n := Path(c.cfg.Paths)
	for range n {
		i := c.mp.ctrlTurn
		c.mp.ctrlTurn = (c.mp.ctrlTurn + 1) % n
		// With none up, every path in turn: one would take them all,
		// dead or not.
		if t == nil || t.Up(int(i)) || t.UpCount() == 0 {
			return i
		}
	}
	return c.mp.ctrlTurn // not reached: n tries find an up path or none is up
}

// pickPathUp chooses the path of a resend or a parity packet: Select's,
// unless that is a failed path (a probe), then an up one. The receiver is
// waiting for a resend, and a probe can risk fresh data: with a resend
// only now and then, the probe due at each took it, and over 16 paths, one
// dead, the last missing packet of a 16 MiB SR message went down the dead
// path at every RTO until the peer's idle timeout closed the connection
// (TestLossyMemoryNetwork). Nothing acknowledges a parity packet, so a
// probe it took told nothing (TestPathFailure counts both). The failed
// path's probe schedule has moved on all the same, so its next probe comes
// one backoff step later. Single has no selector: its one path is the
// only one it has (RoCE's RC connection, the baseline), resends included
// (TestSingleStaysOnItsPath).
func (c *Conn) pickPathUp(now monotime.Time) Path {
	p := c.pickPath(now)
	t := path.TableOf(c.mp.sel)
	if t == nil || t.Up(int(p)) || t.UpCount() == 0 {
		return p
	}
	return Path(t.PickUp(now))
}

// PathStats returns per-path counters, or nil for a single-path connection.
func (c *Conn) PathStats() []path.Stats {
	c.use()
	c.usePaths()
	t := path.TableOf(c.mp.sel)
	if t == nil {
		return nil
	}
	out := make([]path.Stats, t.Len())
	for i := range out {
		out[i] = t.Stats(i)
	}
	return out
}

// dataSent records that packet p of m leaves on pth.
func (s *sender) dataSent(now monotime.Time, m *sendMsg, p uint32, pth Path, bytes int) {
	sel := s.c.mp.sel
	if sel == nil || m.delivered.test(p) {
		return // a copy the receiver has: its fate tells nothing of its path
	}
	if m.unconfirmed.test(p) { // sent again before anything was heard of it
		sel.OnForgotten(int(m.pathOf[p]))
		m.ambiguous.set(p) // an ACK now may be the earlier copy's doing
	}
	m.pathOf[p] = uint8(pth)
	m.unconfirmed.set(p)
	sel.OnSent(now, int(pth), bytes)
}

// chunkAcked reports the packets of chunk i of m delivered; rtt, if
// positive, is a sample for the path of its last packet.
func (s *sender) chunkAcked(now monotime.Time, m *sendMsg, i uint32, rtt monotime.Duration) {
	sel := s.c.mp.sel
	if sel == nil {
		return
	}
	start := i << s.c.shift
	end := min(start+1<<s.c.shift, m.npkts)
	for p := m.unconfirmed.nextSet(start, end); p < end; p = m.unconfirmed.nextSet(p+1, end) {
		m.unconfirmed.clear(p)
		if m.ambiguous.test(p) {
			sel.OnForgotten(int(m.pathOf[p]))
			continue
		}
		sample := monotime.Duration(0)
		if p == end-1 {
			sample = rtt
		}
		sel.OnAcked(now, int(m.pathOf[p]), m.geo.PayloadLen(p), sample)
	}
}

// cancelUnconfirmed withdraws every packet of m the selector still counts
// as outstanding, when m ends: otherwise an idle path would look silent.
func (s *sender) cancelUnconfirmed(m *sendMsg) {
	sel := s.c.mp.sel
	if sel == nil {
		return
	}
	for p := m.unconfirmed.nextSet(0, m.npkts); p < m.npkts; p = m.unconfirmed.nextSet(p+1, m.npkts) {
		sel.OnCancelled(int(m.pathOf[p]))
		m.unconfirmed.clear(p)
	}
}

// packetLost reports packet p of m lost, as the receiver said.
func (s *sender) packetLost(now monotime.Time, m *sendMsg, p uint32) {
	if sel := s.c.mp.sel; sel != nil && p < m.npkts && m.unconfirmed.test(p) {
		sel.OnLost(now, int(m.pathOf[p]))
		m.unconfirmed.clear(p)
	}
}

// packetsDelivered takes in an ACK's packet bits for chunk c of m, which is
// not whole yet: those packets need no retransmission, and their paths
// delivered them.
func (s *sender) packetsDelivered(now monotime.Time, m *sendMsg, c uint32, bits uint64) {
	if c >= m.nchunks || m.acked.test(c) {
		return
	}
	start := c << s.c.shift
	for ; bits != 0; bits &= bits - 1 {
		p := start + uint32(tz64(bits))
		if p >= m.npkts || m.delivered.test(p) {
			continue
		}
		m.delivered.set(p)
		if s.c.mp.sel != nil && m.unconfirmed.test(p) {
			m.unconfirmed.clear(p)
			if m.ambiguous.test(p) {
				s.c.mp.sel.OnForgotten(int(m.pathOf[p]))
			} else {
				s.c.mp.sel.OnAcked(now, int(m.pathOf[p]), m.geo.PayloadLen(p), 0)
			}
		}
	}
}

func tz64(x uint64) int { return bits.TrailingZeros64(x) }
