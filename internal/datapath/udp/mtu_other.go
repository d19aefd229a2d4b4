//go:build !linux

package udp

import (
	"errors"
	"net/netip"
)

var errRouteMTU = errors.New("the route's MTU is known on Linux only")

// RouteProbe asks for the MTU of routes to peers; this system does not
// say.
type RouteProbe struct{}

// NewRouteProbe opens a probe.
func NewRouteProbe() (*RouteProbe, error) { return &RouteProbe{}, nil }

// MTU is the MTU of the route to peer; this system does not say.
func (p *RouteProbe) MTU(peer netip.AddrPort) (int, error) { return 0, errRouteMTU }

// Close releases the probe.
func (p *RouteProbe) Close() error { return nil }

// RouteMTU is the MTU of the route to peer; this system does not say.
func RouteMTU(peer netip.AddrPort) (int, error) { return 0, errRouteMTU }
