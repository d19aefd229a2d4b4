//go:build linux

package udp

import (
	"os"

	"golang.org/x/sys/unix"
)

// Receive timestamps on Linux: with SO_TIMESTAMPNS the kernel hands up,
// as an SCM_TIMESTAMPNS control message beside the TOS and GRO ones, the
// CLOCK_REALTIME at which each datagram reached the socket. A
// GRO-coalesced datagram has one for all its segments (they arrived
// together). A transport that times round trips from the stamp instead of
// from its own read leaves out how long the datagram waited for the
// process, which on a busy host is a large share of a short RTT.

// enableStamps asks the kernel to stamp what socket fd receives.
func enableStamps(fd int) error {
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		return os.NewSyscallError("setsockopt SO_TIMESTAMPNS", err)
	}
	return nil
}
