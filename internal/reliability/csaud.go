package reliability

import "github.com/sdrnet/sdrnet/internal/monotime"

// CSAUD is CSA-UD's loss recovery (seed 004, "Communication-Semantic-Aware
// RDMA Loss Recovery for QP-scalable Hyperscale AI Training"): data moves
// on unreliable datagrams sprayed over many paths, the receiver reassembles
// by bitmap, and recovery is decoupled from transmission: the receiver
// detects losses and asks for exactly the missing packets (bitmap-guided
// selective repair), with a loss-detection interval that adapts at run time
// to what it measures and to the collective the message belongs to. The
// sender keeps only a backstop timer.
//
// The paper's abstract states the ideas, not the formulas; these are ours.
// Every constant is a field (zero means its default).
//
// Arrival gaps. For each message the receiver keeps a smoothed gap g
// between first-pass arrivals and its mean deviation d (EWMA weights 1/8
// and 1/4, as RFC 6298 smooths RTTs). A packet sprayed over a slower path
// arrives a few gaps after its neighbours; one that has not come K(g+4d)
// after them is probably lost.
//
// Base interval. I0 = max(clamp(K(g+4d), Floor, RTT/4), R), where R is the
// reordering the connection has shown (the receiver widens it whenever an
// original packet arrives after its gap was NACKed). The RTT/4 cap keeps
// a sender that pauses (window-limited) from stretching the interval past
// a useful repair time.
//
// Collective state. The application says which step of a collective a
// message belongs to and how many receives the step waits for (the core's
// BeginStep, StepRecv). A step is only as fast as its slowest message, so
// the interval shrinks as the step's tail approaches: with r of the step's
// n receives still incomplete, it is scaled by
//
//	s = TailMin + (1 - TailMin) * r/n
//
// and by Waited more when the collective waits on this receiver (every
// other participant is done). A spurious repair in the tail costs a few
// duplicate packets; a late one stalls every GPU of the step.
//
// Loss detection. A gap below the highest packet that has stood for
// I = max(Floor, s*I0) is NACKed, as SR-NACK does with a fixed fraction
// of the RTT. The tail of a message has no later packet to reveal it, so
// a tail timer fires when nothing arrived for T = max(Floor,
// s*(I0 + TailRTT*RTT)) while packets are missing, and NACKs everything
// missing up to the end of the message (the sender ignores packets it has
// not sent yet). An original packet that arrives in order after a tail NACK
// shows the sender had only paused: the connection's reordering window,
// and with it I0 and T, widens as it does after a spurious gap NACK.
// Packets NACKed and still missing are NACKed again after a round trip and
// the time to resend what is missing, as SR-NACK does.
//
// Multipath. CSA-UD sprays each message's packets over many paths; in
// sdrnet the path selector is the connection's (Config.Select; scenarios
// and the CLI pair csaud with oblivious spraying), and the receiver's
// bitmap makes the order packets arrive in irrelevant.
type CSAUD struct {
	chunkTimers
	// K is the gap factor; zero means DefaultCSAK.
	K float64
	// Floor is the shortest interval; zero means one microsecond.
	Floor monotime.Duration
	// TailMin is the interval's scale when a step's last receive is the
	// only one left; zero means DefaultCSATailMin.
	TailMin float64
	// Waited scales the interval when the collective waits on this
	// receiver; zero means DefaultCSAWaited.
	Waited float64
	// TailRTT is the tail timer's slack in RTTs; zero means
	// DefaultCSATailRTT.
	TailRTT float64
	// A is the sender's backstop RTO factor (RTT + A*RTT, as SR); zero
	// means DefaultRTOFactor.
	A float64
}

// CSA-UD's defaults (ours: the paper publishes none).
const (
	DefaultCSAK       = 2
	DefaultCSATailMin = 0.25
	DefaultCSAWaited  = 0.5
	DefaultCSATailRTT = 0.5
)

func init() {
	register(KindCSAUD, registration{name: "csaud", make: func(_, _ int) (Scheme, error) { return CSAUD{}, nil }})
}

// csaRecv is CSA-UD's per-message receive state.
type csaRecv struct {
	lastAt monotime.Time     // the last arrival
	gap    monotime.Duration // smoothed first-pass inter-arrival gap
	dev    monotime.Duration // its mean deviation
	tail   monotime.Duration // the tail interval last computed
	tailAt monotime.Time     // the tail timer; Never when not armed
	// tailNacked: the tail timer NACKed packets beyond the highest seen;
	// an original arriving in order after it shows the NACK was early.
	tailNacked bool
}

func (c *csaRecv) reset() { *c = csaRecv{tailAt: monotime.Never} }

// Kind implements Scheme.
func (CSAUD) Kind() Kind { return KindCSAUD }

// Datagram reports that CSA-UD runs over unreliable datagrams: the NIC
// keeps one QP context for every peer, and the per-peer state is this
// software's (a simulated NIC counts its contexts so).
func (CSAUD) Datagram() bool { return true }

// Code implements Scheme.
func (CSAUD) Code() Codec { return nil }

// Acknowledged implements Scheme.
func (CSAUD) Acknowledged() bool { return true }

// InOrder implements Scheme.
func (CSAUD) InOrder() bool { return false }

// RetransmitTimeout implements Scheme: the sender's timer is a backstop.
func (c CSAUD) RetransmitTimeout(rtt monotime.Duration) monotime.Duration {
	return SelectiveRepeat{A: c.A}.RetransmitTimeout(rtt)
}

// NackDelay implements Scheme: the floor; the receiver's interval is
// adaptive (Interval) and only starts from the reordering the core has
// measured beyond it.
func (c CSAUD) NackDelay(monotime.Duration) monotime.Duration { return c.floor() }

// FallbackTimeout implements Scheme.
func (CSAUD) FallbackTimeout(_, _ monotime.Duration) monotime.Duration { return 0 }

func (c CSAUD) floor() monotime.Duration {
	if c.Floor == 0 {
		return monotime.Microsecond
	}
	return c.Floor
}

func orDefault(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// Interval returns the gap interval I and the tail interval T for a
// message whose smoothed arrival gap is gap (deviation dev), on a
// connection with round trip rtt and reordering window reorder, in a step
// at progress p.
func (c CSAUD) Interval(gap, dev, rtt, reorder monotime.Duration, p StepProgress) (I, T monotime.Duration) {
	floor := c.floor()
	base := monotime.Duration(orDefault(c.K, DefaultCSAK) * float64(gap+4*dev))
	base = max(min(base, rtt/4), floor, reorder)
	scale := 1.0
	if p.Receives > 0 {
		left := float64(p.Receives-min(p.Done, p.Receives)) / float64(p.Receives)
		tailMin := orDefault(c.TailMin, DefaultCSATailMin)
		scale = tailMin + (1-tailMin)*left
		if p.Waiting {
			scale *= orDefault(c.Waited, DefaultCSAWaited)
		}
	}
	tail := base + monotime.Duration(orDefault(c.TailRTT, DefaultCSATailRTT)*float64(rtt))
	return max(floor, monotime.Duration(scale*float64(base))), max(floor, monotime.Duration(scale*float64(tail)))
}

func (c CSAUD) interval(st *RecvState, m RecvMessage) (I, T monotime.Duration) {
	cs := st.csaState()
	return c.Interval(cs.gap, cs.dev, m.RoundTrip(), m.GapDelay(), m.Step())
}

// Started implements ReceiverHooks.
func (c CSAUD) Started(now monotime.Time, st *RecvState, m RecvMessage) {
	cs := st.csaState()
	cs.lastAt = now
	_, cs.tail = c.interval(st, m)
	cs.tailAt = now.Add(cs.tail)
}

// Admit implements ReceiverHooks: any packet, in any order.
func (CSAUD) Admit(monotime.Time, *RecvState, RecvMessage, uint32) Admission { return Admit }

// Arrived implements ReceiverHooks: learn the arrival gap, push the tail
// timer back, and time a gap the packet opens.
func (c CSAUD) Arrived(now monotime.Time, st *RecvState, m RecvMessage, p uint32, retransmit bool) {
	cs := st.csaState()
	if !retransmit {
		sample := now.Sub(cs.lastAt)
		if cs.gap == 0 {
			cs.gap, cs.dev = sample, sample/2
		} else {
			diff := sample - cs.gap
			cs.gap += diff / 8
			cs.dev += (max(diff, -diff) - cs.dev) / 4
		}
	}
	cs.lastAt = now
	cs.tailAt = now.Add(cs.tail)
	if cs.tailNacked && !retransmit && p >= m.Highest() {
		cs.tailNacked = false
		m.Reordered(now) // the sender had not stopped: the tail wait widens
	}
	if st.nack.arrived(now, m, p, retransmit) {
		I, T := c.interval(st, m)
		cs.tail = T
		st.nack.openGap(now.Add(I), p)
	}
}

// RecvTimeout implements ReceiverHooks.
func (c CSAUD) RecvTimeout(now monotime.Time, st *RecvState, m RecvMessage) {
	I, T := c.interval(st, m)
	st.nack.expire(now, m, I)
	cs := st.csaState()
	cs.tail = T
	if cs.tailAt > now {
		return
	}
	if at := cs.lastAt.Add(T); at > now { // the step moved on or the gap grew: measured again
		cs.tailAt = at
		return
	}
	cs.tailAt = monotime.Never // until the next arrival
	if n := m.Packets(); st.nack.nackedTo < n {
		from := max(st.nack.nackedTo, m.WholeFrom())
		if m.NextMissing(from, n) < n {
			m.Nack(st.nack.reason, from, n)
			cs.tailNacked = m.Highest() < n
			st.nack.nacked(now, n)
			if st.nack.renackAt == monotime.Never {
				st.nack.armRenack(now, m)
			}
		}
	}
}
