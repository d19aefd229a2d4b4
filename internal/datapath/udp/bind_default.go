//go:build !linux

package udp

// UDPBind is the Bind of real UDP sockets. Without Linux's recvmmsg,
// sendmmsg and UDP offloads it is StdBind.
type UDPBind = StdBind

// NewUDPBind returns an unopened UDPBind.
func NewUDPBind(cfg Config) *UDPBind { return NewStdBind(cfg) }
