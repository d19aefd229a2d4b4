//go:build linux

package udp

import (
	"net/netip"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// groSlots is the number of 64 KiB datagrams one recvmmsg reads with GRO.
const (
	groSlots    = 32
	groSlotSize = 1 << 16
)

type rxState struct {
	msgs   []Message // the caller's batch, during Receive
	n      int       // msgs[:n] are filled
	bytes  int       // the bytes of msgs[:n]
	ce     int       // the datagrams of msgs[:n] marked CE
	err    error
	events []unix.EpollEvent
	hs     []unix.Mmsghdr
	names  []unix.RawSockaddrInet6
	iovs   []unix.Iovec
	ctrls  []rxControl

	// the recvmmsg call of recv
	k, got int
	errno  unix.Errno

	// GRO: the read datagrams pend[pcur:npend] wait to be split; poff is
	// the offset of the next segment in pend[pcur].
	slab              []byte
	pend              []groPending
	pcur, npend, poff int
}

type groPending struct {
	slot, n, seg int
	addr         netip.AddrPort
	path         int
	ce           bool  // every segment shares the datagram's mark
	stamp        int64 // and its receive time
}

func (rx *rxState) grow(n int) {
	if n <= len(rx.hs) {
		return
	}
	rx.hs = make([]unix.Mmsghdr, n)
	rx.names = make([]unix.RawSockaddrInet6, n)
	rx.iovs = make([]unix.Iovec, n)
	rx.ctrls = make([]rxControl, n)
}

// Receive implements Bind.
func (b *UDPBind) Receive(msgs []Message) (int, error) {
	if err := b.check(); err != nil {
		return 0, err
	}
	if len(msgs) == 0 {
		return 0, nil
	}
	b.rxMu.Lock()
	defer b.rxMu.Unlock()
	rx := &b.rx
	rx.msgs, rx.n, rx.bytes, rx.ce, rx.err = msgs, 0, 0, 0, nil
	defer func() { rx.msgs = nil }()
	if rx.pcur < rx.npend {
		b.drain()
	}
	var err error
	if rx.n == 0 {
		err = b.eprc.Read(b.pollFn)
	}
	n := rx.n
	if n > 0 {
		b.stats.received.Add(uint64(n))
		b.stats.receivedBytes.Add(uint64(rx.bytes))
		if rx.ce > 0 {
			b.stats.ceReceived.Add(uint64(rx.ce))
		}
		return n, nil
	}
	if rx.err != nil {
		err = rx.err
	}
	return 0, b.mapErr(err)
}

// poll is the epoll descriptor's read callback: it reads the ready sockets
// into the caller's batch, and returns false (park) when none is ready.
func (b *UDPBind) poll(uintptr) bool {
	rx := &b.rx
	for {
		ne, err := unix.EpollWait(b.epfd, rx.events, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			rx.err = os.NewSyscallError("epoll_wait", err)
			return true
		}
		if ne == 0 {
			return false
		}
		for _, ev := range rx.events[:ne] {
			if ev.Events&unix.EPOLLERR != 0 {
				// The error queue holds refusals; a plain read may not
				// see them once the socket's error was reported.
				if err := b.readRefusals(int(ev.Fd)); err != nil {
					rx.err = err
					return true
				}
			}
			if err := b.read(int(ev.Fd)); err != nil {
				rx.err = err
				return true
			}
			if rx.n == len(rx.msgs) || rx.pcur < rx.npend {
				break
			}
		}
		if rx.n > 0 {
			return true
		}
		// Only dropped datagrams or spurious readiness: ask again, as a
		// socket still readable would not wake the poller again.
	}
}

// read reads path's socket once with recvmmsg, into the caller's batch or,
// with GRO, into the slots.
func (b *UDPBind) read(path int) error {
	rx := &b.rx
	if b.gro {
		rx.k = groSlots
		for i := range groSlots {
			h := &rx.hs[i].Hdr
			h.Name = (*byte)(unsafe.Pointer(&rx.names[i]))
			h.Namelen = unix.SizeofSockaddrInet6
			iov := &rx.iovs[i]
			iov.Base = &rx.slab[i*groSlotSize]
			iov.SetLen(groSlotSize)
			h.Iov = iov
			h.SetIovlen(1)
			h.Control = (*byte)(unsafe.Pointer(&rx.ctrls[i]))
			h.SetControllen(rxControlLen)
			h.Flags = 0
		}
	} else {
		msgs := rx.msgs[rx.n:]
		rx.grow(len(msgs))
		rx.k = len(msgs)
		for i := range msgs {
			h := &rx.hs[i].Hdr
			h.Name = (*byte)(unsafe.Pointer(&rx.names[i]))
			h.Namelen = unix.SizeofSockaddrInet6
			iov := &rx.iovs[i]
			if buf := msgs[i].Buf; len(buf) > 0 {
				iov.Base = &buf[0]
				iov.SetLen(len(buf))
			} else {
				*iov = unix.Iovec{}
			}
			h.Iov = iov
			h.SetIovlen(1)
			// Always room for control messages: a path may read the
			// TOS even when Stats().ECN is off (another path failed).
			h.Control = (*byte)(unsafe.Pointer(&rx.ctrls[i]))
			h.SetControllen(rxControlLen)
			h.Flags = 0
		}
	}
	err := b.socks[path].rc.Read(b.recvFn)
	b.stats.recvCalls.Add(1)
	if err != nil {
		return err
	}
	switch {
	case rx.errno == 0:
	case rx.errno == unix.EAGAIN:
		return nil
	case refusal(rx.errno):
		// The kernel reports a pending error before the datagrams queued
		// ahead of it: read those into the batch too, so that a receiver
		// can hear what the peer sent before it went away (its CLOSE,
		// say) before it hears that the peer is gone.
		if err := b.readRefusals(path); err != nil {
			return err
		}
		// With GRO the slots are free to read into again unless
		// segments still wait in them (TestReadAfterRefusal).
		if rx.n < len(rx.msgs) && (!b.gro || rx.pcur >= rx.npend) {
			return b.read(path)
		}
		return nil
	default:
		return os.NewSyscallError("recvmmsg", rx.errno)
	}
	if b.gro {
		b.split(path)
		return nil
	}
	msgs := rx.msgs[rx.n:]
	w := 0
	for i := range rx.got {
		h := &rx.hs[i]
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			b.stats.truncated.Add(1)
			continue
		}
		if w != i {
			msgs[w].Buf, msgs[i].Buf = msgs[i].Buf, msgs[w].Buf
		}
		m := &msgs[w]
		m.N = int(h.Len)
		m.Addr = getSockaddr(&rx.names[i])
		m.Path, m.Refused = path, false
		meta := parseControl(&rx.ctrls[i], int(h.Hdr.Controllen))
		m.CE, m.Stamp = meta.ce, meta.stamp
		if m.CE {
			rx.ce++
		}
		rx.bytes += m.N
		w++
	}
	rx.n += w
	return nil
}

// recv is a socket's read callback: one non-blocking recvmmsg.
func (b *UDPBind) recv(fd uintptr) bool {
	rx := &b.rx
	for {
		n, errno := recvmmsg(fd, rx.hs[:rx.k], unix.MSG_DONTWAIT)
		if errno == unix.EINTR {
			continue
		}
		rx.got, rx.errno = n, errno
		return true
	}
}

// split records the datagrams read into the GRO slots and drains them.
func (b *UDPBind) split(path int) {
	rx := &b.rx
	rx.pcur, rx.npend, rx.poff = 0, 0, 0
	for i := range rx.got {
		h := &rx.hs[i]
		if h.Hdr.Flags&unix.MSG_TRUNC != 0 {
			b.stats.truncated.Add(1)
			continue
		}
		p := groPending{slot: i, n: int(h.Len), addr: getSockaddr(&rx.names[i]), path: path}
		meta := parseControl(&rx.ctrls[i], int(h.Hdr.Controllen))
		p.seg, p.ce, p.stamp = meta.seg, meta.ce, meta.stamp
		if p.seg <= 0 || p.seg >= p.n {
			p.seg = p.n
		} else {
			b.stats.groReceives.Add(1)
		}
		rx.pend[rx.npend] = p
		rx.npend++
	}
	b.drain()
}

// drain copies pending GRO segments into the caller's batch.
func (b *UDPBind) drain() {
	rx := &b.rx
	for rx.pcur < rx.npend && rx.n < len(rx.msgs) {
		p := &rx.pend[rx.pcur]
		end := min(rx.poff+p.seg, p.n)
		d := rx.slab[p.slot*groSlotSize+rx.poff : p.slot*groSlotSize+end]
		if m := &rx.msgs[rx.n]; len(d) > len(m.Buf) {
			b.stats.truncated.Add(1)
		} else {
			m.N = copy(m.Buf, d)
			m.Addr = p.addr
			m.Path = p.path
			m.CE, m.Stamp = p.ce, p.stamp
			if p.ce {
				rx.ce++
			}
			rx.bytes += m.N
			rx.n++
		}
		rx.poff = end
		if rx.poff >= p.n {
			rx.pcur++
			rx.poff = 0
		}
	}
}
