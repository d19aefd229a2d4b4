//go:build linux

package udp

import (
	"net/netip"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmsg is one control message for TestParseControl.
type cmsg struct {
	level, typ int32
	data       []byte
}

func int32Data(v int32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&v)), 4)
}

// putControl lays msgs out as the kernel would and returns the length.
func putControl(c *rxControl, msgs []cmsg) int {
	b := unsafe.Slice((*byte)(unsafe.Pointer(c)), rxControlLen)
	off := 0
	for _, m := range msgs {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&b[off]))
		h.Level, h.Type = m.level, m.typ
		h.SetLen(unix.CmsgLen(len(m.data)))
		copy(b[off+unix.CmsgLen(0):], m.data)
		off += unix.CmsgSpace(len(m.data))
	}
	return off
}

// cutInto is how many bytes to cut off the end of a control buffer to cut
// into the data, not just the padding, of a last message of n data bytes.
func cutInto(n int) int { return unix.CmsgSpace(n) - unix.CmsgLen(n) + 1 }

func TestParseControl(t *testing.T) {
	gro := cmsg{unix.SOL_UDP, unix.UDP_GRO, int32Data(1400)}
	tos := func(v byte) cmsg { return cmsg{unix.IPPROTO_IP, unix.IP_TOS, []byte{v}} }
	tclass := func(v int32) cmsg { return cmsg{unix.IPPROTO_IPV6, unix.IPV6_TCLASS, int32Data(v)} }
	ts := unix.NsecToTimespec(1_764_000_000_123_456_789)
	stamp := cmsg{unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, unsafe.Slice((*byte)(unsafe.Pointer(&ts)), unsafe.Sizeof(ts))}
	for _, tc := range []struct {
		name  string
		msgs  []cmsg
		cut   int // bytes to cut off the end
		seg   int
		ce    bool
		stamp int64
	}{
		{name: "none"},
		{name: "gro", msgs: []cmsg{gro}, seg: 1400},
		{name: "tos-ce", msgs: []cmsg{tos(ecnCE)}, ce: true},
		{name: "tos-ect0", msgs: []cmsg{tos(ecnECT0)}},
		{name: "tos-dscp-ce", msgs: []cmsg{tos(0xb8 | ecnCE)}, ce: true},
		{name: "tos-dscp-ect0", msgs: []cmsg{tos(0xb8 | ecnECT0)}},
		{name: "tclass-ce", msgs: []cmsg{tclass(ecnCE)}, ce: true},
		{name: "tclass-ect1", msgs: []cmsg{tclass(0b01)}},
		{name: "tos-ce-then-gro", msgs: []cmsg{tos(ecnCE), gro}, seg: 1400, ce: true},
		{name: "gro-then-tclass-ce", msgs: []cmsg{gro, tclass(ecnCE)}, seg: 1400, ce: true},
		{name: "gro-cut", msgs: []cmsg{tos(ecnCE), gro}, cut: cutInto(4), ce: true},
		{name: "tos-cut", msgs: []cmsg{gro, tos(ecnCE)}, cut: cutInto(1), seg: 1400},
		{name: "unknown", msgs: []cmsg{{unix.IPPROTO_IP, unix.IP_TTL, int32Data(64)}, tos(ecnCE)}, ce: true},
		{name: "stamp", msgs: []cmsg{stamp}, stamp: 1_764_000_000_123_456_789},
		{name: "all three", msgs: []cmsg{gro, tos(ecnCE), stamp}, seg: 1400, ce: true, stamp: 1_764_000_000_123_456_789},
		{name: "stamp-cut", msgs: []cmsg{gro, stamp}, cut: cutInto(16), seg: 1400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c rxControl
			n := putControl(&c, tc.msgs) - tc.cut
			got := parseControl(&c, n)
			if want := (rxMeta{tc.seg, tc.ce, tc.stamp}); got != want {
				t.Errorf("parseControl = %+v; want %+v", got, want)
			}
		})
	}
	// Room for the three messages the kernel may write.
	if need := 2*unix.CmsgSpace(4) + unix.CmsgSpace(int(unsafe.Sizeof(ts))); rxControlLen < need {
		t.Errorf("rxControl is %d bytes, UDP_GRO, IPV6_TCLASS and SCM_TIMESTAMPNS take %d", rxControlLen, need)
	}
}

// TestECNCoalesced sends GSO batches from a Bind whose socket marks CE
// itself (as a queue discipline on the way would mark the batch), then
// ECT(0), to a Bind with and without GRO: every segment of a coalesced
// datagram must take its mark, and the next batch must not inherit it.
func TestECNCoalesced(t *testing.T) {
	for _, lo := range []netip.Addr{netip.AddrFrom4([4]byte{127, 0, 0, 1}), netip.IPv6Loopback()} {
		for _, rcv := range []Config{{}, {DisableGRO: true}} {
			name := "ipv4"
			if lo.Is6() {
				name = "ipv6"
			}
			if rcv.DisableGRO {
				name += "/no-gro"
			} else {
				name += "/gro"
			}
			t.Run(name, func(t *testing.T) { testECNCoalesced(t, lo, rcv) })
		}
	}
}

func testECNCoalesced(t *testing.T, lo netip.Addr, rcv Config) {
	a, b := NewUDPBind(Config{}), NewUDPBind(rcv)
	if _, err := a.Open(netip.AddrPortFrom(lo, 0), 1); err != nil {
		t.Skipf("no %v loopback: %v", lo, err)
	}
	defer a.Close()
	ports, err := b.Open(netip.AddrPortFrom(lo, 0), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if sa, sb := a.Stats(), b.Stats(); !sa.GSO || !sa.ECN || !sb.ECN {
		t.Skipf("needs GSO and ECN: sender GSO %v ECN %v, receiver ECN %v", sa.GSO, sa.ECN, sb.ECN)
	}
	to := netip.AddrPortFrom(lo, ports[0])
	recv := make([]Message, 7) // not a divisor of 32: segments of one datagram span Receives
	for i := range recv {
		recv[i].Buf = make([]byte, 2048)
	}
	b.SetReceiveDeadline(time.Now().Add(10 * time.Second))
	for round, tos := range []int{ecnCE, ecnECT0, ecnCE} {
		if err := SetSendTOS(a, 0, tos); err != nil {
			t.Fatal(err)
		}
		msgs := make([]Message, 32)
		for i := range msgs {
			msgs[i] = Message{Buf: make([]byte, 1200), N: 1200, Addr: to}
			msgs[i].Buf[0] = byte(i)
		}
		before := a.Stats().GSOSends
		if err := a.Send(msgs); err != nil {
			t.Fatal(err)
		}
		if a.Stats().GSOSends == before {
			t.Errorf("round %d: the batch was not sent with GSO", round)
		}
		for got := 0; got < len(msgs); {
			n, err := b.Receive(recv)
			if err != nil {
				t.Fatalf("round %d, after %d datagrams: %v", round, got, err)
			}
			for _, m := range recv[:n] {
				if m.N != 1200 || int(m.Buf[0]) != got {
					t.Fatalf("round %d: datagram %d is %d bytes, number %d", round, got, m.N, m.Buf[0])
				}
				if m.CE != (tos == ecnCE) {
					t.Errorf("round %d (TOS %02b): datagram %d CE %v", round, tos, got, m.CE)
				}
				got++
			}
		}
	}
	st := b.Stats()
	t.Logf("receiver: GRO %v, %d coalesced datagrams, %d CE", st.GRO, st.GROReceives, st.CEReceived)
	if st.CEReceived != 64 {
		t.Errorf("Stats().CEReceived = %d, want 64", st.CEReceived)
	}
	if !rcv.DisableGRO && st.GRO && st.GROReceives == 0 {
		t.Errorf("GRO on, but no datagram arrived coalesced: the test did not exercise it")
	}
}
