//go:build linux

package udp_test

import (
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/datapath/udp"
)

// closedPort returns a loopback address where nothing listens.
func closedPort(t *testing.T, addr netip.Addr) netip.AddrPort {
	t.Helper()
	network := "udp4"
	if addr.Is6() {
		network = "udp6"
	}
	c, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if err != nil {
		t.Skipf("no %v loopback: %v", addr, err)
	}
	ap := c.LocalAddr().(*net.UDPAddr).AddrPort()
	c.Close()
	return ap
}

// TestRefused: a datagram to a port where nothing listens comes back as
// a Refused message naming that port (the kernel's ICMP port
// unreachable), on every path, while ordinary datagrams keep flowing.
func TestRefused(t *testing.T) {
	for _, local := range []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")} {
		t.Run(local.String(), func(t *testing.T) {
			dead := closedPort(t, local)
			b := udp.NewUDPBind(udp.Config{})
			_, err := b.Open(netip.AddrPortFrom(local, 0), 2)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			live := plainConn(t, local, 0)
			for path := range 2 {
				msgs := []udp.Message{{Buf: []byte("hello"), N: 5, Addr: dead, Path: path},
					{Buf: []byte("alive"), N: 5, Addr: live.LocalAddr().(*net.UDPAddr).AddrPort(), Path: path}}
				if err := b.Send(msgs); err != nil {
					t.Fatal(err)
				}
			}
			_ = b.SetReceiveDeadline(time.Now().Add(5 * time.Second))
			refused := map[int]bool{}
			for len(refused) < 2 {
				in := make([]udp.Message, 8)
				for i := range in {
					in[i].Buf = make([]byte, 2048)
				}
				n, err := b.Receive(in)
				if err != nil {
					t.Fatalf("after %v refused: %v", refused, err)
				}
				for _, m := range in[:n] {
					if !m.Refused || m.Addr != dead || m.N != 0 {
						t.Fatalf("%+v: want a refusal from %v", m, dead)
					}
					refused[m.Path] = true
				}
			}
			if st := b.Stats(); st.Refusals != 2 {
				t.Errorf("stats: %d refusals", st.Refusals)
			}
			buf := make([]byte, 64)
			_ = live.SetReadDeadline(time.Now().Add(5 * time.Second))
			for range 2 {
				if n, _, err := live.ReadFromUDPAddrPort(buf); err != nil || string(buf[:n]) != "alive" {
					t.Fatalf("live peer: %q, %v", buf[:n], err)
				}
			}
		})
	}
}
