package reliability

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// SR-NACK's receiver: a gap in the packets of a message is NACKed once it
// has stood for the gap delay (long enough that reordering would have
// filled it), and what was NACKed and is still missing is NACKed again
// when a retransmission had time to arrive. Erasure coding's fallback
// uses the same re-NACKs.

func init() {
	register(KindSRNACK, registration{name: "sr-nack",
		make: func(_, _ int) (Scheme, error) { return SelectiveRepeat{NACK: true}, nil }})
}

func nackDelay(rtt monotime.Duration, fraction float64) monotime.Duration {
	if fraction == 0 {
		fraction = 1.0 / 8
	}
	return max(monotime.Duration(fraction*float64(rtt)), monotime.Microsecond)
}

// gapNacker is one message's NACK state.
type gapNacker struct {
	gapHi    uint32        // gaps below this are NACKed when gapAt passes
	gapAt    monotime.Time // Never when no gap is pending
	nackedTo uint32        // packets below were NACKed at least once
	nackedAt monotime.Time // when nackedTo last grew
	renackAt monotime.Time // NACK again what is still missing below renackTo
	renackTo uint32        // nackedTo when renackAt was set
	reason   wire.NackReason
}

func (g *gapNacker) reset() {
	*g = gapNacker{gapAt: monotime.Never, renackAt: monotime.Never, reason: wire.NackGap}
}

// arrived runs for each new packet p: an original below what was NACKed
// shows reordering. It reports whether p, beyond the highest packet so
// far, opens a gap that needs a timer (openGap).
func (g *gapNacker) arrived(now monotime.Time, m RecvMessage, p uint32, retransmit bool) bool {
	hi := m.Highest()
	if p < g.nackedTo && p+1 < hi && !retransmit {
		m.Reordered(now)
	}
	return p > hi && g.gapAt == monotime.Never
}

// openGap NACKs the packets missing below p at the time at, if they are
// still missing then.
func (g *gapNacker) openGap(at monotime.Time, p uint32) { g.gapAt, g.gapHi = at, p }

// expire NACKs the gaps whose time has come, and NACKs again what is still
// missing of what was NACKed a re-NACK delay ago. A gap found above the
// one NACKed waits delay.
func (g *gapNacker) expire(now monotime.Time, m RecvMessage, delay monotime.Duration) {
	if g.gapAt <= now { // gaps below gapHi have stood for the gap delay
		m.Nack(wire.NackGap, g.nackedTo, g.gapHi)
		g.nacked(now, g.gapHi)
		g.gapAt = monotime.Never
		if hi := m.Highest(); m.NextMissing(g.gapHi, hi) < hi {
			g.gapAt, g.gapHi = now.Add(delay), hi
		}
		if g.renackAt == monotime.Never {
			g.armRenack(now, m)
		}
	}
	if g.renackAt <= now {
		// Only what has had time to come back: a gap NACKed since the
		// re-NACK was armed is asked for again only if its resend could
		// have arrived (NACKing it earlier has it resent twice), and then
		// it must be, or its loss waits a whole re-NACK delay more.
		first := m.NextMissing(m.WholeFrom(), m.Packets())
		g.renackAt = monotime.Never
		upTo := g.renackTo
		if now.Sub(g.nackedAt) >= g.returnTime(m) {
			upTo = g.nackedTo
		}
		if first < upTo {
			m.Nack(g.reason, first, upTo)
		}
		if first < g.nackedTo {
			// Gaps NACKed since the re-NACK was armed are due a re-NACK
			// delay after their own NACK, not after this one: in a long
			// message NACKs run on for the whole first pass, and waiting
			// a delay from here would add most of a round trip to every
			// lost retransmission among them.
			from := now
			if upTo < g.nackedTo {
				from = g.nackedAt
			}
			g.armRenack(from, m)
		}
	}
}

// armRenack sets the re-NACK of everything NACKed so far for when the
// retransmissions asked for at from have had time to come back, with
// another quarter round trip of slack (1.5 RTT in all, the model's
// re-NACK period).
func (g *gapNacker) armRenack(from monotime.Time, m RecvMessage) {
	g.renackAt = from.Add(g.returnTime(m) + m.RoundTrip()/4)
	g.renackTo = g.nackedTo
}

// returnTime is how long a NACKed packet takes to come back at the
// latest: a round trip, a quarter of one for queueing, and the time to
// send every packet NACKed and missing (retransmissions go ahead of new
// data). Not the whole message's missing packets: those above the
// highest are new data (unless a tail NACK asked for them), and counting
// them put the re-NACK of a lost retransmission early in a message
// behind the sender's timeout.
func (g *gapNacker) returnTime(m RecvMessage) monotime.Duration {
	rtt := m.RoundTrip()
	missing := max(m.Highest(), g.nackedTo) - m.Present()
	return rtt + rtt/4 + monotime.Duration(missing)*m.PacketTime()
}

// nacked records that the packets below to have been NACKed at now.
func (g *gapNacker) nacked(now monotime.Time, to uint32) {
	if to > g.nackedTo {
		g.nackedTo, g.nackedAt = to, now
	}
}
