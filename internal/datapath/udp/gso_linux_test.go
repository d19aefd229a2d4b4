//go:build linux

package udp_test

import (
	"encoding/binary"
	"testing"

	"github.com/sdrnet/sdrnet/internal/datapath/udp"
)

// TestGSOGRO sends 64 datagrams to one peer in one Send, which GSO
// coalesces, and checks that they arrive as 64 datagrams, in order and
// intact, whether or not GRO kept them coalesced on the way.
func TestGSOGRO(t *testing.T) {
	cases := []struct {
		name   string
		size   func(i int) int
		gather bool
		rcv    udp.Config
	}{
		{"equal", func(int) int { return 1200 }, false, udp.Config{}},
		{"last-shorter", func(i int) int { return map[bool]int{true: 333, false: 1200}[i == 63] }, false, udp.Config{}},
		{"gather", func(int) int { return 4096 }, true, udp.Config{}},
		{"receiver-without-gro", func(int) int { return 1472 }, false, udp.Config{DisableGRO: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := open(t, udp.NewUDPBind(udp.Config{}), loop4, 2)
			b := open(t, udp.NewUDPBind(tc.rcv), loop4, 2)
			if !a.b.Stats().GSO {
				t.Skip("kernel lacks UDP GSO: getsockopt(UDP_SEGMENT) failed")
			}
			msgs := make([]udp.Message, 64)
			for i := range msgs {
				size := tc.size(i)
				buf := make([]byte, size)
				fill(buf, 0, 1, size, i)
				binary.BigEndian.PutUint32(buf, uint32(i))
				msgs[i] = udp.Message{Buf: buf, N: size, Addr: b.ap(1), Path: 1}
				if tc.gather {
					msgs[i].N, msgs[i].Payload = 16, buf[16:]
				}
			}
			if err := a.b.Send(msgs); err != nil {
				t.Fatal(err)
			}
			if st := a.b.Stats(); st.GSOSends == 0 || st.Sent != 64 || st.SendCalls != 1 {
				t.Errorf("sender: %d GSO sends, %d sent, %d calls; want >0, 64, 1", st.GSOSends, st.Sent, st.SendCalls)
			}
			rmsgs := receiveMsgs(7, 8192) // not a divisor of 64: segments wait for the next Receive
			check := make([]byte, 8192)
			for i := 0; i < 64; {
				n := recvWithin(t, b.b, rmsgs)
				for _, m := range rmsgs[:n] {
					size := tc.size(i)
					fill(check[:size], 0, 1, size, i)
					binary.BigEndian.PutUint32(check, uint32(i))
					if m.N != size || string(m.Buf[:m.N]) != string(check[:size]) || m.Path != 1 || m.Addr != a.ap(1) {
						t.Fatalf("datagram %d: %d bytes on path %d from %v, want %d on 1 from %v (or corrupt)", i, m.N, m.Path, m.Addr, size, a.ap(1))
					}
					i++
				}
			}
			st := b.b.Stats()
			t.Logf("receiver: GRO %v, %d coalesced datagrams, %d recvmmsg calls for 64 datagrams", st.GRO, st.GROReceives, st.RecvCalls)
			if st.Received != 64 {
				t.Errorf("receiver counted %d datagrams, want 64", st.Received)
			}
		})
	}
}
