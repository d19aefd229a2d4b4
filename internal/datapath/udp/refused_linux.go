//go:build linux

package udp

import (
	"net/netip"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Refusals on Linux. An unconnected UDP socket hears nothing of the ICMP
// errors its datagrams provoke unless IP_RECVERR (IPV6_RECVERR) is set;
// then the kernel queues each one on the socket's error queue, with the
// datagram's original destination, and the next receive fails once with
// the error's errno. The Bind reads the queue and hands each "port
// unreachable" (or host or network unreachable) up as a Message with
// Refused set, so a dialer learns at once that nothing listens there.

// enableRecvErr turns on IP_RECVERR, and IPV6_RECVERR on an AF_INET6
// socket (a dual-stack socket needs both).
func enableRecvErr(fd int, v6 bool) error {
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVERR, 1); err != nil && !v6 {
		return os.NewSyscallError("setsockopt IP_RECVERR", err)
	}
	if v6 {
		if err := unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVERR, 1); err != nil {
			return os.NewSyscallError("setsockopt IPV6_RECVERR", err)
		}
	}
	return nil
}

// refusal reports whether errno is what a receive returns when an ICMP
// error for one of our datagrams came back.
func refusal(errno unix.Errno) bool {
	switch errno {
	case unix.ECONNREFUSED, unix.EHOSTUNREACH, unix.ENETUNREACH, unix.EHOSTDOWN, unix.ENETDOWN:
		return true
	}
	return false
}

// readRefusals moves what path's error queue holds into the caller's
// batch, as Refused messages, while there is room; what does not fit stays
// queued and wakes the poller again.
func (b *UDPBind) readRefusals(path int) error {
	rx := &b.rx
	var oob [256]byte
	var data [64]byte
	for rx.n < len(rx.msgs) {
		var addr netip.AddrPort
		var errno unix.Errno
		done := false
		err := b.socks[path].rc.Read(func(fd uintptr) bool {
			_, oobn, _, from, err := unix.Recvmsg(int(fd), data[:], oob[:], unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
			if err != nil {
				done = true // EAGAIN: the queue is empty
				return true
			}
			addr = sockaddrPort(from)
			errno = extendedErrno(oob[:oobn])
			return true
		})
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if !refusal(errno) || !addr.IsValid() {
			continue // not an unreachable (a too-big message, say): nothing to report
		}
		m := &rx.msgs[rx.n]
		m.N, m.Addr, m.Path, m.CE, m.Stamp, m.Refused = 0, addr, path, false, 0, true
		rx.n++
		b.stats.refusals.Add(1)
	}
	return nil
}

// extendedErrno returns the errno of the sock_extended_err in a
// MSG_ERRQUEUE control message, 0 if there is none.
func extendedErrno(oob []byte) unix.Errno {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0
	}
	for _, m := range msgs {
		v4 := m.Header.Level == unix.IPPROTO_IP && m.Header.Type == unix.IP_RECVERR
		v6 := m.Header.Level == unix.IPPROTO_IPV6 && m.Header.Type == unix.IPV6_RECVERR
		if (v4 || v6) && len(m.Data) >= int(unsafe.Sizeof(unix.SockExtendedErr{})) {
			e := (*unix.SockExtendedErr)(unsafe.Pointer(&m.Data[0]))
			return unix.Errno(e.Errno)
		}
	}
	return 0
}

func sockaddrPort(sa unix.Sockaddr) netip.AddrPort {
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	case *unix.SockaddrInet6:
		return netip.AddrPortFrom(netip.AddrFrom16(a.Addr).Unmap(), uint16(a.Port))
	}
	return netip.AddrPort{}
}
