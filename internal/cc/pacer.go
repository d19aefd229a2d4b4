package cc

import "github.com/sdrnet/sdrnet/internal/monotime"

// pacer spaces a controller's packets: each may leave a packet's
// transmit time after the one before, so they go at the controller's
// rate. A packet sent late (the sender was held back, or idle) makes up
// at most a lateness the controller chooses, so an idle sender does not
// come back with a burst. Every rate-paced controller here uses one.
type pacer struct{ next monotime.Time }

// sent times the next departure after a packet sent at now that takes
// tx on the wire at the pacing rate, making up at most late of lateness.
func (p *pacer) sent(now monotime.Time, tx, late monotime.Duration) {
	p.next = max(p.next, now.Add(-late)).Add(tx)
}

// retime moves the next departure by d: a rate change redoing the last
// packet's gap.
func (p *pacer) retime(d monotime.Duration) { p.next = p.next.Add(d) }
