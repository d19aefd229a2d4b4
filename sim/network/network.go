package network

import (
	"github.com/sdrnet/sdrnet/internal/lossmodel"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/engine"
)

// Packet is a datagram crossing the simulated network. It carries the real
// bytes the sending core produced, so the receiving core decodes exactly
// what a socket would hand it; a DATA packet's payload stays a reference
// to the sender's message, as an RDMA NIC reads it at the last moment.
// Packets are pooled per network.
type Packet struct {
	Buf      []byte // the datagram, or its header when Payload is set
	Payload  []byte // DATA payload, by reference
	Wire     int    // bytes on the wire: the datagram plus per-packet overhead
	Src, Dst int32  // host indices
	Entropy  uint16 // path entropy: the UDP source port on a real network
	Path     uint16 // the sending core's path index (Entropy less the connection's base)
	Control  bool   // ACK, NACK, CTS or CLOSE: may be queued ahead of data
	ECN      bool   // congestion experienced
	next     *Packet
	at       monotime.Time // when it leaves the link it is on
	ingress  *Ingress      // under PFC: where it entered the switch holding it
	// wait sums the time a control packet waited in switch queues before
	// being sent. (Data packets gather theirs too, less the shifts control
	// packets inserted ahead of them cause: not worth the walk, as no
	// figure uses it.)
	wait monotime.Duration
	// hdr holds headers that fit (DATA, PARITY, most control packets), so
	// a packet is one object in one cache neighbourhood, not two.
	hdr [48]byte
}

// Waited is the time a control packet waited in switch queues.
func (p *Packet) Waited() monotime.Duration { return p.wait }

// Node receives packets: a queue, a link, a switch or a host.
type Node interface {
	Receive(p *Packet)
}

// Network owns the packet pool and the counters every component shares.
type Network struct {
	Eng      *engine.Engine
	free     []*Packet
	scratch  []byte
	Overhead int // bytes added to every datagram on the wire (Ethernet+IP+UDP)
	// Hops counts packets that crossed a link, once each, as they reach
	// the far end (a Link, or an egress port's wire).
	Hops uint64
	// ControlWait is, per control packet that reached its host, the time
	// it waited in switch queues along the way.
	ControlWait Histogram
}

// DefaultOverhead is Ethernet (14 + 4 FCS + 20 preamble and gap), IPv4 (20)
// and UDP (8) around every datagram.
const DefaultOverhead = 66

// NewNetwork returns an empty network driven by eng.
func NewNetwork(eng *engine.Engine) *Network { return &Network{Eng: eng, Overhead: DefaultOverhead} }

// Pooled is how many packets wait in the pool: after a run, every
// packet it made.
func (n *Network) Pooled() int { return len(n.free) }

// Scratch returns a buffer of size bytes, the network's own: a host
// frames a datagram there and NewPacket copies what it keeps, so the
// hosts of one network (one engine, one thread) share it.
func (n *Network) Scratch(size int) []byte {
	if len(n.scratch) < size {
		n.scratch = make([]byte, size)
	}
	return n.scratch[:size]
}

// NewPacket returns a pooled packet holding a copy of header and a
// reference to payload.
func (n *Network) NewPacket(header, payload []byte) *Packet {
	if len(n.free) == 0 {
		// Packets come in slabs: neighbours in memory, fewer objects for
		// the garbage collector to trace.
		slab := make([]Packet, 256)
		for i := range slab {
			n.free = append(n.free, &slab[i])
		}
	}
	k := len(n.free)
	p := n.free[k-1]
	n.free = n.free[:k-1]
	if len(header) <= len(p.hdr) {
		p.Buf = p.hdr[:copy(p.hdr[:], header)]
	} else {
		p.Buf = append([]byte(nil), header...)
	}
	p.Payload = payload
	p.Wire = len(p.Buf) + len(payload) + n.Overhead
	p.ECN, p.Control, p.next, p.wait = false, false, nil, 0
	return p
}

// Free returns p to the pool; p must not be used afterwards.
func (n *Network) Free(p *Packet) {
	if p.ingress != nil {
		p.ingress.release(p.Wire)
		p.ingress = nil
	}
	p.Payload = nil
	n.free = append(n.free, p)
}

// fifo is an intrusive queue of packets.
type fifo struct {
	head, tail *Packet
	n          int
}

func (f *fifo) push(p *Packet) {
	p.next = nil
	if f.tail == nil {
		f.head = p
	} else {
		f.tail.next = p
	}
	f.tail = p
	f.n++
}

func (f *fifo) pop() *Packet {
	p := f.head
	if p == nil {
		return nil
	}
	f.head = p.next
	if f.head == nil {
		f.tail = nil
	}
	p.next = nil
	f.n--
	return p
}

// QueueStats counts what a queue did.
type QueueStats struct {
	Enqueued, Dropped, Marked uint64
	SentBytes                 uint64 // wire bytes serialized
	MaxBytes                  int
	// ByteTime integrates occupancy over time (byte-picoseconds), for the
	// mean occupancy.
	ByteTime float64
}

// Queue is an output port: it serializes packets at Rate onto Next and
// drops arriving packets when Limit bytes are already waiting. Packets
// get ECN marks by the bytes waiting. Control packets wait in their own
// queue and go first, and keep going while PFC pauses the port's data.
// A queue only serializes and drops.
type Queue struct {
	net  *Network
	Rate float64 // bits per second
	Next Node
	buffer
	// Source, when set, is asked for the next packet whenever the queue
	// runs empty: a NIC pulling from its host instead of being pushed.
	Source func() *Packet

	data, ctrl fifo
	busy       bool
	pauseState
	sending *Packet
	since   monotime.Time
}

// NewQueue returns a queue serializing at rate bits/s onto next.
func NewQueue(n *Network, rate float64, limit int, next Node) *Queue {
	return &Queue{net: n, Rate: rate, Next: next, buffer: buffer{Limit: limit}}
}

func (q *Queue) account() {
	now := q.net.Eng.Now()
	q.Stats.ByteTime += float64(q.bytes) * float64(now-q.since)
	q.since = now
}

// Receive enqueues p, or drops it if the queue is full.
func (q *Queue) Receive(p *Packet) {
	q.account()
	if !q.admit(p, q.net.Eng) {
		q.net.Free(p)
		return
	}
	if q.first(p) {
		q.ctrl.push(p)
	} else {
		q.data.push(p)
	}
	if !q.busy {
		q.startNext()
	}
}

// Kick makes an idle queue with a Source pull from it.
func (q *Queue) Kick() {
	if !q.busy {
		q.startNext()
	}
}

// Busy reports whether the queue is serializing a packet.
func (q *Queue) Busy() bool { return q.busy }

// Bytes returns the bytes waiting, including the one being sent.
func (q *Queue) Bytes() int { return q.bytes }

func (q *Queue) startNext() {
	p := q.ctrl.pop()
	if p == nil && !q.paused {
		p = q.data.pop()
	}
	if p == nil && q.Source != nil && !q.paused {
		if p = q.Source(); p != nil {
			q.account()
			q.took(p.Wire)
		}
	}
	if p == nil {
		q.busy = false
		return
	}
	q.busy, q.sending = true, p
	q.net.Eng.After(monotime.TransmitTime(p.Wire, q.Rate), q, 0)
}

// OnEvent runs when the packet being sent has left the port, or when the
// PFC watchdog finds the port paused too long.
func (q *Queue) OnEvent(_ *engine.Engine, arg uint64) {
	if arg == watchdogEvent {
		tripWatchdog(q)
		return
	}
	p := q.sending
	q.sending = nil
	q.account()
	q.gave(p.Wire)
	q.Next.Receive(p)
	q.startNext()
}

// setPaused stops or restarts the port's data. A host's NIC pulls
// nothing while paused, so its host's control packets wait too.
func (q *Queue) setPaused(on bool) {
	if q.set(on, q.net.Eng, q) && !on && !q.busy {
		q.startNext()
	}
}

// LossModel decides which packets a link loses.
type LossModel interface {
	Lost(e *engine.Engine) bool
}

// Bernoulli loses each packet independently with probability P.
type Bernoulli struct{ P float64 }

// Lost implements LossModel.
func (b Bernoulli) Lost(e *engine.Engine) bool { return b.P > 0 && e.Rand().Float64() < b.P }

// GilbertElliott is a burst-loss channel: the shared model and the state
// of this link.
type GilbertElliott struct {
	lossmodel.GilbertElliott
	bad bool
}

// Lost implements LossModel.
func (g *GilbertElliott) Lost(e *engine.Engine) bool {
	var lost bool
	lost, g.bad = g.Step(g.bad, e.Rand())
	return lost
}

// LinkStats counts what a link did.
type LinkStats struct {
	Delivered, Lost uint64
}

// Link is a wire: it delays every packet by Delay and loses some. Packets
// in flight wait in a FIFO (the delay is constant, so arrival order is
// send order) and only the head has an event pending.
type Link struct {
	net   *Network
	Delay monotime.Duration
	Loss  LossModel
	Next  Node
	Up    bool

	flight fifo
	Stats  LinkStats
}

// NewLink returns a link with the given one-way delay onto next.
func NewLink(n *Network, delay monotime.Duration, loss LossModel, next Node) *Link {
	return &Link{net: n, Delay: delay, Loss: loss, Next: next, Up: true}
}

// DelayForDistance is the propagation delay of fibre: 5 us per km.
func DelayForDistance(km float64) monotime.Duration {
	return monotime.Duration(km * 5 * float64(monotime.Microsecond))
}

// Receive puts p on the wire.
func (l *Link) Receive(p *Packet) {
	if !l.Up || (l.Loss != nil && l.Loss.Lost(l.net.Eng)) {
		l.Stats.Lost++
		l.net.Free(p)
		return
	}
	p.at = l.net.Eng.Now().Add(l.Delay)
	l.flight.push(p)
	if l.flight.n == 1 {
		l.net.Eng.At(p.at, l, 0)
	}
}

// OnEvent delivers the packet at the head of the wire.
func (l *Link) OnEvent(e *engine.Engine, _ uint64) {
	p := l.flight.pop()
	if h := l.flight.head; h != nil {
		e.At(h.at, l, 0)
	}
	l.Stats.Delivered++
	l.net.Hops++
	l.Next.Receive(p)
}
