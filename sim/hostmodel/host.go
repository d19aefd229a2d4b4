package hostmodel

import (
	"fmt"
	"net/netip"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/network"
)

// Host is a simulated machine: a NIC that serializes onto its uplink, and
// the very protocol core the real UDP datapath drives. The NIC pulls a
// datagram from the core whenever it is free, so the core sends at line
// rate and no faster.
type Host struct {
	net  *network.Network
	ID   int32
	Addr netip.AddrPort
	EP   *core.Endpoint
	NIC  *network.Queue
	// Handle, when set, sees every event of the host's endpoint.
	Handle func(h *Host, ev core.Event)
	// Contexts, when set, is the NIC's cache of connection contexts: a
	// packet whose context misses waits for it, and so does everything
	// behind it in the same direction.
	Contexts *ContextCache
	// Datagram: the host's transport rides one unreliable-datagram QP
	// (CSA-UD): Connect adds peers to the endpoint's datagram endpoint
	// instead of opening connections, and one NIC context serves every
	// peer and path; otherwise each peer and path is a reliable
	// connection's context. Set it before the first Connect.
	Datagram bool
	ud       *core.Datagram // the datagram endpoint, made on first use
	// Memory, when set, is the path the NIC's DMAs take to host memory
	// (HostMemory): a packet leaves once its payload's translations are
	// in, and a received one is handed on once they are.
	Memory *HostMemory
	// entropy is, per connection id, what its packets add to their path
	// index for the switches to hash (SetEntropy); nil: nothing.
	entropy map[uint64]uint16

	timer   engine.EventID
	timerAt monotime.Time
	armed   bool
	inside  bool // in a callback: Wake happens on the way out

	held      *network.Packet // sent while its context is fetched
	heldUntil monotime.Time   // ... which takes until then
	rx        []heldPacket    // received, waiting behind a context fetch
	rxFree    monotime.Time   // the receive side is stalled until then
	staged    []heldPacket    // with Memory: sends whose translations are under way
	txWake    monotime.Time   // a wake-up for the head of staged is due then
}

// SetEntropy makes the packets of connection id leave with base added
// to their path's entropy, as a connection of its own (another QP, its
// own UDP source ports) would: switches that hash entropy spread
// connections between the same two hosts over different paths.
func (h *Host) SetEntropy(id uint64, base uint16) {
	if h.entropy == nil {
		h.entropy = map[uint64]uint16{}
	}
	h.entropy[id] = base
}

// heldPacket is a packet the NIC holds and when it lets it go: received,
// until its context or translations are in; or staged to send.
type heldPacket struct {
	p  *network.Packet
	at monotime.Time
}

// Host events besides the core's timer (arg 0).
const (
	eventTxContext = 1 // a send's context has arrived
	eventRxContext = 2 // received packets are due
)

// hostPort is the UDP port every simulated host listens on (UET's).
const hostPort = 4793

// HostAddr is the simulated address of host i: a loopback address, since
// nothing ever leaves the process.
func HostAddr(i int32) netip.AddrPort {
	n := uint32(i) + 1
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, byte(n >> 16), byte(n >> 8), byte(n)}), hostPort)
}

func hostIndex(a netip.AddrPort) int32 {
	b := a.Addr().As4()
	return int32(uint32(b[1])<<16|uint32(b[2])<<8|uint32(b[3])) - 1
}

// NewHost adds host id to network n with a NIC of the given rate feeding
// uplink.
func NewHost(n *network.Network, id int32, rate float64, uplink network.Node) *Host {
	h := &Host{net: n, ID: id, Addr: HostAddr(id), EP: core.NewEndpoint()}
	h.NIC = network.NewQueue(n, rate, 0, uplink)
	h.NIC.Source = h.pull
	return h
}

// Move makes h and its NIC components of network n (see network.Move).
func (h *Host) Move(n *network.Network) {
	h.net = n
	h.NIC.Move(n)
}

// Engine returns the engine h's events run on.
func (h *Host) Engine() *engine.Engine { return h.net.Eng }

// Connect opens a connection between hosts a and b and returns a's end
// and b's end.
func Connect(a, b *Host, id uint64, cfg core.Config) (*core.Conn, *core.Conn, error) {
	ca, err := a.open(id, b.Addr, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("host %d: %w", a.ID, err)
	}
	cb, err := b.open(id, a.Addr, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("host %d: %w", b.ID, err)
	}
	return ca, cb, nil
}

// open makes the host's end of connection id to peer: a connection, or a
// peer of the host's datagram endpoint (whose configuration is that of
// its first peer).
func (h *Host) open(id uint64, peer netip.AddrPort, cfg core.Config) (*core.Conn, error) {
	if !h.Datagram {
		return h.EP.NewConn(id, id, peer, cfg)
	}
	if h.ud == nil {
		ud, err := h.EP.NewDatagram(cfg)
		if err != nil {
			return nil, err
		}
		h.ud = ud
	}
	return h.ud.AddPeer(id, id, peer)
}

// DatagramStats returns the counters of the host's datagram endpoint,
// and false when it has none.
func (h *Host) DatagramStats() (core.DatagramStats, bool) {
	if h.ud == nil {
		return core.DatagramStats{}, false
	}
	return h.ud.Stats(), true
}

// pull hands the NIC the core's next datagram. Sending can arm timers
// and raise events (a message of the none scheme is done once sent), so
// the host settles those too, except for kicking the NIC it serves.
func (h *Host) pull() *network.Packet {
	now := h.net.Eng.Now()
	outer := h.inside
	h.inside = true
	if p := h.held; p != nil { // nothing leaves before its context arrives
		h.inside = outer
		if now < h.heldUntil {
			return nil
		}
		h.held = nil
		return p
	}
	var p *network.Packet
	if h.Memory != nil {
		p = h.pullStaged(now)
	} else {
		p = h.poll(now)
	}
	if p != nil {
		if h.Contexts != nil {
			if stall := h.Contexts.Touch(h.contextKey(p.Dst, p.Entropy)); stall > 0 {
				// The NIC sends nothing until the context arrives.
				h.held, h.heldUntil = p, now.Add(stall)
				h.net.Eng.At(h.heldUntil, h, eventTxContext)
				p = nil
			}
		}
	}
	h.inside = outer
	h.rearm()
	return p
}

// poll takes the core's next datagram, if it has one.
func (h *Host) poll(now monotime.Time) *network.Packet {
	var t core.Transmit
	buf := h.net.Scratch(core.MaxMTU + wire.MaxHeaderLen)
	ok := h.EP.PollTransmit(now, buf, &t)
	if !ok && h.drain() { // the application may have given it work
		ok = h.EP.PollTransmit(now, buf, &t)
	}
	if !ok {
		return nil
	}
	p := h.net.NewPacket(buf[:t.Len], t.Payload)
	p.Src, p.Dst = h.ID, hostIndex(t.Conn.Peer())
	p.Path = uint16(t.Path)
	p.Entropy = p.Path
	if h.entropy != nil {
		p.Entropy += h.entropy[t.Conn.ID()]
	}
	p.Control = !t.Data
	h.drain()
	return p
}

// pullStaged is pull with a memory path: a packet leaves once its
// payload's translations are in. The NIC keeps up to its outstanding
// translations' worth of packets taken from the core (descriptor
// prefetch), so their translations overlap and the pipeline stays full
// as packets leave.
func (h *Host) pullStaged(now monotime.Time) *network.Packet {
	h.stage(now)
	if len(h.staged) == 0 {
		return nil
	}
	if head := h.staged[0]; head.at <= now {
		h.staged = h.staged[:copy(h.staged, h.staged[1:])]
		h.stage(now) // the freed place starts its translation at once
		return head.p
	}
	if h.txWake != h.staged[0].at {
		h.txWake = h.staged[0].at
		h.net.Eng.At(h.txWake, h, eventTxContext)
	}
	return nil
}

// stage takes packets from the core until the NIC holds its outstanding
// translations' worth, starting each one's translations.
func (h *Host) stage(now monotime.Time) {
	for len(h.staged) < h.Memory.cfg.Outstanding {
		p := h.poll(now)
		if p == nil {
			return
		}
		h.staged = append(h.staged, heldPacket{p, h.Memory.read(now, p)})
	}
}

// Receive hands a datagram that reached the host to its core, once the
// NIC has its connection's context.
func (h *Host) Receive(p *network.Packet) {
	if h.Contexts == nil && h.Memory == nil {
		h.deliver(p)
		return
	}
	now := h.net.Eng.Now()
	at := now
	if h.Contexts != nil {
		if stall := h.Contexts.Touch(h.contextKey(p.Src, p.Entropy)); stall > 0 {
			at = max(now, h.rxFree).Add(stall)
		}
	}
	if h.Memory != nil {
		at = max(at, h.Memory.write(now, p))
	}
	if at > now || len(h.rx) > 0 { // in order, behind any fetch
		at = max(at, h.rxFree)
		h.rxFree = at
		if len(h.rx) == 0 {
			h.net.Eng.At(at, h, eventRxContext)
		}
		h.rx = append(h.rx, heldPacket{p, at})
		return
	}
	h.deliver(p)
}

// deliver hands p to the core.
func (h *Host) deliver(p *network.Packet) {
	h.inside = true
	if p.Control {
		h.net.ControlWait.Add(int64(p.Waited()))
	}
	_ = h.EP.HandleDatagram(h.net.Eng.Now(), core.Received{Buf: p.Buf, Payload: p.Payload, Path: core.Path(p.Path), CE: p.ECN})
	h.net.Free(p)
	h.settle()
}

// OnEvent runs the core's timers, and lets the NIC go on once a
// context it waited for has arrived.
func (h *Host) OnEvent(e *engine.Engine, arg uint64) {
	switch arg {
	case eventTxContext:
		h.NIC.Kick()
		return
	case eventRxContext:
		k := 0
		for k < len(h.rx) && h.rx[k].at <= e.Now() {
			h.deliver(h.rx[k].p)
			k++
		}
		h.rx = h.rx[:copy(h.rx, h.rx[k:])]
		if len(h.rx) > 0 {
			e.At(h.rx[0].at, h, eventRxContext)
		}
		return
	}
	h.armed = false
	h.inside = true
	h.EP.HandleTimeout(e.Now())
	h.settle()
}

// Wake tells the host that the application gave its core work from
// outside a host callback.
func (h *Host) Wake() {
	if !h.inside {
		h.settle()
	}
}

// settle delivers events, lets the NIC pull, and re-arms the core's timer.
func (h *Host) settle() {
	h.drain()
	h.inside = false
	h.NIC.Kick()
	h.rearm()
}

// drain delivers the endpoint's events and reports whether there were any.
func (h *Host) drain() bool {
	got := false
	for {
		ev, ok := h.EP.PollEvent()
		if !ok {
			return got
		}
		got = true
		if h.Handle != nil {
			h.Handle(h, ev)
		}
	}
}

// rearm keeps one engine event pending at the core's next deadline.
func (h *Host) rearm() {
	t, ok := h.EP.NextTimeout()
	switch {
	case !ok:
		if h.armed {
			h.net.Eng.Cancel(h.timer)
			h.armed = false
		}
	case !h.armed || t != h.timerAt:
		if h.armed {
			h.net.Eng.Cancel(h.timer)
		}
		h.timer, h.timerAt, h.armed = h.net.Eng.At(t, h, 0), t, true
	}
}
