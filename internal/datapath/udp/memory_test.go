package udp_test

import (
	"net/netip"
	"testing"

	"github.com/sdrnet/sdrnet/internal/datapath/udp"
)

func TestMemoryLoss(t *testing.T) {
	n := udp.NewMemoryNetwork()
	a := open(t, n.NewBind(), loop4, 2)
	b := open(t, n.NewBind(), loop4, 1)
	var seen []netip.AddrPort
	n.SetLoss(func(from, to netip.AddrPort, d []byte) bool {
		seen = append(seen, from, to)
		return d[0]%2 == 1
	})
	msgs := make([]udp.Message, 10)
	for i := range msgs {
		msgs[i] = udp.Message{Buf: []byte{byte(i)}, N: 1, Addr: b.ap(0), Path: 1}
	}
	if err := a.b.Send(msgs); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 20 || seen[0] != a.ap(1) || seen[1] != b.ap(0) {
		t.Errorf("loss hook saw %v, want 10 times %v -> %v", seen, a.ap(1), b.ap(0))
	}
	recv := receiveMsgs(16, 4)
	got := recvWithin(t, b.b, recv)
	if got != 5 {
		t.Fatalf("received %d, want 5", got)
	}
	for i, m := range recv[:got] {
		if m.Buf[0] != byte(2*i) {
			t.Errorf("datagram %d is %d, want %d", i, m.Buf[0], 2*i)
		}
	}
	if st := a.b.Stats(); st.Dropped != 5 || st.Sent != 10 {
		t.Errorf("sender Stats: dropped %d sent %d, want 5 and 10", st.Dropped, st.Sent)
	}
	n.SetLoss(nil)
	if err := a.b.Send(msgs[1:2]); err != nil {
		t.Fatal(err)
	}
	if got := recvWithin(t, b.b, recv); got != 1 || recv[0].Buf[0] != 1 {
		t.Errorf("without loss hook: received %d", got)
	}
}

func TestMemoryQueueFull(t *testing.T) {
	n := udp.NewMemoryNetwork()
	a := open(t, n.NewBind(), loop4, 1)
	b := open(t, n.NewBind(), loop4, 1)
	msgs := make([]udp.Message, 5000)
	for i := range msgs {
		msgs[i] = udp.Message{Buf: []byte{1}, N: 1, Addr: b.ap(0)}
	}
	if err := a.b.Send(msgs); err != nil {
		t.Fatal(err)
	}
	if st := b.b.Stats(); st.Dropped == 0 {
		t.Errorf("5000 datagrams into a full queue: none dropped")
	}
}

// TestMemoryMark checks the congestion-mark hook: it sees the datagrams
// the loss hook lets through, and the ones it marks arrive with CE.
func TestMemoryMark(t *testing.T) {
	n := udp.NewMemoryNetwork()
	a := open(t, n.NewBind(), loop4, 2)
	b := open(t, n.NewBind(), loop4, 1)
	if !b.b.Stats().ECN {
		t.Error("MemoryBind Stats().ECN is false")
	}
	n.SetLoss(func(_, _ netip.AddrPort, d []byte) bool { return d[0] == 9 })
	var marked []byte
	n.SetMark(func(from, to netip.AddrPort, d []byte) bool {
		if from != a.ap(1) || to != b.ap(0) {
			t.Errorf("mark hook saw %v -> %v, want %v -> %v", from, to, a.ap(1), b.ap(0))
		}
		marked = append(marked, d[0])
		return d[0]%3 == 0
	})
	msgs := make([]udp.Message, 10)
	for i := range msgs {
		msgs[i] = udp.Message{Buf: []byte{byte(i)}, N: 1, Addr: b.ap(0), Path: 1}
	}
	if err := a.b.Send(msgs); err != nil {
		t.Fatal(err)
	}
	if string(marked) != "\x00\x01\x02\x03\x04\x05\x06\x07\x08" {
		t.Errorf("mark hook saw %v, want 0..8 (9 is lost)", marked)
	}
	recv := receiveMsgs(16, 4)
	for i := range recv {
		recv[i].CE = true // stale values Receive must overwrite
	}
	if got := recvWithin(t, b.b, recv); got != 9 {
		t.Fatalf("received %d, want 9", got)
	}
	for _, m := range recv[:9] {
		if want := m.Buf[0]%3 == 0; m.CE != want {
			t.Errorf("datagram %d: CE %v, want %v", m.Buf[0], m.CE, want)
		}
	}
	if st := b.b.Stats(); st.CEReceived != 3 {
		t.Errorf("receiver Stats().CEReceived = %d, want 3", st.CEReceived)
	}
	n.SetMark(nil)
	recv[0].CE = true
	if err := a.b.Send(msgs[:1]); err != nil {
		t.Fatal(err)
	}
	if got := recvWithin(t, b.b, recv); got != 1 || recv[0].CE {
		t.Errorf("without mark hook: received %d, CE %v", got, recv[0].CE)
	}
}
