//go:build linux

package udp

import (
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// RouteMTU is the MTU of the route to peer: the largest IP packet the
// kernel sends that way unfragmented (the link's MTU, or less where path
// MTU discovery has learnt less). It asks a connected UDP socket, which
// sends nothing.
func RouteMTU(peer netip.AddrPort) (int, error) {
	c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(peer))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	rc, err := c.SyscallConn()
	if err != nil {
		return 0, err
	}
	level, opt, name := unix.IPPROTO_IP, unix.IP_MTU, "IP_MTU"
	if peer.Addr().Is6() && !peer.Addr().Is4In6() {
		level, opt, name = unix.IPPROTO_IPV6, unix.IPV6_MTU, "IPV6_MTU"
	}
	var mtu int
	var serr error
	if err := rc.Control(func(fd uintptr) { mtu, serr = unix.GetsockoptInt(int(fd), level, opt) }); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, os.NewSyscallError("getsockopt "+name, serr)
	}
	return mtu, nil
}
