package udp

import (
	"fmt"
	"net"
	"net/netip"
)

// IP and UDP header bytes in front of every datagram's payload.
const (
	IPv4Overhead = 20 + 8
	IPv6Overhead = 40 + 8
)

// Overhead is the IP and UDP header bytes a datagram to or from addr
// carries.
func Overhead(addr netip.Addr) int {
	if addr.Is6() && !addr.Is4In6() {
		return IPv6Overhead
	}
	return IPv4Overhead
}

// InterfaceMTU is the MTU of the interface that holds the local address
// addr: the largest IP packet its link carries.
func InterfaceMTU(addr netip.Addr) (int, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return 0, err
	}
	addr = addr.Unmap()
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Unmap() == addr {
				return ifc.MTU, nil
			}
		}
	}
	return 0, fmt.Errorf("no interface holds %v", addr)
}
