package udp

import (
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// A LossFunc decides the fate of a datagram on a MemoryNetwork: it returns
// true to drop it. It must not keep datagram.
type LossFunc func(from, to netip.AddrPort, datagram []byte) (drop bool)

// A MarkFunc decides whether a datagram on a MemoryNetwork arrives marked
// "congestion experienced", as a router's ECN marking would: it returns
// true to set Message.CE for the receiver. It must not keep datagram.
type MarkFunc func(from, to netip.AddrPort, datagram []byte) (ce bool)

// MemoryNetwork delivers datagrams between the MemoryBinds it made, in
// process, through channels. Like UDP it loses datagrams sent to an address
// nobody has opened and datagrams that find the receiver's queue full; it
// never reorders the datagrams of one sender path to one receiver path.
type MemoryNetwork struct {
	mu    sync.Mutex
	ports map[netip.AddrPort]memPort
	next  uint16 // the next ephemeral port to try
	loss  atomic.Pointer[LossFunc]
	mark  atomic.Pointer[MarkFunc]
}

type memPort struct {
	b    *MemoryBind
	path int
}

type memDatagram struct {
	data []byte
	from netip.AddrPort
	path int
	ce   bool
}

// memQueue is the number of datagrams a MemoryBind queues before it drops.
const memQueue = 4096

const (
	memFirstEphemeral = 49152
	memEphemerals     = 65536 - memFirstEphemeral
)

// NewMemoryNetwork returns an empty network without loss.
func NewMemoryNetwork() *MemoryNetwork {
	return &MemoryNetwork{ports: make(map[netip.AddrPort]memPort), next: memFirstEphemeral}
}

// SetLoss installs f as the network's loss hook (nil: no loss). It is
// called for every datagram sent, concurrently from every sender.
func (n *MemoryNetwork) SetLoss(f LossFunc) {
	if f == nil {
		n.loss.Store(nil)
		return
	}
	n.loss.Store(&f)
}

// SetMark installs f as the network's congestion-mark hook (nil: no
// marks). It is called for every datagram the loss hook lets through,
// concurrently from every sender, so a test can drive a protocol's ECN
// response without a kernel.
func (n *MemoryNetwork) SetMark(f MarkFunc) {
	if f == nil {
		n.mark.Store(nil)
		return
	}
	n.mark.Store(&f)
}

// NewBind returns an unopened Bind on the network.
func (n *MemoryNetwork) NewBind() *MemoryBind {
	return &MemoryBind{
		net:      n,
		rx:       make(chan memDatagram, memQueue),
		done:     make(chan struct{}),
		deadline: newReceiveDeadline(),
	}
}

// MemoryBind is a Bind on a MemoryNetwork. Open on an unspecified address
// (or the zero AddrPort) takes the loopback address of its family, and
// every datagram is copied once, on Send. It reports ECN (Stats().ECN):
// the network carries the marks of its SetMark hook to Message.CE.
type MemoryBind struct {
	net   *MemoryNetwork
	mu    sync.Mutex // Open, Close
	state atomic.Int32
	local []netip.AddrPort // per path
	v4    bool
	rx    chan memDatagram
	done  chan struct{}

	rxMu     sync.Mutex
	deadline receiveDeadline

	stats counters
}

var _ Bind = (*MemoryBind)(nil)

// Open implements Bind.
func (b *MemoryBind) Open(local netip.AddrPort, paths int) ([]uint16, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state.Load() != stateNew {
		return nil, ErrOpen
	}
	if err := checkPaths(paths); err != nil {
		return nil, err
	}
	a := local.Addr().Unmap()
	switch {
	case !a.IsValid() || a == netip.IPv4Unspecified():
		a = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	case a.IsUnspecified():
		a = netip.IPv6Loopback()
	}
	n := b.net
	n.mu.Lock()
	defer n.mu.Unlock()
	ports := make([]uint16, paths)
	for i := range ports {
		var ap netip.AddrPort
		if i == 0 && local.Port() != 0 {
			ap = netip.AddrPortFrom(a, local.Port())
			if _, ok := n.ports[ap]; ok {
				n.release(b.local)
				b.local = nil
				return nil, fmt.Errorf("udp: memory address %v in use", ap)
			}
		} else {
			var ok bool
			if ap, ok = n.ephemeral(a); !ok {
				n.release(b.local)
				b.local = nil
				return nil, fmt.Errorf("udp: no free memory port on %v", a)
			}
		}
		n.ports[ap] = memPort{b, i}
		b.local = append(b.local, ap)
		ports[i] = ap.Port()
	}
	b.v4 = a.Is4()
	b.state.Store(stateOpen)
	return ports, nil
}

// ephemeral finds a free port on a; n.mu is held.
func (n *MemoryNetwork) ephemeral(a netip.Addr) (netip.AddrPort, bool) {
	for range memEphemerals {
		ap := netip.AddrPortFrom(a, n.next)
		n.next++
		if n.next == 0 {
			n.next = memFirstEphemeral
		}
		if _, ok := n.ports[ap]; !ok {
			return ap, true
		}
	}
	return netip.AddrPort{}, false
}

// release frees addresses; n.mu is held.
func (n *MemoryNetwork) release(addrs []netip.AddrPort) {
	for _, ap := range addrs {
		delete(n.ports, ap)
	}
}

// Close implements Bind.
func (b *MemoryBind) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state.Swap(stateClosed) == stateClosed {
		return nil
	}
	close(b.done)
	b.net.mu.Lock()
	b.net.release(b.local)
	b.net.mu.Unlock()
	return nil
}

func (b *MemoryBind) check() error {
	switch b.state.Load() {
	case stateNew:
		return ErrNotOpen
	case stateClosed:
		return net.ErrClosed
	}
	return nil
}

// Send implements Bind.
func (b *MemoryBind) Send(msgs []Message) error {
	if err := b.check(); err != nil {
		return err
	}
	var first error
	lossp, markp := b.net.loss.Load(), b.net.mark.Load()
	for i := range msgs {
		m := &msgs[i]
		size, err := checkMessage(m, len(b.local), b.v4)
		if err != nil {
			b.stats.refused(err)
			if first == nil {
				first = err
			}
			continue
		}
		data := make([]byte, size)
		copy(data, m.Buf[:m.N])
		copy(data[m.N:], m.Payload)
		from := b.local[m.Path]
		to := netip.AddrPortFrom(m.Addr.Addr().Unmap(), m.Addr.Port())
		b.stats.sent.Add(1)
		b.stats.sentBytes.Add(uint64(size))
		b.stats.sendCalls.Add(1)
		if lossp != nil && (*lossp)(from, to, data) {
			b.stats.dropped.Add(1)
			continue
		}
		ce := markp != nil && (*markp)(from, to, data)
		b.net.mu.Lock()
		p, ok := b.net.ports[to]
		b.net.mu.Unlock()
		if !ok {
			continue // nobody listens there: lost, as on UDP
		}
		select {
		case p.b.rx <- memDatagram{data: data, from: from, path: p.path, ce: ce}:
		default:
			p.b.stats.dropped.Add(1)
		}
	}
	return first
}

// SetReceiveDeadline implements Bind.
func (b *MemoryBind) SetReceiveDeadline(t time.Time) error {
	b.deadline.set(t)
	return nil
}

// Receive implements Bind.
func (b *MemoryBind) Receive(msgs []Message) (int, error) {
	if err := b.check(); err != nil {
		return 0, err
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	b.rxMu.Lock()
	defer b.rxMu.Unlock()
	for {
		timeout, err := b.deadline.arm()
		if err != nil {
			return 0, err
		}
		var d memDatagram
		var ok bool
		select {
		case d = <-b.rx:
			ok = true
		case <-b.done:
			return 0, net.ErrClosed
		case <-timeout: // the deadline check above fails
		case <-b.deadline.kick: // a new deadline
		}
		b.deadline.disarm()
		if !ok {
			continue
		}
		n := b.deliver(msgs, 0, d)
	more:
		for n < len(msgs) {
			select {
			case d = <-b.rx:
				n = b.deliver(msgs, n, d)
			default:
				break more
			}
		}
		if n > 0 {
			return n, nil
		}
	}
}

// deliver copies d into msgs[n] and returns the next free index.
func (b *MemoryBind) deliver(msgs []Message, n int, d memDatagram) int {
	b.stats.recvCalls.Add(1)
	m := &msgs[n]
	if len(d.data) > len(m.Buf) {
		b.stats.truncated.Add(1)
		return n
	}
	m.N = copy(m.Buf, d.data)
	m.Addr = d.from
	m.Path = d.path
	m.CE, m.Stamp = d.ce, 0
	b.stats.received.Add(1)
	b.stats.receivedBytes.Add(uint64(m.N))
	if d.ce {
		b.stats.ceReceived.Add(1)
	}
	return n + 1
}

// BatchSize implements Bind.
func (b *MemoryBind) BatchSize() int { return DefaultBatchSize }

// Stats implements Bind.
func (b *MemoryBind) Stats() Stats {
	s := b.stats.snapshot()
	s.ECN = true
	return s
}
