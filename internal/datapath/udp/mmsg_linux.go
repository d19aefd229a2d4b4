//go:build linux

package udp

import (
	"net/netip"
	"unsafe"

	"golang.org/x/sys/unix"
)

// recvmmsg and sendmmsg are the raw system calls. They are called from
// syscall.RawConn callbacks on non-blocking sockets; a failure returns n 0
// and the errno.
//
// golang.org/x/net's ipv4/ipv6 ReadBatch would do the same, but it returns
// each source address as a freshly allocated *net.UDPAddr (two allocations
// per datagram); these keep the receive path free of allocations.
func recvmmsg(fd uintptr, hs []unix.Mmsghdr, flags int) (int, unix.Errno) {
	n, _, e := unix.Syscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&hs[0])), uintptr(len(hs)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

func sendmmsg(fd uintptr, hs []unix.Mmsghdr, flags int) (int, unix.Errno) {
	n, _, e := unix.Syscall6(unix.SYS_SENDMMSG, fd, uintptr(unsafe.Pointer(&hs[0])), uintptr(len(hs)), uintptr(flags), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), 0
}

// putSockaddr writes ap into sa in the socket's family (v6: AF_INET6, an
// IPv4 address v4-mapped) and returns its length. Zones are not kept.
func putSockaddr(sa *unix.RawSockaddrInet6, ap netip.AddrPort, v6 bool) uint32 {
	port := ap.Port()
	if !v6 {
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		*sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ap.Addr().Unmap().As4()}
		p := (*[2]byte)(unsafe.Pointer(&sa4.Port))
		p[0], p[1] = byte(port>>8), byte(port)
		return unix.SizeofSockaddrInet4
	}
	*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: ap.Addr().As16()}
	p := (*[2]byte)(unsafe.Pointer(&sa.Port))
	p[0], p[1] = byte(port>>8), byte(port)
	return unix.SizeofSockaddrInet6
}

// getSockaddr reads the address the kernel wrote into sa, an IPv4-mapped
// IPv6 address unmapped. Zones are not kept.
func getSockaddr(sa *unix.RawSockaddrInet6) netip.AddrPort {
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		p := (*[2]byte)(unsafe.Pointer(&sa4.Port))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), uint16(p[0])<<8|uint16(p[1]))
	case unix.AF_INET6:
		p := (*[2]byte)(unsafe.Pointer(&sa.Port))
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), uint16(p[0])<<8|uint16(p[1]))
	}
	return netip.AddrPort{}
}
