package core_test

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		cfg  core.Config
		want string
	}{
		{core.Config{MTU: 10}, "MTU 10 out of range"},
		{core.Config{MTU: 70000}, "MTU 70000 out of range"},
		{core.Config{MTU: 4096, ChunkSize: 4096 * 3}, "not a power-of-two multiple"},
		{core.Config{MTU: 4096, ChunkSize: 5000}, "not a power-of-two multiple"},
		{core.Config{MaxMsgs: 3}, "not a power of two"},
		{core.Config{MaxMsgs: 1 << 17}, "not a power of two"},
		{core.Config{MaxBytesInFlight: -1}, "negative"},
		{core.Config{Rate: -1}, "negative"},
		{core.Config{MTU: 64, ChunkSize: 64 << 17}, "more than 65536 packets"},
	}
	for _, tt := range tests {
		_, err := core.NewEndpoint().NewConn(1, 2, netip.AddrPort{}, tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%+v: error %v, want one containing %q", tt.cfg, err, tt.want)
		}
	}
	c, err := core.NewEndpoint().NewConn(1, 2, netip.AddrPort{}, core.Config{MTU: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Config().ChunkSize; got != 64000 {
		t.Errorf("default chunk size at MTU 1000 = %d, want 64000 (64 packets)", got)
	}
}

func TestMisuse(t *testing.T) {
	p := newPair(t, testLink(), nil, 1)
	a, b := p.A.Conn, p.B.Conn
	if _, err := a.Send(nil); !errors.Is(err, core.ErrEmptyMessage) {
		t.Errorf("Send(nil) = %v", err)
	}
	if _, err := b.PostRecv(nil); !errors.Is(err, core.ErrEmptyMessage) {
		t.Errorf("PostRecv(nil) = %v", err)
	}
	if err := b.Complete(12345); !errors.Is(err, core.ErrUnknownHandle) {
		t.Errorf("Complete(unknown) = %v", err)
	}
	if _, err := b.ChunkBitmap(777); !errors.Is(err, core.ErrUnknownHandle) {
		t.Errorf("ChunkBitmap(unknown) = %v", err)
	}
	msg := message(100_000)
	if _, err := p.Transfer(msg, len(msg), nil, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	// Transfer completed handle 0; completing it again is misuse.
	if err := b.Complete(0); !errors.Is(err, core.ErrUnknownHandle) {
		t.Errorf("second Complete = %v", err)
	}
	h, err := b.PostRecv(make([]byte, 10))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ExpandChunk(h, 0); !errors.Is(err, core.ErrChunkRange) {
		t.Errorf("ExpandChunk before any packet = %v", err)
	}
	if bm, err := b.ChunkBitmap(h); err != nil || bm.Len() != 0 {
		t.Errorf("ChunkBitmap before any packet = %v, %v; want empty", bm, err)
	}
	// A message larger than the posted buffer fails on both sides.
	var sendErr, recvErr error
	p.A.OnEvent = func(ev core.Event) {
		if ev.Kind == core.EventSendFailed {
			sendErr = ev.Err
		}
	}
	p.B.OnEvent = func(ev core.Event) {
		if ev.Kind == core.EventRecvFailed {
			recvErr = ev.Err
		}
	}
	if _, err := a.Send(message(11)); err != nil {
		t.Fatal(err)
	}
	p.Wake()
	if err := p.Drive(func() bool { return sendErr != nil && recvErr != nil }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(sendErr, core.ErrMessageTooLarge) || !errors.Is(recvErr, core.ErrMessageTooLarge) {
		t.Fatalf("oversized message: send error %v, receive error %v", sendErr, recvErr)
	}
	if err := b.Complete(h); err != nil {
		t.Fatalf("Complete after failure = %v", err)
	}
	// Closing fails what is in flight and refuses new work.
	h2, _ := b.PostRecv(make([]byte, 10))
	var closed bool
	p.B.OnEvent = func(ev core.Event) { closed = closed || ev.Kind == core.EventClosed }
	if err := a.Close(0, "done"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Send(msg); !errors.Is(err, core.ErrClosed) {
		t.Errorf("Send after Close = %v", err)
	}
	p.Wake()
	if err := p.Drive(func() bool { return closed }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Complete(h2); err != nil {
		t.Errorf("Complete of a receive failed by close = %v", err)
	}
}

func TestSlotsExhausted(t *testing.T) {
	cfg := core.Config{MaxMsgs: 2}
	p, err := coretest.NewPair(coretest.Config{Link: testLink(), A: cfg, B: cfg})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		_, errPost := p.B.Conn.PostRecv(make([]byte, 100))
		_, errSend := p.A.Conn.Send(message(100))
		want := error(nil)
		if i == 2 {
			want = core.ErrTooManyMessages
		}
		if !errors.Is(errPost, want) || !errors.Is(errSend, want) {
			t.Errorf("message %d: PostRecv %v, Send %v; want %v", i, errPost, errSend, want)
		}
	}
}

// TestPartialCompletion checks SDR's bitmap contract: a chunk's bit is set
// only once every packet of it arrived, events report chunks as they
// arrive, and ExpandChunk shows which packet is missing.
func TestPartialCompletion(t *testing.T) {
	link := testLink()
	link.Drop = dropPacketOnce(5)
	p := newPair(t, link, reliability.SelectiveRepeat{}, 1)
	msg := message(4 * 65536)
	buf := make([]byte, len(msg))
	h, _ := p.B.Conn.PostRecv(buf)
	if _, err := p.A.Conn.Send(msg); err != nil {
		t.Fatal(err)
	}
	var chunkEvents int
	var done bool
	p.B.OnEvent = func(ev core.Event) {
		switch ev.Kind {
		case core.EventChunks:
			chunkEvents++
		case core.EventRecvDone:
			done = true
		}
	}
	if err := p.Drive(func() bool { return chunkEvents > 0 }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	// Read the bitmap once the first pass has landed.
	first := p.Now
	if err := p.Drive(func() bool { return p.Now > first.Add(300*monotime.Microsecond) }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	bm, err := p.B.Conn.ChunkBitmap(h)
	if err != nil {
		t.Fatal(err)
	}
	if bm.String() != "0111" {
		t.Fatalf("chunk bitmap with packet 5 lost = %s, want 0111", bm)
	}
	pk, err := p.B.Conn.ExpandChunk(h, 0)
	if err != nil {
		t.Fatal(err)
	}
	if pk.String() != "1111101111111111" {
		t.Fatalf("chunk 0 packets = %s, want packet 5 missing", pk)
	}
	if err := p.Drive(func() bool { return done }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	if bm, _ = p.B.Conn.ChunkBitmap(h); bm.String() != "1111" || string(buf) != string(msg) {
		t.Fatalf("after repair: bitmap %s, payload equal %v", bm, string(buf) == string(msg))
	}
}

// TestReceiverLearnsRoundTrip: on a 20 ms path a receiver that starts
// from the default 10 ms resends its first CTS before the data can
// answer it; it must still learn the round trip (from the first CTS), or
// its re-NACK comes before the retransmission can, and one lost packet is
// resent twice.
func TestReceiverLearnsRoundTrip(t *testing.T) {
	link := coretest.LinkConfig{Delay: 10 * monotime.Millisecond, Rate: 1e9}
	link.Drop = dropPacketOnce(100)
	cfg := core.Config{Scheme: reliability.SelectiveRepeat{NACK: true}}
	p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, A: cfg, B: cfg})
	if err != nil {
		t.Fatal(err)
	}
	msg := message(4 << 20)
	if _, err := p.Transfer(msg, len(msg), nil, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	if st := p.A.Conn.Stats(); st.RetxPackets != 1 {
		t.Fatalf("one packet lost, %d resent", st.RetxPackets)
	}
}

func dropPacketOnce(pkt uint32) func([]byte) bool {
	dropped := false
	return func(b []byte) bool {
		d, err := wire.ParseData(b)
		if err != nil || dropped || d.Packet != pkt {
			return false
		}
		dropped = true
		return true
	}
}

// TestStalePacketsIgnored replays every packet of a completed message into
// the receiver while the next message, in the same slot, is in flight:
// none of them may land in the new buffer.
func TestStalePacketsIgnored(t *testing.T) {
	cfg := core.Config{MaxMsgs: 1, InitialRTT: monotime.Millisecond}
	var old [][]byte
	recording := true
	var p *coretest.Pair
	link := testLink()
	sent := 0
	link.Drop = func(b []byte) bool {
		if h, _ := wire.ParseHeader(b); h.Type != wire.TypeData {
			return false // the link config serves both directions
		}
		if recording {
			old = append(old, append([]byte(nil), b...))
			return false
		}
		if sent++; sent == 20 { // mid-transfer of the second message
			for _, o := range old {
				_ = p.B.EP.HandleDatagram(p.Now, core.Received{Buf: o})
			}
		}
		return false
	}
	var err error
	p, err = coretest.NewPair(coretest.Config{Link: link, A: cfg, B: cfg})
	if err != nil {
		t.Fatal(err)
	}
	first := message(300_000)
	if _, err := p.Transfer(first, len(first), nil, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	recording = false
	second := message(300_001)[:300_000] // same length, different bytes
	if _, err := p.Transfer(second, len(second), nil, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	if st := p.B.Conn.Stats(); st.StalePackets < uint64(len(old)) {
		t.Fatalf("%d stale packets counted, want at least the %d replayed", st.StalePackets, len(old))
	}
}

// TestPipelinedSchemes keeps several messages in flight at once, each with
// its own scheme.
func TestPipelinedSchemes(t *testing.T) {
	link := testLink()
	link.Loss = 0.01
	link.Reorder, link.ReorderDelay = 0.02, 30*monotime.Microsecond
	p := newPair(t, link, nil, 9)
	names := []string{"sr", "ec:32,8", "gbn", "xor:32,8", "sr-nack", "ec:4,2"}
	bufs := make([][]byte, len(names))
	msgs := make([][]byte, len(names))
	for i, name := range names {
		s, err := reliability.Parse(name)
		if err != nil {
			t.Fatal(err)
		}
		msgs[i] = message(1<<20 + 1000*i)
		bufs[i] = make([]byte, len(msgs[i]))
		if _, err := p.B.Conn.PostRecv(bufs[i]); err != nil {
			t.Fatal(err)
		}
		if _, err := p.A.Conn.SendWith(msgs[i], s); err != nil {
			t.Fatal(err)
		}
	}
	recvd, sent := 0, 0
	p.B.OnEvent = func(ev core.Event) {
		if ev.Kind == core.EventRecvDone {
			recvd++
		}
	}
	p.A.OnEvent = func(ev core.Event) {
		if ev.Kind == core.EventSendDone {
			sent++
		}
	}
	if err := p.Drive(func() bool { return recvd == len(names) && sent == len(names) }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	for i := range names {
		if string(bufs[i]) != string(msgs[i]) {
			t.Errorf("message %d (%s) corrupted", i, names[i])
		}
	}
}

// TestReorderDepth holds some packets back on the wire by a fixed delay:
// the receiver must count each as reordered, by about as many packets as
// the wire carries in that delay.
func TestReorderDepth(t *testing.T) {
	link := testLink()
	const hold = 40 * monotime.Microsecond
	link.Reorder, link.ReorderDelay = 0.02, hold
	p := newPair(t, link, nil, 4)
	msg := message(4 << 20)
	res, err := p.Transfer(msg, len(msg), nil, coretest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ab, _ := p.LinkStats()
	st := res.B
	if st.Reordered == 0 || st.Reordered > ab.Reordered || st.Reordered+2 < ab.Reordered {
		t.Fatalf("%d packets counted reordered, the wire held back %d", st.Reordered, ab.Reordered)
	}
	perPacket := monotime.TransmitTime(4096+wire.MessageLen, link.Rate)
	want := float64(hold) / float64(perPacket)
	if mean := float64(st.ReorderDepth) / float64(st.Reordered); mean < want-1.5 || mean > want+1.5 || float64(st.MaxReorder) > want+3 {
		t.Errorf("reorder depth mean %.2f, max %d packets; want about %.1f", mean, st.MaxReorder, want)
	}
}
