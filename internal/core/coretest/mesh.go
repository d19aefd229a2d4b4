package coretest

import (
	"fmt"
	"math/rand/v2"
	"net/netip"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// Mesh is any number of endpoints, each with a NIC of one rate, joined
// pairwise by impaired links made on first use: the harness of datagram
// endpoints, whose one endpoint talks to many peers. Like Pair, it steps
// in fake time.
type Mesh struct {
	Now   monotime.Time
	Nodes []*Node
	// DeliverErrors counts datagrams an endpoint rejected.
	DeliverErrors int
	link          LinkConfig
	rate          float64
	rng           *rand.Rand
	byAddr        map[netip.AddrPort]*Node
}

// Node is one endpoint of a Mesh.
type Node struct {
	EP   *core.Endpoint
	Addr netip.AddrPort
	// OnEvent, when set, sees every event of this node's endpoint.
	OnEvent func(core.Event)
	out     map[netip.AddrPort]*link
	links   []*link // out, in the order made, for a deterministic walk
	dst     []*Node
	free    monotime.Time // when the NIC has sent its last datagram
	buf     []byte
	active  bool
}

// NewMesh returns n endpoints at 127.0.0.1:1 .. :n. Every datagram leaves
// its NIC at rate bits per second (zero: at once) and crosses a link
// impaired as lc says (its Rate is ignored).
func NewMesh(n int, rate float64, lc LinkConfig, seed uint64) *Mesh {
	lc.Rate = 0
	m := &Mesh{link: lc, rate: rate, rng: rand.New(rand.NewPCG(seed, 0x3e54)),
		byAddr: make(map[netip.AddrPort]*Node)}
	for i := range n {
		nd := &Node{EP: core.NewEndpoint(), Addr: netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(i+1)),
			out: make(map[netip.AddrPort]*link), buf: make([]byte, core.MaxMTU+wire.MaxHeaderLen), active: true}
		m.Nodes = append(m.Nodes, nd)
		m.byAddr[nd.Addr] = nd
	}
	return m
}

// Wake tells the mesh that the application gave the nodes new work.
func (m *Mesh) Wake() {
	for _, nd := range m.Nodes {
		nd.active = true
	}
}

// LinkStats sums the counters of every link.
func (m *Mesh) LinkStats() LinkStats {
	var s LinkStats
	for _, nd := range m.Nodes {
		for _, l := range nd.links {
			s.Sent += l.stats.Sent
			s.Bytes += l.stats.Bytes
			s.Lost += l.stats.Lost
			s.Duplicated += l.stats.Duplicated
			s.Reordered += l.stats.Reordered
		}
	}
	return s
}

func (m *Mesh) linkTo(nd *Node, to netip.AddrPort) (*link, error) {
	if l := nd.out[to]; l != nil {
		return l, nil
	}
	dst := m.byAddr[to]
	if dst == nil {
		return nil, fmt.Errorf("coretest: %v sent to %v, which is not in the mesh", nd.Addr, to)
	}
	l := &link{cfg: m.link, rng: rand.New(rand.NewPCG(m.rng.Uint64(), m.rng.Uint64()))}
	nd.out[to] = l
	nd.links = append(nd.links, l)
	nd.dst = append(nd.dst, dst)
	return l, nil
}

// step does everything due at m.Now and returns when the next thing is.
func (m *Mesh) step() (monotime.Time, error) {
	for _, nd := range m.Nodes {
		for i, l := range nd.links {
			dst := nd.dst[i]
			for l.next() <= m.Now {
				pk := l.pop()
				if err := dst.EP.HandleDatagram(m.Now, core.Received{Buf: pk.buf, From: nd.Addr}); err != nil {
					m.DeliverErrors++
				}
				l.recycle(pk.buf)
				dst.active = true
			}
		}
	}
	for _, nd := range m.Nodes {
		if t, ok := nd.EP.NextTimeout(); ok && t <= m.Now {
			nd.EP.HandleTimeout(m.Now)
			nd.active = true
		}
	}
	next := monotime.Never
	for _, nd := range m.Nodes {
		for nd.active && nd.free <= m.Now {
			var t core.Transmit
			ok := nd.EP.PollTransmit(m.Now, nd.buf, &t)
			if !ok {
				nd.active = false
				break
			}
			l, err := m.linkTo(nd, t.Addr)
			if err != nil {
				return 0, err
			}
			nd.free = m.Now.Add(monotime.TransmitTime(t.Len+len(t.Payload), m.rate))
			l.send(m.Now, t.Path, nd.buf[:t.Len], t.Payload)
		}
		for {
			ev, ok := nd.EP.PollEvent()
			if !ok {
				break
			}
			if nd.OnEvent != nil {
				nd.OnEvent(ev)
			}
			nd.active = true
		}
		for _, l := range nd.links {
			next = min(next, l.next())
		}
		if t, ok := nd.EP.NextTimeout(); ok {
			next = min(next, max(t, m.Now))
		}
		if nd.active {
			next = min(next, max(nd.free, m.Now))
		}
	}
	return next, nil
}

// Drive runs the mesh until done returns true, failing as Pair.Drive does.
func (m *Mesh) Drive(done func() bool, lim Limits) error {
	return drive(&m.Now, m.step, done, lim)
}
