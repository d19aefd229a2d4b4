//go:build linux

package udp

import "golang.org/x/sys/unix"

// UDP segmentation offload (Linux 4.18+ for GSO, 5.0+ for GRO).
//
// GSO: one sendmmsg entry carries several datagrams of equal size (the last
// may be shorter) to one destination, with a UDP_SEGMENT control message
// giving the size; the kernel (or the NIC) cuts it into datagrams late, so
// the stack is traversed once per batch instead of once per datagram.
//
// GRO: with the UDP_GRO socket option the kernel may hand up several
// datagrams of one flow as one, with a UDP_GRO control message giving the
// segment size (read by parseControl, ecn_linux.go); Receive splits them
// again. Over loopback a GSO batch reaches a GRO socket whole.

// maxGSOSegments is the most segments of one GSO send (the kernel's
// UDP_MAX_SEGMENTS of older kernels; newer ones take 128).
const maxGSOSegments = 64

// gsoControl is a UDP_SEGMENT control message, laid out as the kernel
// reads it: the header, then the uint16 segment size at CMSG_DATA.
type gsoControl struct {
	hdr  unix.Cmsghdr
	size uint16
	_    [6]byte
}

var gsoControlLen = unix.CmsgSpace(2)

func (c *gsoControl) set(size int) {
	c.hdr.Level = unix.SOL_UDP
	c.hdr.Type = unix.UDP_SEGMENT
	c.hdr.SetLen(unix.CmsgLen(2))
	c.size = uint16(size)
}

// supportsGSO probes for UDP_SEGMENT on socket fd.
func supportsGSO(fd int) bool {
	_, err := unix.GetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_SEGMENT)
	return err == nil
}

// enableGRO turns UDP_GRO on for socket fd.
func enableGRO(fd int) error {
	return unix.SetsockoptInt(fd, unix.IPPROTO_UDP, unix.UDP_GRO, 1)
}

// gsoRefused reports whether errno, from a send that carried a UDP_SEGMENT
// message, says the kernel or the device will not segment: off for EIO (no
// checksum offload), ENOPROTOOPT or EOPNOTSUPP (no GSO); tooBig for
// EMSGSIZE or EINVAL (older kernels), a segment larger than the route's MTU
// allows, among other causes.
func gsoRefused(errno unix.Errno) (off, tooBig bool) {
	switch errno {
	case unix.EIO, unix.ENOPROTOOPT, unix.EOPNOTSUPP:
		return true, false
	case unix.EMSGSIZE, unix.EINVAL:
		return false, true
	}
	return false, false
}

// setBuffer sets a socket buffer size: the FORCE option first, which
// passes the system's cap when the process may (CAP_NET_ADMIN), else the
// plain one. It returns the size the kernel reports.
func setBuffer(fd, force, plain, size int) int {
	if unix.SetsockoptInt(fd, unix.SOL_SOCKET, force, size) != nil {
		_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, plain, size)
	}
	got, _ := unix.GetsockoptInt(fd, unix.SOL_SOCKET, plain)
	return got
}
