package core

import (
	"net/netip"
	"testing"

	"github.com/sdrnet/sdrnet/internal/wire"
)

func TestGrown(t *testing.T) {
	for _, tc := range []struct {
		have       int
		slot       uint32
		most, want int
	}{
		{0, 0, 1024, 1},
		{1, 0, 1024, 1}, // made already
		{1, 1, 1024, 2},
		{4, 9, 1024, 10},   // small: to fit
		{16, 16, 1024, 32}, // beyond smallSlots: doubled
		{32, 100, 1024, 101},
		{512, 512, 1024, 1024},
		{8, 8, 8, 8}, // made already: never past MaxMsgs
		{4, 6, 8, 7},
		{16, 16, 20, 20},
	} {
		got := grown(make([]int, tc.have), tc.slot, tc.most)
		if len(got) != max(tc.have, tc.want) {
			t.Errorf("%d slots, slot %d, most %d: grew to %d, want %d", tc.have, tc.slot, tc.most, len(got), tc.want)
		}
	}
}

// TestSlotsFollowMessages: a connection's slots are made as its messages
// reach them, and a packet for a slot not made yet is answered as one
// made free would be: stale, with a whole-message ACK while its
// generation is not ahead.
func TestSlotsFollowMessages(t *testing.T) {
	c, err := NewEndpoint().NewConn(1, 2, netip.MustParseAddrPort("127.0.0.1:2"), Config{MaxMsgs: 64})
	if err != nil {
		t.Fatal(err)
	}
	c.useBoth() // as its first messages each way would
	for n := 1; n <= 20; n++ {
		if _, err := c.PostRecvVirtual(1 << 20); err != nil {
			t.Fatal(err)
		}
		if _, err := c.SendVirtual(1<<20, nil); err != nil {
			t.Fatal(err)
		}
		want := n
		if n > smallSlots {
			want = 2 * smallSlots
		}
		if len(c.rcv.slots) != want || len(c.snd.slots) != want {
			t.Fatalf("%d messages each way: %d receive and %d send slots, want %d", n, len(c.rcv.slots), len(c.snd.slots), want)
		}
	}

	made, err := NewEndpoint().NewConn(1, 2, netip.MustParseAddrPort("127.0.0.1:2"), Config{MaxMsgs: 64})
	if err != nil {
		t.Fatal(err)
	}
	made.useBoth() // as its first messages each way would
	made.rcv.slots = make([]recvMsg, 64)
	lazy, err := NewEndpoint().NewConn(1, 2, netip.MustParseAddrPort("127.0.0.1:2"), Config{MaxMsgs: 64})
	if err != nil {
		t.Fatal(err)
	}
	lazy.useBoth() // as its first messages each way would
	for _, id := range []wire.MsgID{{Slot: 40, Gen: 0}, {Slot: 40, Gen: 1}, {Slot: 3, Gen: 0xffff}} {
		geo := wire.Geometry{MsgLen: 100, MTU: 4096}
		for _, c := range []*Conn{made, lazy} {
			if m, err := c.rcv.accepting(id, &geo); m != nil || err != nil {
				t.Fatalf("slot %d gen %d: accepted (%v, %v)", id.Slot, id.Gen, m != nil, err)
			}
		}
		if made.rcv.stats != lazy.rcv.stats || made.ctrl.len() != lazy.ctrl.len() {
			t.Errorf("slot %d gen %d: unmade slot answered %d stale, %d to send; made: %d, %d",
				id.Slot, id.Gen, lazy.rcv.stats.StalePackets, lazy.ctrl.len(), made.rcv.stats.StalePackets, made.ctrl.len())
		}
	}
	if lazy.ctrl.len() != 2 || lazy.rcv.slots != nil {
		t.Errorf("%d whole-message ACKs queued, slots made %v: want 2 (generations 0 and 0xffff), none made", lazy.ctrl.len(), lazy.rcv.slots != nil)
	}
}
