package core

import (
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// TestCtrlPathTakesTurns: control packets take the up paths in turn, and
// every path in turn when none is up. Once stuck on one path when all
// had failed, every ACK and NACK would have gone down it, dead or not.
func TestCtrlPathTakesTurns(t *testing.T) {
	c, err := NewEndpoint().NewConn(1, 2, netip.MustParseAddrPort("127.0.0.1:2"), Config{Paths: 4, Select: path.RoundRobin})
	if err != nil {
		t.Fatal(err)
	}
	c.use() // as a packet for it or a receive posted would
	turns := func() (got []Path) {
		for range 8 {
			got = append(got, c.ctrlPath())
		}
		return got
	}
	// A connection that has sent nothing has made no selector: its
	// control packets go round the paths as a fresh one has them, all up.
	if got := turns(); !slices.Equal(got, []Path{0, 1, 2, 3, 0, 1, 2, 3}) || c.mp.sel != nil {
		t.Errorf("fresh connection: control packets took %v (selector made: %v); want each in turn, none made", got, c.mp.sel != nil)
	}
	c.usePaths()
	fail := func(p int) {
		c.mp.sel.OnSent(0, p, 1000)
		for range path.LossThreshold {
			c.mp.sel.OnLost(0, p)
		}
	}
	fail(1)
	if got, want := turns(), []Path{0, 2, 3, 0, 2, 3, 0, 2}; !slices.Equal(got, want) {
		t.Errorf("path 1 failed: control packets took %v; want %v", got, want)
	}
	fail(0)
	fail(2)
	fail(3)
	if got := turns(); !slices.Equal(got, []Path{3, 0, 1, 2, 3, 0, 1, 2}) {
		t.Errorf("every path failed: control packets took %v; want each in turn", got)
	}
}

// TestEncodeDoneHold: the Done ACK of a message the application has
// already completed (its slot free but still holding it, as when sim or
// sdr complete a receive in their event handler) still carries the
// receiver's hold since the completing packet, and says it answers the
// completion; once the slot holds another message it carries none.
func TestEncodeDoneHold(t *testing.T) {
	c, err := NewEndpoint().NewConn(1, 2, netip.MustParseAddrPort("127.0.0.1:2"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	c.useBoth() // as its first messages each way would
	r := c.receiver()
	r.useSlots()
	m := &r.slots[0]
	m.seq, m.state, m.ackAt = 0, recvFree, monotime.Time(monotime.Millisecond)
	buf := make([]byte, 256)
	for _, tc := range []struct {
		name string
		seq  uint32 // the message the slot holds
		want uint16 // microseconds
	}{
		{"completed by the application", 0, 2000},
		{"slot reposted", uint32(len(r.slots)), 0},
	} {
		m.seq = tc.seq
		n := r.encodeDone(monotime.Time(3*monotime.Millisecond), 0, buf)
		a, err := wire.ParseAck(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		if a.Delay != tc.want || a.Flags&wire.FlagCompleted == 0 || a.Flags&wire.FlagDone == 0 {
			t.Errorf("%s: delay %d us, flags %#x; want %d us and Done|Completed", tc.name, a.Delay, a.Flags, tc.want)
		}
	}
}

// TestOversizedData: DATA of a message longer than the buffer posted for
// it (from a sender that did not wait for the CTS, which says the
// buffer's length) fails the receive and is NACKed as too large.
func TestOversizedData(t *testing.T) {
	c, err := NewEndpoint().NewConn(1, 2, netip.MustParseAddrPort("127.0.0.1:2"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := c.PostRecv(make([]byte, 10))
	if err != nil {
		t.Fatal(err)
	}
	geo := wire.Geometry{MsgLen: 100, MTU: 1024, Scheme: uint8(reliability.KindSRRTO)}
	d := wire.Data{Conn: 1, Msg: c.msgID(uint32(h)), Geometry: geo, Payload: make([]byte, 100)}
	if err := c.rcv.onData(0, &d); err != nil {
		t.Fatal(err)
	}
	var failed error
	for ev, ok := c.ep.PollEvent(); ok; ev, ok = c.ep.PollEvent() {
		if ev.Kind == EventRecvFailed {
			failed = ev.Err
		}
	}
	if !errors.Is(failed, ErrMessageTooLarge) {
		t.Errorf("receive failed with %v, want %v", failed, ErrMessageTooLarge)
	}
	buf := make([]byte, 256)
	for c.ctrl.len() > 0 {
		it, _ := c.ctrl.pop()
		n := c.encodeCtrl(0, it, buf)
		if n == 0 || it.kind == ctrlCTS {
			continue
		}
		nk, err := wire.ParseNack(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		if nk.Reason != wire.NackTooLarge || nk.Msg != c.msgID(uint32(h)) || nk.Conn != 2 {
			t.Errorf("sent NACK %+v, want reason too large for message %v to connection 2", nk, c.msgID(uint32(h)))
		}
		return
	}
	t.Error("no NACK sent")
}
