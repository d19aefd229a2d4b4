//go:build linux

package udp_test

import (
	"net/netip"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/datapath/udp"
)

// TestStamps: a UDPBind gives each datagram it receives the kernel's
// receive time, after the send and before Receive returns, with and
// without GRO; segments of one coalesced datagram share it.
func TestStamps(t *testing.T) {
	lo := netip.AddrFrom4([4]byte{127, 0, 0, 1})
	for _, cfg := range []udp.Config{{}, {DisableGRO: true}} {
		tx, rx := udp.NewUDPBind(udp.Config{}), udp.NewUDPBind(cfg)
		from, to := open(t, tx, lo, 1), open(t, rx, lo, 1)
		if !rx.Stats().Stamps {
			t.Skip("the kernel does not stamp received datagrams (SO_TIMESTAMPNS)")
		}
		const n = 8
		out := make([]udp.Message, n)
		for i := range out {
			out[i] = udp.Message{Buf: make([]byte, 1000), N: 1000, Addr: to.ap(0)}
		}
		before := time.Now().UnixNano()
		time.Sleep(time.Millisecond) // the stamps must fall after this, not near it
		if err := from.b.Send(out); err != nil {
			t.Fatal(err)
		}
		in := receiveMsgs(n, 2048)
		got := 0
		for got < n {
			k := recvWithin(t, rx, in)
			after := time.Now().UnixNano()
			for _, m := range in[:k] {
				if m.Stamp <= before || m.Stamp > after {
					t.Errorf("GRO off %v: stamp %d, want in (%d, %d]", cfg.DisableGRO, m.Stamp, before, after)
				}
			}
			got += k
		}
	}
}
