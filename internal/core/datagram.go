package core

import (
	"hash/fnv"
	"net/netip"
)

// DefaultDatagramWindow is a datagram peer's messages in flight per
// direction when Config.MaxMsgs is zero: a collective keeps a few messages
// in flight to each peer, not the thousand a bulk connection wants.
const DefaultDatagramWindow = 16

// Datagram is a datagram (UD) endpoint: one local queue pair that
// exchanges messages with any number of peers without a connection to
// each, as CSA-UD's unreliable datagrams do. There is no handshake: the
// application names its peers (a collective library knows its ranks).
//
// What a peer costs is what loss recovery needs and no more: its sequence
// numbers, RTT and reordering estimates and path state, kept in a Conn
// that is never dialed. The message slots, their bitmaps and the
// sender's timer and retransmit queues, which make a connection cost
// about a kilobyte per message in flight, are leased from the datagram
// endpoint's pool while a peer has messages in flight and given back when
// it has none, so their memory follows the messages in flight and not the
// number of peers (TestDatagramPeerBytes measures a peer and a connection).
//
// Leasing is invisible to the protocol: a leased receive block is rebuilt
// exactly as the peer left it (each slot holding the last message it
// held), so a late packet of a finished message is still answered as one.
type Datagram struct {
	e     *Endpoint
	cfg   Config
	recv  [][]recvMsg // free receive blocks
	send  []*sendBlock
	stats DatagramStats
}

// sendBlock is what a sender leases: its slots, the grants that arrived
// before their messages, and the queues that refer to slots.
type sendBlock struct {
	slots  []sendMsg
	grants []grant
	retx   ring[retxRange]
	timers sendTimers
}

// DatagramStats counts a datagram endpoint's peers and its pool.
type DatagramStats struct {
	Peers int // peers added
	// Leased is how many peers hold slots now (a peer's sender and
	// receiver lease separately and count once each).
	Leased int
	// Blocks is the blocks the pool has made, leased or free: the
	// endpoint's high-water mark of peers with messages in flight.
	Blocks int
	Leases uint64 // blocks leased so far
}

// NewDatagram adds a datagram endpoint whose peers use cfg; cfg.MaxMsgs is
// each peer's window (zero: DefaultDatagramWindow).
func (e *Endpoint) NewDatagram(cfg Config) (*Datagram, error) {
	if cfg.MaxMsgs == 0 {
		cfg.MaxMsgs = DefaultDatagramWindow
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = -1 // no connection to keep alive
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Datagram{e: e, cfg: cfg}, nil
}

// AddrID is the id under which a datagram endpoint at addr is known to its
// peers when ids are derived from addresses (sdr does): both ends compute
// it with nothing exchanged. It is never zero.
func AddrID(addr netip.AddrPort) uint64 {
	h := fnv.New64a()
	b, _ := addr.MarshalBinary() // never fails
	h.Write(b)
	if id := h.Sum64(); id != 0 {
		return id
	}
	return 1
}

// AddPeer adds peer at addr: datagrams from it name id, datagrams to it
// name peerID. The returned Conn sends to and receives from that peer
// with the usual calls (Send, PostRecv, Complete, StepRecv); it needs no
// Dial and keeps no keepalives.
func (d *Datagram) AddPeer(id, peerID uint64, addr netip.AddrPort) (*Conn, error) {
	if err := d.e.freeID(id); err != nil {
		return nil, err
	}
	c := newConn(d.e, d, id, peerID, addr, &d.cfg)
	d.e.add(c)
	d.stats.Peers++
	return c, nil
}

// Peer returns the peer added with local id id, or nil.
func (d *Datagram) Peer(id uint64) *Conn {
	if c := d.e.conns[id]; c != nil && c.ud == d {
		return c
	}
	return nil
}

// Stats returns the endpoint's counters.
func (d *Datagram) Stats() DatagramStats { return d.stats }

// leaseRecv gives r slots, rebuilt as r left them: every slot free and
// holding the last message it held, so stale packets are told "done".
func (d *Datagram) leaseRecv(r *receiver) {
	var slots []recvMsg
	if n := len(d.recv); n > 0 {
		slots, d.recv = d.recv[n-1], d.recv[:n-1]
	} else {
		slots = make([]recvMsg, d.cfg.MaxMsgs)
		d.stats.Blocks++
	}
	mask := r.c.slotMask
	for i := range slots {
		m := &slots[i]
		m.state, m.seq, m.buf = recvFree, 0, nil
		if last := r.nextSeq - 1; r.nextSeq > uint32(i) {
			m.seq = last - (last-uint32(i))&mask
		}
	}
	r.slots = slots
	d.stats.Leased++
	d.stats.Leases++
}

func (d *Datagram) leaseSend(s *sender) {
	var b *sendBlock
	if n := len(d.send); n > 0 {
		b, d.send = d.send[n-1], d.send[:n-1]
	} else {
		b = &sendBlock{slots: make([]sendMsg, d.cfg.MaxMsgs), grants: make([]grant, d.cfg.MaxMsgs)}
		d.stats.Blocks++
	}
	clear(b.grants)
	s.block = b
	s.slots, s.grants, s.retx, s.timers = b.slots, b.grants, b.retx, &b.timers
	d.stats.Leased++
	d.stats.Leases++
}

// settle gives back the slots of a peer that has nothing in flight and
// nothing left to say about it.
func (d *Datagram) settle(c *Conn) {
	if c.ctrl.len() > 0 || c.closed {
		return
	}
	if r := c.rcv; r != nil && r.slots != nil && r.live == 0 {
		d.recv = append(d.recv, r.slots)
		r.slots, r.creditSeq = nil, r.nextSeq
		r.timers = r.timers[:0] // every slot is free: their timers are void
		d.stats.Leased--
	}
	if s := c.snd; s != nil && s.block != nil && s.live == 0 {
		// With no message in flight every timer and retransmission left
		// in the queues is void.
		b := s.block
		s.retx.clear()
		s.timers.clear()
		b.retx = s.retx
		d.send = append(d.send, b)
		s.block, s.slots, s.grants = nil, nil, nil
		s.retx, s.timers = ring[retxRange]{}, nil
		s.txSeq = s.nextSeq
		d.stats.Leased--
	}
}
