//go:build linux

package udp

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ECN (RFC 3168) on Linux.
//
// Send: the IP_TOS and IPV6_TCLASS socket options set the ECN field of
// every datagram the socket sends, so no message carries a control message
// of its own and GSO batches keep theirs; the segments the kernel cuts from
// one batch copy its header, mark included. A dual-stack AF_INET6 socket
// sends to IPv4-mapped addresses as an IPv4 socket would, under the IPv4
// options, so it needs both.
//
// Receive: with IP_RECVTOS and IPV6_RECVTCLASS the kernel hands up the TOS
// byte (IP_TOS, 1 byte, for IPv4, also on a dual-stack socket) or the
// traffic class (IPV6_TCLASS, an int) of each datagram as a control
// message, next to UDP_GRO's segment size. A GRO-coalesced datagram has one
// such message for all its segments, which is right: GRO never merges
// datagrams whose TOS or traffic class differ (inet_gro_flush compares the
// whole TOS byte, ipv6_gro_flush the traffic class), and a GSO batch over
// loopback left with one header. So every segment takes the mark of its
// coalesced datagram.

// ECN codepoints: the low two bits of the TOS byte or traffic class.
const (
	ecnMask = 0b11
	ecnECT0 = 0b10
	ecnCE   = 0b11
)

// enableECN makes socket fd read the ECN field of what it receives, then
// mark what it sends ECT(0). It reads first: ECT(0) asks routers to mark
// CE instead of dropping, and a mark nobody can read would hide
// congestion. On an error it puts the socket back to Not-ECT without
// reading; the Bind then runs without ECN.
func enableECN(fd int, v6 bool) (err error) {
	v4 := !v6
	if v6 {
		only, err := unix.GetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY)
		if err != nil {
			return os.NewSyscallError("getsockopt IPV6_V6ONLY", err)
		}
		v4 = only == 0
	}
	defer func() {
		if err != nil {
			disableECN(fd)
		}
	}()
	set := func(level, opt, value int, name string) error {
		if err := unix.SetsockoptInt(fd, level, opt, value); err != nil {
			return os.NewSyscallError("setsockopt "+name, err)
		}
		return nil
	}
	if v6 {
		if err := set(unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 1, "IPV6_RECVTCLASS"); err != nil {
			return err
		}
	}
	if v4 {
		if err := set(unix.IPPROTO_IP, unix.IP_RECVTOS, 1, "IP_RECVTOS"); err != nil {
			return err
		}
	}
	if v6 {
		if err := set(unix.IPPROTO_IPV6, unix.IPV6_TCLASS, ecnECT0, "IPV6_TCLASS"); err != nil {
			return err
		}
	}
	if v4 {
		if err := set(unix.IPPROTO_IP, unix.IP_TOS, ecnECT0, "IP_TOS"); err != nil {
			return err
		}
	}
	return nil
}

// disableECN undoes what enableECN may have done on fd, as far as the
// socket lets it; the options of the other family fail harmlessly.
func disableECN(fd int) {
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_TOS, 0)
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_TCLASS, 0)
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_RECVTOS, 0)
	_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_RECVTCLASS, 0)
}

// rxControl holds the control messages of one received datagram: at most
// UDP_GRO's and IP_TOS's or IPV6_TCLASS's, CMSG_SPACE(4) = 24 bytes each on
// 64-bit systems, and SCM_TIMESTAMPNS's, CMSG_SPACE(16) = 32. The uint64s
// keep the headers aligned.
type rxControl [10]uint64

const rxControlLen = int(unsafe.Sizeof(rxControl{}))

// rxMeta is what a datagram's control messages say: seg is the segment
// size of a coalesced datagram (0 without a UDP_GRO message), ce whether
// it arrived marked CE (false without a TOS or traffic class message),
// stamp the kernel's receive time in Unix nanoseconds (0 without
// SCM_TIMESTAMPNS).
type rxMeta struct {
	seg   int
	ce    bool
	stamp int64
}

// parseControl reads the first n bytes of c, as the kernel filled them.
// A malformed or cut message ends the walk with what was found before it.
func parseControl(c *rxControl, n int) (m rxMeta) {
	hlen := unix.CmsgLen(0)
	n = min(n, rxControlLen)
	for off := 0; off+hlen <= n; {
		h := (*unix.Cmsghdr)(unsafe.Add(unsafe.Pointer(c), off))
		l := int(h.Len)
		if l < hlen || off+l > n {
			break
		}
		data := unsafe.Add(unsafe.Pointer(c), off+hlen)
		switch {
		case h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO && l >= unix.CmsgLen(4):
			m.seg = int(*(*int32)(data))
		case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_TOS && l >= unix.CmsgLen(1):
			m.ce = *(*byte)(data)&ecnMask == ecnCE
		case h.Level == unix.IPPROTO_IPV6 && h.Type == unix.IPV6_TCLASS && l >= unix.CmsgLen(4):
			m.ce = *(*int32)(data)&ecnMask == ecnCE
		case h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && l >= unix.CmsgLen(int(unsafe.Sizeof(unix.Timespec{}))):
			m.stamp = (*unix.Timespec)(data).Nano()
		}
		off += unix.CmsgSpace(l - hlen)
	}
	return m
}
