package network

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/engine"
)

// Egress is a switch's output port and the wire behind it, simulated with
// one event per packet instead of two (a Queue's departure, then a Link's
// arrival). A FIFO serializing at a constant rate knows a packet's
// departure the moment it is enqueued: the later of now and the previous
// departure, plus the packet's transmission time. So waiting and in-flight
// packets share one list in departure order (which, the delay being
// constant, is arrival order) and only its head has an event: its arrival
// at Next.
//
// What the port shows is what a Queue followed by a Link would: the bytes
// waiting (including the packet being sent) drop-tail at Limit (or at the
// switch's shared memory) and get ECN marks; departures are accounted
// lazily, up to the time of each question. Control packets go ahead of
// waiting data: they are inserted behind the packet being sent (and
// behind control packets already waiting), and the data behind them
// departs later by their transmission time. A packet arriving while the wire is down is lost, so
// a cable cut loses what was in flight on it.
//
// While PFC pauses the port, the packet being sent finishes and data
// waits in held, off the schedule; control packets keep going. On resume
// the held data is scheduled behind whatever is on the wire.
type Egress struct {
	net   *Network
	Rate  float64 // bits per second
	Delay monotime.Duration
	Up    bool
	Next  Node
	buffer

	// list holds the packets waiting and in flight, in departure order;
	// a packet's at is its arrival, so it left the port at at-Delay.
	list fifo
	// sending is the first packet of list not yet departed, nil when the
	// port is idle; ctrlTail the last control packet inserted ahead of
	// data, while it has not departed.
	sending, ctrlTail *Packet
	sendingDep        monotime.Time // when sending departs
	since             monotime.Time
	held              fifo          // data waiting while paused
	pfcMem            *SwitchMemory // the switch's, under PFC
	// cross, when another part owns the wire's far end, is that end:
	// packets leave the list as they depart, not as they arrive.
	cross *Arrival
	pauseState
	Wire LinkStats
}

// NewEgress returns an idle port serializing at rate bits/s onto a wire of
// the given delay toward next.
func NewEgress(n *Network, rate float64, limit int, delay monotime.Duration, next Node) *Egress {
	return &Egress{net: n, Rate: rate, Delay: delay, Up: true, Next: next, buffer: buffer{Limit: limit}}
}

// advance accounts every departure up to now, then the occupancy up to now.
// Most calls find nothing departed: the cached departure of the packet
// being sent answers them without touching the packet (a cache miss,
// once the run's packets outgrow the cache).
func (e *Egress) advance(now monotime.Time) {
	for e.sending != nil && e.sendingDep <= now {
		p, dep := e.sending, e.sendingDep
		e.Stats.ByteTime += float64(e.bytes) * float64(dep-e.since)
		e.since = dep
		e.gave(p.Wire)
		if p.ingress != nil {
			p.ingress.release(p.Wire)
			p.ingress = nil
		}
		if p == e.ctrlTail {
			e.ctrlTail = nil
		}
		e.setSending(p.next)
	}
	e.Stats.ByteTime += float64(e.bytes) * float64(now-e.since)
	e.since = now
}

func (e *Egress) departure(p *Packet) monotime.Time { return p.at.Add(-e.Delay) }

// setSending makes p, which may be nil, the first packet not departed.
func (e *Egress) setSending(p *Packet) {
	e.sending = p
	if p != nil {
		e.sendingDep = e.departure(p)
	}
}

// Bytes returns the bytes waiting now, including the packet being sent.
func (e *Egress) Bytes() int {
	e.advance(e.net.Eng.Now())
	return e.bytes
}

// Receive enqueues p, or drops it if the port's buffer is full.
func (e *Egress) Receive(p *Packet) {
	now := e.net.Eng.Now()
	e.advance(now)
	if !e.admit(p, e.net.Eng) {
		e.net.Free(p)
		return
	}
	switch first := e.first(p); {
	case e.paused && !first:
		p.at = now // waiting counts from here
		e.held.push(p)
	case first && e.sending != nil:
		e.insertControl(p, now, monotime.TransmitTime(p.Wire, e.Rate))
	default:
		p.wait += e.schedule(p, now).Sub(now)
	}
	if e.pfcMem != nil && e.sending != nil {
		e.pfcMem.armCheck(e.sendingDep)
	}
}

// schedule puts p at the end of the list, departing after the list's
// last packet or once serialized from now, and returns when it starts.
func (e *Egress) schedule(p *Packet, now monotime.Time) monotime.Time {
	start := now
	if t := e.list.tail; t != nil {
		start = max(start, e.departure(t))
	}
	p.at = start.Add(monotime.TransmitTime(p.Wire, e.Rate) + e.Delay)
	e.list.push(p)
	if e.sending == nil {
		e.setSending(p)
	}
	if e.list.n == 1 {
		e.net.Eng.At(e.eventAt(p), e, portEvent)
	}
	return start
}

// eventAt is when the port's event for p, the head of its list, runs: its
// arrival, or its departure where the far end is another part's. A crossing
// head is the packet being sent, and nothing goes ahead of that.
func (e *Egress) eventAt(p *Packet) monotime.Time {
	if e.cross != nil {
		return e.departure(p)
	}
	return p.at
}

// insertControl puts control packet p ahead of the data waiting behind the
// packet being sent (and behind earlier control packets), delaying that
// data by tx.
func (e *Egress) insertControl(p *Packet, now monotime.Time, tx monotime.Duration) {
	after := e.sending
	if e.ctrlTail != nil {
		after = e.ctrlTail
	}
	p.wait += e.departure(after).Sub(now)
	p.at = after.at.Add(tx)
	p.next = after.next
	after.next = p
	if e.list.tail == after {
		e.list.tail = p
	}
	e.list.n++
	e.ctrlTail = p
	for q := p.next; q != nil; q = q.next {
		q.at = q.at.Add(tx)
	}
}

// setPaused stops or restarts the port's data.
func (e *Egress) setPaused(on bool) {
	now := e.net.Eng.Now()
	e.advance(now)
	if !e.set(on, e.net.Eng, e) {
		return
	}
	if on {
		e.hold(now)
		return
	}
	for p := e.held.pop(); p != nil; p = e.held.pop() {
		waiting := p.at
		p.wait += e.schedule(p, now).Sub(waiting)
	}
	if e.pfcMem != nil && e.sending != nil {
		e.pfcMem.armCheck(e.sendingDep)
	}
}

// hold takes the packets not yet being sent off the schedule: data to
// held, control packets back on the schedule right behind the packet
// being sent.
func (e *Egress) hold(now monotime.Time) {
	if e.sending == nil {
		return
	}
	rest := e.sending.next
	e.sending.next, e.list.tail, e.ctrlTail = nil, e.sending, nil
	for p := rest; p != nil; {
		next := p.next
		e.list.n--
		// p was to start at planned, and has been charged its wait
		// up to then.
		planned := e.departure(p).Add(-monotime.TransmitTime(p.Wire, e.Rate))
		if e.first(p) {
			p.wait += e.schedule(p, now).Sub(planned)
			e.ctrlTail = p
		} else {
			p.at = planned
			e.held.push(p)
		}
		p = next
	}
}

// OnEvent delivers the packet at the head of the list, which has crossed
// the wire (or, toward another part, has left the port), or trips the PFC
// watchdog.
func (e *Egress) OnEvent(eng *engine.Engine, arg uint64) {
	if arg == watchdogEvent {
		tripWatchdog(e)
		return
	}
	e.advance(eng.Now())
	p := e.list.pop()
	if h := e.list.head; h != nil {
		eng.At(e.eventAt(h), e, portEvent)
	}
	if !e.Up {
		e.Wire.Lost++
		e.net.Free(p)
		return
	}
	e.Wire.Delivered++
	if e.cross != nil {
		eng.Pass(e.cross.part, p.at, e.cross, p)
		return
	}
	e.net.Hops++
	e.Next.Receive(p)
}

// Held is how many packets wait in the port's queue.
func (e *Egress) Held() int { return e.held.n }

// Settle accounts every departure, and the occupancy, up to now, so
// Stats are current.
func (e *Egress) Settle(now monotime.Time) { e.advance(now) }
