//go:build linux

package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// UDPBind is the Linux Bind: one non-blocking UDP socket per path,
// recvmmsg (recv_linux.go) and sendmmsg batches, UDP GSO and GRO
// (gso_linux.go), ECN (ecn_linux.go).
//
// Receiving from N sockets: the sockets are registered (level-triggered)
// in an epoll instance of the Bind, and that epoll descriptor is itself
// registered in Go's network poller through an os.File. Receive asks the
// epoll which sockets are readable (epoll_wait with a zero timeout) and
// reads them with recvmmsg, straight into the caller's buffers; when none
// is, the goroutine parks in the Go poller, as on any socket, until a
// datagram arrives on any path. So one goroutine receives from all paths,
// without a goroutine or thread per socket, a blocking system call or
// (without GRO) a copy, and receive deadlines and Close work through the
// poller. Level-triggered epoll hands ready sockets out round-robin, so no
// path starves.
//
// GRO: when UDP_GRO is on (the default where the kernel has it), a read
// datagram may hold many, so Receive reads into buffers of the Bind (groSlots
// of 64 KiB) and copies each segment into a caller's buffer; segments that
// do not fit the caller's batch wait for the next Receive.
//
// Send groups the messages by path, keeping their order within a path,
// and gives each group to sendmmsg (again for the rest when the kernel
// takes only part of it).
// With GSO, a run of messages to the same address with the same length
// (the last may be shorter), up to 64 segments and MaxDatagram bytes,
// becomes one sendmmsg entry with a UDP_SEGMENT message. GSO is probed at
// Open; if a send is refused for it (EIO, ENOPROTOOPT, EOPNOTSUPP), the Bind
// turns GSO off and sends those datagrams again one by one; after EMSGSIZE
// or EINVAL (older kernels), which a segment larger than the route's MTU
// causes, it only stops coalescing datagrams that large.
type UDPBind struct {
	cfg    Config
	mu     sync.Mutex // Open, Close
	state  atomic.Int32
	socks  []udpSocket
	v6     bool // the sockets are AF_INET6
	gro    bool
	ecn    bool // every path marks ECT(0) and reads the TOS
	stamps bool // every path has the kernel stamp what it receives
	// gsoMax is the largest datagram GSO coalesces; 0: GSO off.
	gsoMax         atomic.Int64
	rcvbuf, sndbuf int

	ep   *os.File // the epoll instance, in the Go poller
	epfd int
	eprc syscall.RawConn

	rxMu   sync.Mutex
	rx     rxState
	pollFn func(uintptr) bool // b.poll, bound once
	recvFn func(uintptr) bool // b.recv, bound once

	txMu   sync.Mutex
	tx     txState
	sendFn func(uintptr) bool // b.send, bound once

	stats counters
}

var _ Bind = (*UDPBind)(nil)

type udpSocket struct {
	conn *net.UDPConn
	rc   syscall.RawConn
}

type txState struct {
	hs     []unix.Mmsghdr
	names  []unix.RawSockaddrInet6
	iovs   []unix.Iovec
	ctrls  []gsoControl
	segs   []int32 // per entry: messages it carries
	first  []int32 // per entry: index in order of its first message
	bytes  []int32 // per entry: datagram bytes
	sizes  []int32 // per message: datagram length, -1 refused
	order  []int32 // messages grouped by path
	counts []int32 // per path

	// the sendmmsg call of send
	off, end, sent int
	errno          unix.Errno
}

// NewUDPBind returns an unopened UDPBind.
func NewUDPBind(cfg Config) *UDPBind {
	b := &UDPBind{cfg: cfg, epfd: -1}
	b.pollFn = b.poll
	b.recvFn = b.recv
	b.sendFn = b.send
	return b
}

// Open implements Bind.
func (b *UDPBind) Open(local netip.AddrPort, paths int) (ports []uint16, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state.Load() != stateNew {
		return nil, ErrOpen
	}
	if err := checkPaths(paths); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			b.release()
			b.socks, b.ep, b.eprc, b.epfd = nil, nil, nil, -1
		}
	}()
	b.epfd, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	if err = unix.SetNonblock(b.epfd, true); err != nil {
		return nil, os.NewSyscallError("setnonblock", err)
	}
	b.ep = os.NewFile(uintptr(b.epfd), "udp-epoll")
	if err = b.ep.SetReadDeadline(time.Time{}); err != nil {
		return nil, fmt.Errorf("udp: epoll descriptor not pollable: %w", err)
	}
	if b.eprc, err = b.ep.SyscallConn(); err != nil {
		return nil, err
	}

	size := b.cfg.socketBuffer()
	ports = make([]uint16, paths)
	for i := range ports {
		port := uint16(0)
		if i == 0 {
			port = local.Port()
		}
		network, la := listenAddr(local, port)
		c, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(la))
		if err != nil {
			return nil, err
		}
		rc, err := c.SyscallConn()
		if err != nil {
			c.Close()
			return nil, err
		}
		b.socks = append(b.socks, udpSocket{conn: c, rc: rc})
		ports[i] = c.LocalAddr().(*net.UDPAddr).AddrPort().Port()
		var cerr error
		err = rc.Control(func(fd uintptr) {
			cerr = b.setup(i, int(fd), size)
		})
		if err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}

	n := max(DefaultBatchSize, groSlots)
	b.rx.events = make([]unix.EpollEvent, paths)
	b.rx.grow(n)
	if b.gro {
		b.rx.slab = make([]byte, groSlots*groSlotSize)
		b.rx.pend = make([]groPending, groSlots)
	}
	b.tx.counts = make([]int32, paths)
	b.tx.grow(DefaultBatchSize)
	b.state.Store(stateOpen)
	return ports, nil
}

// setup sets the options of the socket fd of path i and registers it in
// the epoll instance. Path 0 probes GSO and GRO for all.
func (b *UDPBind) setup(i, fd, size int) error {
	rcv := setBuffer(fd, unix.SO_RCVBUFFORCE, unix.SO_RCVBUF, size)
	snd := setBuffer(fd, unix.SO_SNDBUFFORCE, unix.SO_SNDBUF, size)
	if i == 0 {
		b.rcvbuf, b.sndbuf = rcv, snd
		domain, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
		if err != nil {
			return os.NewSyscallError("getsockopt", err)
		}
		b.v6 = domain == unix.AF_INET6
		if !b.cfg.DisableGSO && supportsGSO(fd) {
			b.gsoMax.Store(MaxDatagram)
		}
		b.gro = !b.cfg.DisableGRO && enableGRO(fd) == nil
		// ECN is a nicety: a kernel or sandbox refusing it costs the
		// congestion controller its early signal, not the connection.
		b.ecn = !b.cfg.DisableECN && enableECN(fd, b.v6) == nil
		b.stamps = enableStamps(fd) == nil
	} else {
		if b.gro {
			// Path 0 took it; another path refusing only means its
			// datagrams arrive one by one, which Receive handles too.
			_ = enableGRO(fd)
		}
		if b.ecn && enableECN(fd, b.v6) != nil {
			// Paths with and without ECN mix fine (Receive reads the
			// mark per datagram), but Stats().ECN promises every path.
			b.ecn = false
		}
		if b.stamps && enableStamps(fd) != nil {
			b.stamps = false // as with ECN: stamps are per datagram
		}
	}
	if err := enableRecvErr(fd, b.v6); err != nil {
		return err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}
	if err := unix.EpollCtl(b.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// release closes what Open made; b.mu is held. It leaves the fields
// alone: a Receive or Send in flight may still read them, and the Go
// poller keeps each descriptor open until the calls using it return.
func (b *UDPBind) release() error {
	var err error
	if b.ep != nil {
		err = b.ep.Close()
	} else if b.epfd >= 0 {
		err = unix.Close(b.epfd)
	}
	for _, s := range b.socks {
		if e := s.conn.Close(); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// Close implements Bind.
func (b *UDPBind) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state.Swap(stateClosed) != stateOpen {
		return nil
	}
	// Closing the epoll file wakes a parked Receive; closing the sockets
	// fails a Send waiting for buffer space. Both then see stateClosed.
	return b.release()
}

func (b *UDPBind) check() error {
	switch b.state.Load() {
	case stateNew:
		return ErrNotOpen
	case stateClosed:
		return net.ErrClosed
	}
	return nil
}

// mapErr turns an I/O error into the Bind's contract.
func (b *UDPBind) mapErr(err error) error {
	switch {
	case b.state.Load() == stateClosed || errors.Is(err, net.ErrClosed):
		return net.ErrClosed
	case errors.Is(err, os.ErrDeadlineExceeded):
		return os.ErrDeadlineExceeded
	}
	return err
}

// SetReceiveDeadline implements Bind.
func (b *UDPBind) SetReceiveDeadline(t time.Time) error {
	if err := b.check(); err != nil {
		return err
	}
	if err := b.ep.SetReadDeadline(t); err != nil {
		return b.mapErr(err)
	}
	return nil
}

// BatchSize implements Bind.
func (b *UDPBind) BatchSize() int { return DefaultBatchSize }

// Stats implements Bind.
func (b *UDPBind) Stats() Stats {
	s := b.stats.snapshot()
	s.GSO = b.gsoMax.Load() > 0
	b.mu.Lock()
	s.GRO = b.gro
	s.ECN = b.ecn
	s.Stamps = b.stamps
	s.RecvBuffer, s.SendBuffer = b.rcvbuf, b.sndbuf
	b.mu.Unlock()
	return s
}

// ---- Send ----

func (tx *txState) grow(n int) {
	if n <= len(tx.sizes) {
		return
	}
	tx.hs = make([]unix.Mmsghdr, n)
	tx.names = make([]unix.RawSockaddrInet6, n)
	tx.iovs = make([]unix.Iovec, 2*n)
	tx.ctrls = make([]gsoControl, n)
	tx.segs = make([]int32, n)
	tx.first = make([]int32, n)
	tx.bytes = make([]int32, n)
	tx.sizes = make([]int32, n)
	tx.order = make([]int32, n)
}

// Send implements Bind.
func (b *UDPBind) Send(msgs []Message) error {
	if err := b.check(); err != nil {
		return err
	}
	b.txMu.Lock()
	defer b.txMu.Unlock()
	tx := &b.tx
	tx.grow(len(msgs))
	paths := len(b.socks)
	var first error

	// Group the valid messages by path, in order within a path: a
	// counting sort into tx.order.
	counts := tx.counts
	clear(counts)
	valid := 0
	for i := range msgs {
		size, err := checkMessage(&msgs[i], paths, !b.v6)
		if err != nil {
			b.stats.refused(err)
			if first == nil {
				first = err
			}
			tx.sizes[i] = -1
			continue
		}
		tx.sizes[i] = int32(size)
		counts[msgs[i].Path]++
		valid++
	}
	var at int32
	for p, c := range counts {
		counts[p] = at
		at += c
	}
	for i := range msgs {
		if tx.sizes[i] >= 0 {
			p := msgs[i].Path
			tx.order[counts[p]] = int32(i)
			counts[p]++
		}
	}

	for start := 0; start < valid; {
		path := msgs[tx.order[start]].Path
		end := int(counts[path])
		if err := b.sendPath(msgs, tx.order[start:end], path); err != nil {
			if b.state.Load() == stateClosed {
				return net.ErrClosed
			}
			if first == nil {
				first = err
			}
		}
		start = end
	}
	return first
}

// sendPath sends the messages idx of msgs, all of path, and returns the
// first error.
func (b *UDPBind) sendPath(msgs []Message, idx []int32, path int) error {
	tx := &b.tx
	rc := b.socks[path].rc
	var first error
	for len(idx) > 0 {
		nh, niov := b.pack(msgs, idx)
		rest := idx[:0]
		for done := 0; done < nh; {
			tx.off, tx.end = done, nh
			err := rc.Write(b.sendFn)
			b.stats.sendCalls.Add(1)
			if err != nil {
				clear(tx.iovs[:niov])
				for h := done; h < nh; h++ {
					b.stats.sendErrors.Add(uint64(tx.segs[h]))
				}
				return b.mapErr(err)
			}
			for h := done; h < done+tx.sent; h++ {
				b.stats.sent.Add(uint64(tx.segs[h]))
				b.stats.sentBytes.Add(uint64(tx.bytes[h]))
				if tx.segs[h] > 1 {
					b.stats.gsoSends.Add(1)
				}
			}
			done += tx.sent
			if tx.errno == 0 {
				continue
			}
			// The entry done failed.
			if tx.segs[done] > 1 {
				if off, tooBig := gsoRefused(tx.errno); off || tooBig {
					if off {
						b.gsoMax.Store(0)
					} else {
						seg := int64(tx.sizes[idx[tx.first[done]]])
						b.gsoMax.Store(max(min(b.gsoMax.Load(), seg-1), 0))
					}
					// Pack the rest again with the new limit.
					rest = idx[tx.first[done]:]
					break
				}
			}
			b.stats.sendErrors.Add(uint64(tx.segs[done]))
			if first == nil {
				m := &msgs[idx[tx.first[done]]]
				first = fmt.Errorf("udp: send on path %d to %v: %w", path, m.Addr, os.NewSyscallError("sendmmsg", tx.errno))
			}
			done++
		}
		clear(tx.iovs[:niov]) // drop references to the caller's buffers
		idx = rest
	}
	return first
}

// pack fills tx.hs with the datagrams of msgs[idx...], coalescing runs for
// GSO, and returns the number of entries and of iovecs.
func (b *UDPBind) pack(msgs []Message, idx []int32) (nh, niov int) {
	tx := &b.tx
	gsoMax := int(b.gsoMax.Load())
	for j := 0; j < len(idx); {
		m := &msgs[idx[j]]
		size := int(tx.sizes[idx[j]])
		h := &tx.hs[nh].Hdr
		h.Name = (*byte)(unsafe.Pointer(&tx.names[nh]))
		h.Namelen = putSockaddr(&tx.names[nh], m.Addr, b.v6)
		iov0 := niov
		niov = tx.gather(niov, m)
		segs, total := 1, size
		if size > 0 && size <= gsoMax {
			for j+segs < len(idx) && segs < maxGSOSegments {
				n := &msgs[idx[j+segs]]
				ns := int(tx.sizes[idx[j+segs]])
				if ns == 0 || ns > size || total+ns > MaxDatagram || n.Addr != m.Addr {
					break
				}
				niov = tx.gather(niov, n)
				total += ns
				segs++
				if ns < size {
					break
				}
			}
		}
		if niov > iov0 {
			h.Iov = &tx.iovs[iov0]
		} else {
			h.Iov = nil
		}
		h.SetIovlen(niov - iov0)
		if segs > 1 {
			c := &tx.ctrls[nh]
			c.set(size)
			h.Control = (*byte)(unsafe.Pointer(c))
			h.SetControllen(gsoControlLen)
		} else {
			h.Control = nil
			h.SetControllen(0)
		}
		h.Flags = 0
		tx.segs[nh], tx.first[nh], tx.bytes[nh] = int32(segs), int32(j), int32(total)
		nh++
		j += segs
	}
	return nh, niov
}

// gather appends m's non-empty parts as iovecs from tx.iovs[at].
func (tx *txState) gather(at int, m *Message) int {
	if m.N > 0 {
		tx.iovs[at].Base = &m.Buf[0]
		tx.iovs[at].SetLen(m.N)
		at++
	}
	if len(m.Payload) > 0 {
		tx.iovs[at].Base = &m.Payload[0]
		tx.iovs[at].SetLen(len(m.Payload))
		at++
	}
	return at
}

// send is a socket's write callback: one sendmmsg of tx.hs[off:end].
func (b *UDPBind) send(fd uintptr) bool {
	tx := &b.tx
	for {
		n, errno := sendmmsg(fd, tx.hs[tx.off:tx.end], 0)
		switch errno {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false // wait in the poller for buffer space
		}
		tx.sent, tx.errno = n, errno
		return true
	}
}
