//go:build linux

package udp

import (
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestControlLayout(t *testing.T) {
	if off := unsafe.Offsetof(gsoControl{}.size); off != uintptr(unix.CmsgLen(0)) {
		t.Errorf("gsoControl.size at %d, CMSG_DATA at %d", off, unix.CmsgLen(0))
	}
	if unsafe.Sizeof(gsoControl{}) < uintptr(gsoControlLen) {
		t.Errorf("gsoControl is %d bytes, CMSG_SPACE(2) is %d", unsafe.Sizeof(gsoControl{}), gsoControlLen)
	}
}

// TestGSOSegmentTooBig sends GSO batches from a socket whose path MTU
// (IPV6_MTU) is smaller than the segments: the kernel refuses them
// (EMSGSIZE, or EINVAL on older kernels), the Bind sends them one by one
// (fragmented) and stops coalescing datagrams that large, but keeps GSO
// for smaller ones.
func TestGSOSegmentTooBig(t *testing.T) {
	a, b := NewUDPBind(Config{}), NewUDPBind(Config{})
	lo := netip.IPv6Loopback()
	if _, err := a.Open(netip.AddrPortFrom(lo, 0), 1); err != nil {
		t.Skipf("no IPv6 loopback: %v", err)
	}
	defer a.Close()
	ports, err := b.Open(netip.AddrPortFrom(lo, 0), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if !a.Stats().GSO {
		t.Skip("kernel lacks UDP GSO")
	}
	var serr error
	a.socks[0].rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_MTU, 1280)
	})
	if serr != nil {
		t.Skipf("IPV6_MTU: %v", serr)
	}
	to := netip.AddrPortFrom(lo, ports[0])
	recv := make([]Message, 16)
	for i := range recv {
		recv[i].Buf = make([]byte, 8192)
	}
	b.SetReceiveDeadline(time.Now().Add(10 * time.Second))
	for _, size := range []int{4000, 1000} {
		before := a.Stats()
		msgs := make([]Message, 10)
		for i := range msgs {
			msgs[i] = Message{Buf: make([]byte, size), N: size, Addr: to}
			msgs[i].Buf[0] = byte(i)
		}
		if err := a.Send(msgs); err != nil {
			t.Fatalf("Send of %d-byte datagrams: %v", size, err)
		}
		for got := 0; got < len(msgs); {
			n, err := b.Receive(recv)
			if err != nil {
				t.Fatalf("Receive of %d-byte datagrams after %d: %v", size, got, err)
			}
			for _, m := range recv[:n] {
				if m.N != size || int(m.Buf[0]) != got {
					t.Fatalf("datagram %d: %d bytes, number %d", got, m.N, m.Buf[0])
				}
				got++
			}
		}
		st := a.Stats()
		t.Logf("%d bytes: %d GSO sends, %d send calls, GSO limit %d", size, st.GSOSends-before.GSOSends, st.SendCalls-before.SendCalls, a.gsoMax.Load())
		if !st.GSO || st.SendErrors != 0 {
			t.Errorf("after %d-byte datagrams: GSO %v, %d send errors", size, st.GSO, st.SendErrors)
		}
		if size == 1000 && st.GSOSends == before.GSOSends {
			t.Errorf("1000-byte datagrams were not coalesced")
		}
	}
	if got := a.gsoMax.Load(); got != 3999 {
		t.Errorf("GSO limit %d after a refusal of 4000-byte segments, want 3999", got)
	}
}
