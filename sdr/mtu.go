package sdr

import (
	"net/netip"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/datapath/udp"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// MaxAutoMTU caps the MTU a connection takes from its route (Config.MTU
// zero). Larger payloads buy little more per system call and cost more
// per lost packet; this one, headers included, fits a 9000-byte jumbo
// frame.
const MaxAutoMTU = 8192

// fallbackLinkMTU stands in where the system cannot say a route's MTU:
// Ethernet's, the commonest, so that nothing is fragmented on it.
const fallbackLinkMTU = 1500

// routePayload is the MTU a connection to peer takes when Config.MTU is
// zero: the largest payload that leaves in one IP packet on the route.
func routePayload(peer netip.AddrPort) int {
	mtu, err := udp.RouteMTU(peer)
	return payloadOr(mtu, err, peer.Addr())
}

// listenerRoutes gives a listener's core the MTU of the route to each
// peer that dials it, through a probe made on the caller's thread: the
// core asks from the endpoint's loop, which may run in another network
// namespace than the listener's sockets. The endpoint closes the probe.
func listenerRoutes(cc *core.Config) (*udp.RouteProbe, error) {
	probe, err := udp.NewRouteProbe()
	if err != nil {
		return nil, err
	}
	cc.PathMTU = func(peer netip.AddrPort) int {
		mtu, err := probe.MTU(peer)
		return payloadOr(mtu, err, peer.Addr())
	}
	return probe, nil
}

// interfacePayload is the MTU a Datagram endpoint on local takes when
// Config.MTU is zero: its peers must agree on one without a handshake,
// and hosts on one link share the link's MTU.
func interfacePayload(local netip.Addr) int {
	mtu, err := udp.InterfaceMTU(local)
	return payloadOr(mtu, err, local)
}

// payloadOr is payloadFor a link MTU the system gave, or Ethernet's where
// it could not (err).
func payloadOr(linkMTU int, err error, addr netip.Addr) int {
	if err != nil {
		linkMTU = fallbackLinkMTU
	}
	return payloadFor(linkMTU, addr)
}

// payloadFor is the payload one packet carries in an IP packet of
// linkMTU bytes to or from addr, at most MaxAutoMTU.
func payloadFor(linkMTU int, addr netip.Addr) int {
	return max(core.MinMTU, min(MaxAutoMTU, linkMTU-udp.Overhead(addr)-wire.MaxHeaderLen-core.TrailerLen))
}
