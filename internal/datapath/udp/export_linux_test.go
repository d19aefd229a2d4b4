//go:build linux

package udp

import "golang.org/x/sys/unix"

// SetSendTOS makes path of b send with ECN codepoint tos instead of
// ECT(0), as a queue on the way that marked every datagram would; it lets
// the external tests produce CE without a congested network.
func SetSendTOS(b *UDPBind, path, tos int) error {
	level, opt := unix.IPPROTO_IP, unix.IP_TOS
	if b.v6 {
		level, opt = unix.IPPROTO_IPV6, unix.IPV6_TCLASS
	}
	var serr error
	if err := b.socks[path].rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), level, opt, tos) }); err != nil {
		return err
	}
	return serr
}
