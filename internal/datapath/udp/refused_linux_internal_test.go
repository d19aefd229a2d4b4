//go:build linux

package udp

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// TestReadAfterRefusal: when a read finds a refusal pending (the ICMP
// error came in after epoll said the socket was readable, so the poll
// loop's EPOLLERR branch did not see it) the datagrams queued ahead of
// it are read into the same batch, with GRO as without. With GRO they
// waited for the next batch, after the refusal: a `sdrnet send` under
// load then heard "nothing listens there" before the receiver's CLOSE
// and its reason (TestE2EMessageTooLarge, one run in 40 beside two busy
// loops).
func TestReadAfterRefusal(t *testing.T) {
	lo := netip.MustParseAddr("127.0.0.1")
	for _, cfg := range []Config{{}, {DisableGRO: true}} {
		dead, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(lo, 0)))
		if err != nil {
			t.Fatal(err)
		}
		deadAddr := dead.LocalAddr().(*net.UDPAddr).AddrPort()
		dead.Close()
		b := NewUDPBind(cfg)
		ports, err := b.Open(netip.AddrPortFrom(lo, 0), 1)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		peer, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(lo, 0)))
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		if _, err := peer.WriteToUDPAddrPort([]byte("last words"), netip.AddrPortFrom(lo, ports[0])); err != nil {
			t.Fatal(err)
		}
		if err := b.Send([]Message{{Buf: []byte("hello"), N: 5, Addr: deadAddr}}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond) // the ICMP error is in, behind the datagram
		msgs := make([]Message, 8)
		for i := range msgs {
			msgs[i].Buf = make([]byte, 2048)
		}
		b.rxMu.Lock()
		rx := &b.rx
		rx.msgs, rx.n = msgs, 0
		err = b.read(0) // as the poll loop does for a socket epoll called readable
		n := rx.n
		rx.msgs = nil
		b.rxMu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		var refused, data int
		for _, m := range msgs[:n] {
			if m.Refused {
				refused++
			} else if string(m.Buf[:m.N]) == "last words" {
				data++
			}
		}
		if refused != 1 || data != 1 {
			t.Errorf("GRO off %v: one read gave %d refusals and %d datagrams; want one of each", cfg.DisableGRO, refused, data)
		}
	}
}
