//go:build linux

package udp

import (
	"errors"
	"net"
	"net/netip"
	"os"

	"golang.org/x/sys/unix"
)

// RouteProbe asks the kernel for the MTU of routes to peers: the largest
// IP packet it sends each way unfragmented (the link's MTU, or less where
// path MTU discovery has learnt less). It holds an unconnected UDP
// socket per address family, made when the probe is, so it reads the
// routes of the network namespace it was made in, whichever thread asks
// later; asking connects the socket, which sends nothing. It is not safe
// for concurrent use.
type RouteProbe struct{ fd4, fd6 int }

// NewRouteProbe opens a probe in the calling thread's network namespace.
// Without IPv6 it answers for IPv4 peers only.
func NewRouteProbe() (*RouteProbe, error) {
	fd4, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	fd6, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fd6 = -1
	}
	return &RouteProbe{fd4: fd4, fd6: fd6}, nil
}

// MTU is the MTU of the route to peer.
func (p *RouteProbe) MTU(peer netip.AddrPort) (int, error) {
	addr := peer.Addr().Unmap()
	fd, level, opt, name := p.fd4, unix.IPPROTO_IP, unix.IP_MTU, "IP_MTU"
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: int(peer.Port()), Addr: addr.As4()}
	if !addr.Is4() {
		fd, level, opt, name = p.fd6, unix.IPPROTO_IPV6, unix.IPV6_MTU, "IPV6_MTU"
		sa6 := &unix.SockaddrInet6{Port: int(peer.Port()), Addr: addr.As16()}
		if z := addr.Zone(); z != "" { // a link-local address names its interface
			if ifi, err := net.InterfaceByName(z); err == nil {
				sa6.ZoneId = uint32(ifi.Index)
			}
		}
		sa = sa6
		if fd < 0 {
			return 0, errors.New("no IPv6 here")
		}
	}
	if err := unix.Connect(fd, sa); err != nil {
		return 0, os.NewSyscallError("connect", err)
	}
	mtu, err := unix.GetsockoptInt(fd, level, opt)
	if err != nil {
		return 0, os.NewSyscallError("getsockopt "+name, err)
	}
	return mtu, nil
}

// Close releases the probe's sockets.
func (p *RouteProbe) Close() error {
	if p.fd6 >= 0 {
		unix.Close(p.fd6)
	}
	return unix.Close(p.fd4)
}

// RouteMTU is the MTU of the route to peer, asked in the calling thread's
// network namespace.
func RouteMTU(peer netip.AddrPort) (int, error) {
	p, err := NewRouteProbe()
	if err != nil {
		return 0, err
	}
	defer p.Close()
	return p.MTU(peer)
}
