//go:build linux

package udp_test

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sdrnet/sdrnet/internal/datapath/udp"
)

// ECN codepoints, as the tests write and read them.
const (
	notECT = 0b00
	ect0   = 0b10
	ce     = 0b11
)

// plainConn is a net.UDPConn on addr whose datagrams leave with the given
// TOS (IPv4) or traffic class (IPv6) and which reads both of what it
// receives.
func plainConn(t *testing.T, addr netip.Addr, tos int) *net.UDPConn {
	t.Helper()
	network := "udp4"
	if addr.Is6() {
		network = "udp6"
	}
	c, err := net.ListenUDP(network, net.UDPAddrFromAddrPort(netip.AddrPortFrom(addr, 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	level, optTOS, optRecv := unix.IPPROTO_IP, unix.IP_TOS, unix.IP_RECVTOS
	if addr.Is6() {
		level, optTOS, optRecv = unix.IPPROTO_IPV6, unix.IPV6_TCLASS, unix.IPV6_RECVTCLASS
	}
	if err := setsockopt(c, level, optTOS, tos); err != nil {
		t.Skipf("the kernel refuses a TOS of %#x: %v", tos, err)
	}
	if err := setsockopt(c, level, optRecv, 1); err != nil {
		t.Skipf("the kernel will not report the TOS of received datagrams: %v", err)
	}
	return c
}

func setsockopt(c *net.UDPConn, level, opt, value int) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), level, opt, value) }); err != nil {
		return err
	}
	return serr
}

// readTOS reads one datagram from c and returns it and the ECN codepoint
// of its IP header.
func readTOS(t *testing.T, c *net.UDPConn) ([]byte, int) {
	t.Helper()
	buf, oob := make([]byte, 65536), make([]byte, 128)
	c.SetReadDeadline(time.Now().Add(wait))
	n, oobn, _, _, err := c.ReadMsgUDPAddrPort(buf, oob)
	if err != nil {
		t.Fatalf("plain socket: %v", err)
	}
	cms, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		t.Fatalf("control messages: %v", err)
	}
	for _, cm := range cms {
		switch {
		case cm.Header.Level == unix.IPPROTO_IP && cm.Header.Type == unix.IP_TOS && len(cm.Data) >= 1:
			return buf[:n], int(cm.Data[0]) & 3
		case cm.Header.Level == unix.IPPROTO_IPV6 && cm.Header.Type == unix.IPV6_TCLASS && len(cm.Data) >= 4:
			return buf[:n], int(binary.NativeEndian.Uint32(cm.Data)) & 3
		}
	}
	t.Fatalf("no TOS or traffic class among %d control messages", len(cms))
	return nil, 0
}

// requireECN fails a test whose Bind runs without ECN on a system that
// lets a plain socket have it, and skips it where the system does not.
func requireECN(t *testing.T, b udp.Bind, addr netip.Addr) {
	t.Helper()
	if b.Stats().ECN {
		return
	}
	plainConn(t, addr, ect0) // skips where the options are refused
	t.Fatalf("Stats().ECN is false, but a plain %v socket takes the ECN options", addr)
}

type ecnFamily struct {
	name string
	bind netip.Addr // where the Bind opens; invalid: dual-stack
	peer netip.Addr // where the plain socket is
}

// ecnFamilies are the address families of the ECN tests: IPv4, and, where
// the system has ::1, IPv6 and a dual-stack Bind talking to either.
func ecnFamilies(t *testing.T) []ecnFamily {
	fams := []ecnFamily{{"ipv4", loop4, loop4}}
	if !hasIPv6Loopback() {
		t.Log("no IPv6 loopback (::1): IPv6 and dual-stack cases skipped")
		return fams
	}
	return append(fams,
		ecnFamily{"ipv6", loop6, loop6},
		ecnFamily{"dual-stack-to-ipv4", netip.Addr{}, loop4},
		ecnFamily{"dual-stack-to-ipv6", netip.Addr{}, loop6},
	)
}

// TestECNSend checks that the Bind's datagrams leave ECT(0), one by one
// and as GSO batches, and Not-ECT with DisableECN, by reading their TOS
// on a plain socket.
func TestECNSend(t *testing.T) {
	for _, fam := range ecnFamilies(t) {
		for _, tc := range []struct {
			name string
			cfg  udp.Config
			want int
		}{
			{"offload", udp.Config{}, ect0},
			{"plain", udp.Config{DisableGSO: true, DisableGRO: true}, ect0},
			{"disabled", udp.Config{DisableECN: true}, notECT},
		} {
			t.Run(fam.name+"/"+tc.name, func(t *testing.T) {
				rx := plainConn(t, fam.peer, notECT)
				to := rx.LocalAddr().(*net.UDPAddr).AddrPort()
				b := udp.NewUDPBind(tc.cfg)
				if _, err := b.Open(netip.AddrPortFrom(fam.bind, 0), 2); err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				if tc.want == ect0 {
					requireECN(t, b, fam.peer)
				} else if b.Stats().ECN {
					t.Fatal("Stats().ECN with DisableECN")
				}
				// 8 equal datagrams from path 1, which GSO may send as
				// one batch, and one from path 0.
				msgs := make([]udp.Message, 9)
				for i := range msgs {
					msgs[i] = udp.Message{Buf: []byte(fmt.Sprintf("datagram %d", i)), Addr: to, Path: 1}
					msgs[i].N = len(msgs[i].Buf)
				}
				msgs[8].Path = 0
				if err := b.Send(msgs); err != nil {
					t.Fatal(err)
				}
				for range msgs {
					d, ecn := readTOS(t, rx)
					if ecn != tc.want {
						t.Errorf("%q arrived with ECN codepoint %02b, want %02b", d, ecn, tc.want)
					}
				}
			})
		}
	}
}

// TestECNReceive sends datagrams marked CE, ECT(0) and Not-ECT, from
// plain sockets, interleaved, to a Bind with and without GRO and checks
// that CE is set on exactly the CE ones, whatever the caller's Messages
// held before.
func TestECNReceive(t *testing.T) {
	for _, fam := range ecnFamilies(t) {
		for _, tc := range []struct {
			name string
			cfg  udp.Config
		}{
			{"gro", udp.Config{}},
			{"no-gro", udp.Config{DisableGRO: true}},
		} {
			t.Run(fam.name+"/"+tc.name, func(t *testing.T) {
				b := udp.NewUDPBind(tc.cfg)
				ports, err := b.Open(netip.AddrPortFrom(fam.bind, 0), 2)
				if err != nil {
					t.Fatal(err)
				}
				defer b.Close()
				requireECN(t, b, fam.peer)
				senders := map[int]*net.UDPConn{}
				for _, tos := range []int{notECT, ect0, ce} {
					senders[tos] = plainConn(t, fam.peer, tos)
				}
				// Datagram i goes to path i%2 with codepoint tos[i].
				tos := []int{ce, ect0, ce, ce, notECT, ect0, ce, notECT, ect0, ce}
				for i, cp := range tos {
					to := netip.AddrPortFrom(fam.peer, ports[i%2])
					if _, err := senders[cp].WriteToUDPAddrPort([]byte{byte(i)}, to); err != nil {
						t.Fatal(err)
					}
				}
				seen := make([]bool, len(tos))
				recv := receiveMsgs(4, 64)
				for got := 0; got < len(tos); {
					for i := range recv {
						recv[i].CE = i%2 == 0 // stale values Receive must overwrite
					}
					n := recvWithin(t, b, recv)
					for _, m := range recv[:n] {
						i := int(m.Buf[0])
						if m.N != 1 || i >= len(tos) || seen[i] {
							t.Fatalf("unexpected datagram %v", m.Buf[:m.N])
						}
						seen[i] = true
						if want := tos[i] == ce; m.CE != want {
							t.Errorf("datagram %d sent with codepoint %02b: CE %v, want %v", i, tos[i], m.CE, want)
						}
						got++
					}
				}
				st := b.Stats()
				if st.CEReceived != 5 || st.Received != uint64(len(tos)) {
					t.Errorf("Stats: CEReceived %d of %d received, want 5 of %d", st.CEReceived, st.Received, len(tos))
				}
			})
		}
	}
}
