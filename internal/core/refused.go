package core

import (
	"errors"
	"net/netip"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// ErrUnreachable: the peer's host answered a datagram with ICMP port (or
// host, or network) unreachable: nothing listens there any more.
var ErrUnreachable = errors.New("core: peer unreachable")

// UnreachableError names who refused.
type UnreachableError struct{ Peer netip.AddrPort }

func (e *UnreachableError) Error() string { return "connection refused by " + e.Peer.String() }

// Is makes errors.Is(err, ErrUnreachable) true.
func (e *UnreachableError) Is(target error) bool { return target == ErrUnreachable }

// Refused tells the endpoint that a datagram it sent to peer came back
// refused (the datapath read an ICMP unreachable). A connection still
// dialing peer fails at once. An established one fails only if the peer
// has also been silent for two round trips: ICMP is easy to forge, and a
// peer that still answers is alive whatever a stray ICMP says.
func (e *Endpoint) Refused(now monotime.Time, peer netip.AddrPort) {
	for _, c := range e.order {
		if c.closed || c.peer != peer {
			continue
		}
		c.use()
		silent := now.Sub(c.live.lastHeard) >= 2*max(c.sender().rtt.Smoothed(), MinRTO)
		if c.state == stateDialing || silent {
			c.shutdown(&UnreachableError{Peer: peer})
		}
	}
}
