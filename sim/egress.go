package sim

import "github.com/sdrnet/sdrnet/internal/monotime"

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
// waiting (including the packet being sent) drop-tail at Limit and mark
// ECN above ECNThreshold; departures are accounted lazily, up to the time
// of each question. Control packets go ahead of waiting data: they are
// inserted behind the packet being sent (and behind control packets
// already waiting), and the data behind them departs later by their
// transmission time. A packet arriving while the wire is down is lost, so
// a cable cut loses what was in flight on it.
type Egress struct {
	net          *Network
	Rate         float64 // bits per second
	Limit        int     // bytes; zero: unlimited
	ECNThreshold int     // bytes; zero: no marking
	Delay        monotime.Duration
	Up           bool
	Next         Node

	list fifo // waiting and in flight, in departure order
	// sending is the first packet of list not yet departed, nil when the
	// port is idle; ctrlTail the last control packet inserted ahead of
	// data, while it has not departed.
	sending, ctrlTail *Packet
	bytes             int
	since             monotime.Time
	Stats             QueueStats
	Wire              LinkStats
}

// NewEgress returns an idle port serializing at rate bits/s onto a wire of
// the given delay toward next.
func NewEgress(n *Network, rate float64, limit int, delay monotime.Duration, next Node) *Egress {
	return &Egress{net: n, Rate: rate, Limit: limit, Delay: delay, Up: true, Next: next}
}

// advance accounts every departure up to now, then the occupancy up to now.
func (e *Egress) advance(now monotime.Time) {
	for p := e.sending; p != nil && p.dep <= now; p = e.sending {
		e.Stats.ByteTime += float64(e.bytes) * float64(p.dep-e.since)
		e.since = p.dep
		e.bytes -= p.Wire
		e.Stats.SentBytes += uint64(p.Wire)
		e.net.Hops++
		if p == e.ctrlTail {
			e.ctrlTail = nil
		}
		e.sending = p.next
	}
	e.Stats.ByteTime += float64(e.bytes) * float64(now-e.since)
	e.since = now
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
	if e.Limit > 0 && e.bytes+p.Wire > e.Limit && !p.Control {
		e.Stats.Dropped++
		e.net.Free(p)
		return
	}
	if e.ECNThreshold > 0 && e.bytes > e.ECNThreshold {
		p.ECN = true
		e.Stats.Marked++
	}
	e.Stats.Enqueued++
	e.bytes += p.Wire
	e.Stats.MaxBytes = max(e.Stats.MaxBytes, e.bytes)
	tx := monotime.TransmitTime(p.Wire, e.Rate)
	if p.Control && e.sending != nil {
		e.insertControl(p, tx)
		return
	}
	start := now
	if t := e.list.tail; t != nil {
		start = max(start, t.dep)
	}
	p.dep = start.Add(tx)
	p.at = p.dep.Add(e.Delay)
	e.list.push(p)
	if e.sending == nil {
		e.sending = p
	}
	if e.list.n == 1 {
		e.net.Eng.At(p.at, e, 0)
	}
}

// insertControl puts control packet p ahead of the data waiting behind the
// packet being sent (and behind earlier control packets), delaying that
// data by tx.
func (e *Egress) insertControl(p *Packet, tx monotime.Duration) {
	after := e.sending
	if e.ctrlTail != nil {
		after = e.ctrlTail
	}
	p.dep = after.dep.Add(tx)
	p.at = p.dep.Add(e.Delay)
	p.next = after.next
	after.next = p
	if e.list.tail == after {
		e.list.tail = p
	}
	e.list.n++
	e.ctrlTail = p
	for q := p.next; q != nil; q = q.next {
		q.dep = q.dep.Add(tx)
		q.at = q.at.Add(tx)
	}
}

// OnEvent delivers the packet at the head of the list, which has crossed
// the wire.
func (e *Egress) OnEvent(eng *Engine, _ uint64) {
	e.advance(eng.Now())
	p := e.list.pop()
	if h := e.list.head; h != nil {
		eng.At(h.at, e, 0)
	}
	if !e.Up {
		e.Wire.Lost++
		e.net.Free(p)
		return
	}
	e.Wire.Delivered++
	e.net.Hops++
	e.Next.Receive(p)
}
