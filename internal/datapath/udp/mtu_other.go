//go:build !linux

package udp

import (
	"errors"
	"net/netip"
)

// RouteMTU is the MTU of the route to peer; this system does not say.
func RouteMTU(peer netip.AddrPort) (int, error) {
	return 0, errors.New("the route's MTU is known on Linux only")
}
