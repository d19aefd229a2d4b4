package core_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// TestStreamingSend repairs a message by hand, as an application-built
// scheme does on scheme none: the first pass loses chunks 2 and 5, the
// receiver's bitmap shows the holes, the sender writes those chunks again
// at their offsets, the message completes, and EndSend frees the slot.
func TestStreamingSend(t *testing.T) {
	link := testLink()
	link.Drop = dropFirstPass([]uint32{2, 5}, nil)
	p := newPair(t, link, nil, 1)
	const size = 8<<16 + 1000 // 9 chunks, the last short
	msg := message(size)
	buf := make([]byte, size)
	rh, err := p.B.Conn.PostRecv(buf)
	if err != nil {
		t.Fatal(err)
	}
	sh, err := p.A.Conn.SendOpen(msg)
	if err != nil {
		t.Fatal(err)
	}
	var recvDone, sendDone bool
	p.B.OnEvent = func(ev core.Event) { recvDone = recvDone || ev.Kind == core.EventRecvDone && ev.Msg == uint32(rh) }
	p.A.OnEvent = func(ev core.Event) { sendDone = sendDone || ev.Kind == core.EventSendDone && ev.Msg == uint32(sh) }
	p.Wake()
	// The first pass: everything but the lost chunks arrives, and the
	// open send does not end by itself.
	if err := p.Drive(func() bool { return false }, coretest.Limits{Time: 20e9}); !errors.Is(err, coretest.ErrIdle) {
		t.Fatalf("first pass: %v, want the pair idle", err)
	}
	bm, err := p.B.Conn.ChunkBitmap(rh)
	if err != nil {
		t.Fatal(err)
	}
	var missing []int
	for i := range bm.Len() {
		if !bm.Test(i) {
			missing = append(missing, i)
		}
	}
	if len(missing) != 2 || missing[0] != 2 || missing[1] != 5 || recvDone || sendDone {
		t.Fatalf("after the first pass: missing %v, received %v, sent %v; want chunks 2 and 5 missing", missing, recvDone, sendDone)
	}
	for _, c := range missing {
		if err := p.A.Conn.ResendChunks(sh, c, 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.A.Conn.ResendChunks(sh, 8, 2); !errors.Is(err, core.ErrChunkRange) {
		t.Errorf("resend past the end: %v, want ErrChunkRange", err)
	}
	p.Wake()
	if err := p.Drive(func() bool { return recvDone }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, msg) {
		t.Fatal("message differs after the repair")
	}
	if sendDone {
		t.Fatal("the open send ended before EndSend")
	}
	if err := p.A.Conn.EndSend(sh); err != nil {
		t.Fatal(err)
	}
	p.Wake()
	if err := p.Drive(func() bool { return sendDone }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	if err := p.A.Conn.ResendChunks(sh, 0, 1); !errors.Is(err, core.ErrNotOpen) {
		t.Errorf("resend after EndSend: %v, want ErrNotOpen", err)
	}
	if st := p.A.Conn.Stats(); st.RetxPackets != 32 {
		t.Errorf("%d packets resent, want the 32 of the two lost chunks", st.RetxPackets)
	}
}

// TestNoneBeyondWindow: nothing acknowledges scheme none's packets, so
// they must not count against the bytes-in-flight window, or a message
// larger than the window stops for good where the window fills.
func TestNoneBeyondWindow(t *testing.T) {
	cfg := core.Config{Scheme: schemes(t)["sr"], InitialRTT: 1e9, MaxBytesInFlight: 1 << 20}
	p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: testLink(), A: cfg, B: cfg})
	if err != nil {
		t.Fatal(err)
	}
	const size = 4 << 20
	if _, err := p.Transfer(message(size), size, reliability.None{}, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
}

// TestImmediate: a message's 32-bit immediate value reaches the receiver
// with any of its packets, decoded ones included: a one-packet message
// under EC whose only data packet is lost still delivers it, by its
// parity. A message sent without one has none.
func TestImmediate(t *testing.T) {
	for _, tt := range []struct {
		name   string
		scheme string
		size   int
		lose   bool // the first pass of every data packet
		imm    bool
	}{
		{"sr", "sr", 100_000, false, true},
		{"ec, data lost", "ec:32,8", 1000, true, true},
		{"none given", "sr", 5000, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			link := testLink()
			if tt.lose {
				link.Drop = dropFirstPass([]uint32{0}, nil)
			}
			p := newPair(t, link, schemes(t)[tt.scheme], 1)
			msg := message(tt.size)
			buf := make([]byte, tt.size)
			rh, err := p.B.Conn.PostRecv(buf)
			if err != nil {
				t.Fatal(err)
			}
			if tt.imm {
				_, err = p.A.Conn.SendImm(msg, 0xc0ffee42)
			} else {
				_, err = p.A.Conn.Send(msg)
			}
			if err != nil {
				t.Fatal(err)
			}
			done := false
			p.B.OnEvent = func(ev core.Event) { done = done || ev.Kind == core.EventRecvDone }
			p.Wake()
			if err := p.Drive(func() bool { return done }, coretest.Limits{}); err != nil {
				t.Fatal(err)
			}
			imm, ok, err := p.B.Conn.Immediate(rh)
			if err != nil || ok != tt.imm || (tt.imm && imm != 0xc0ffee42) {
				t.Fatalf("Immediate = %#x, %v, %v; want %#x, %v", imm, ok, err, 0xc0ffee42, tt.imm)
			}
			if !bytes.Equal(buf, msg) {
				t.Fatal("message differs")
			}
			if tt.lose && p.B.Conn.Stats().RecoveredPackets == 0 {
				t.Fatal("nothing was decoded: the case proves nothing")
			}
		})
	}
}
