package core_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

var (
	payloadOnce sync.Once
	payload     []byte
)

// message returns n bytes of a fixed pseudo-random payload.
func message(n int) []byte {
	payloadOnce.Do(func() {
		payload = make([]byte, 64<<20+4096)
		_, _ = rand.NewChaCha8([32]byte{'s', 'd', 'r'}).Read(payload)
	})
	return payload[len(payload)-n:]
}

// testLink is a 10 Gbit/s link with a 1 ms RTT.
func testLink() coretest.LinkConfig {
	return coretest.LinkConfig{Delay: 500 * monotime.Microsecond, Rate: 10e9}
}

func newPair(t testing.TB, link coretest.LinkConfig, scheme reliability.Scheme, seed uint64) *coretest.Pair {
	t.Helper()
	cfg := core.Config{Scheme: scheme, InitialRTT: monotime.Millisecond}
	p, err := coretest.NewPair(coretest.Config{Seed: seed, Link: link, A: cfg, B: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func schemes(t testing.TB) map[string]reliability.Scheme {
	out := map[string]reliability.Scheme{}
	for _, name := range []string{"sr", "sr-nack", "ec:32,8", "xor:32,8", "gbn", "csaud"} {
		s, err := reliability.Parse(name)
		if err != nil {
			t.Fatal(err)
		}
		out[name] = s
	}
	return out
}

// TestTransferMatrix moves messages of every interesting size with every
// reliable scheme under every impairment, and checks each byte arrived
// exactly once into the right place.
func TestTransferMatrix(t *testing.T) {
	conditions := []struct {
		name string
		edit func(*coretest.LinkConfig)
	}{
		{"clean", func(*coretest.LinkConfig) {}},
		{"loss1e-4", func(l *coretest.LinkConfig) { l.Loss = 1e-4 }},
		{"loss1e-2", func(l *coretest.LinkConfig) { l.Loss = 1e-2 }},
		{"bursty10%", func(l *coretest.LinkConfig) { l.Burst = coretest.Bursty(0.1, 4) }},
		{"duplicate", func(l *coretest.LinkConfig) { l.Duplicate = 0.05; l.Loss = 1e-3 }},
		{"reorder", func(l *coretest.LinkConfig) {
			l.Reorder, l.ReorderDelay, l.Loss = 0.05, 20*monotime.Microsecond, 1e-3
		}},
	}
	sizes := []int{1, 4096, 4097, 65536, 100_003, 3<<20 + 17, 64 << 20}
	for name, scheme := range schemes(t) {
		for _, cond := range conditions {
			for _, size := range sizes {
				if size == 64<<20 && testing.Short() {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%d", name, cond.name, size), func(t *testing.T) {
					t.Parallel()
					link := testLink()
					cond.edit(&link)
					p := newPair(t, link, scheme, uint64(size))
					msg := message(size)
					res, err := p.Transfer(msg, size+100, nil, coretest.Limits{})
					if err != nil {
						t.Fatal(err)
					}
					npkts := uint64((size + 4095) / 4096)
					if got := res.B.RecvPackets + res.B.RecoveredPackets; got != npkts {
						t.Errorf("packets written into the buffer = %d (%d arrived + %d decoded), want exactly %d",
							got, res.B.RecvPackets, res.B.RecoveredPackets, npkts)
					}
					if cond.name == "clean" && (res.A.RetxPackets != 0 || res.A.RTOs != 0) {
						t.Errorf("clean link: %d retransmissions, %d RTOs", res.A.RetxPackets, res.A.RTOs)
					}
				})
			}
		}
	}
}

// TestNoneScheme checks that without reliability the bitmap tells exactly
// what arrived: every chunk marked whole holds the right bytes, every
// chunk not marked has a missing packet.
func TestNoneScheme(t *testing.T) {
	link := testLink()
	link.Loss = 0.01
	p := newPair(t, link, reliability.None{}, 7)
	msg := message(8 << 20)
	buf := make([]byte, len(msg))
	rh, err := p.B.Conn.PostRecv(buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.A.Conn.Send(msg); err != nil {
		t.Fatal(err)
	}
	sent := false
	p.A.OnEvent = func(ev core.Event) { sent = sent || ev.Kind == core.EventSendDone }
	if err := p.Drive(func() bool { return sent }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	// Let the last packets land.
	if err := p.Drive(func() bool { return false }, coretest.Limits{Time: 10 * monotime.Millisecond}); err == nil {
		t.Fatal("drive with an impossible goal succeeded")
	}
	bm, err := p.B.Conn.ChunkBitmap(rh)
	if err != nil {
		t.Fatal(err)
	}
	const chunk = 64 << 10
	if bm.Len() != len(msg)/chunk {
		t.Fatalf("bitmap has %d chunks, want %d", bm.Len(), len(msg)/chunk)
	}
	whole := 0
	for i := range bm.Len() {
		pk, err := p.B.Conn.ExpandChunk(rh, i)
		if err != nil {
			t.Fatal(err)
		}
		if bm.Test(i) != pk.All() {
			t.Fatalf("chunk %d: bitmap bit %v but packets %s", i, bm.Test(i), pk)
		}
		if bm.Test(i) {
			whole++
			if string(buf[i*chunk:(i+1)*chunk]) != string(msg[i*chunk:(i+1)*chunk]) {
				t.Fatalf("chunk %d marked whole but its bytes differ", i)
			}
		}
	}
	if whole == 0 || whole == bm.Len() {
		t.Fatalf("%d of %d chunks whole at 1%% loss: the test did not exercise loss", whole, bm.Len())
	}
	if res := p.A.Conn.Stats(); res.RetxPackets != 0 {
		t.Fatalf("none scheme retransmitted %d packets", res.RetxPackets)
	}
	if err := p.B.Conn.Complete(rh); err != nil {
		t.Fatal(err)
	}
}

// TestManyMessages sends more messages than there are slots, so every
// slot is reused across generations while late duplicates of earlier
// generations are still arriving.
func TestManyMessages(t *testing.T) {
	for name, scheme := range schemes(t) {
		t.Run(name, func(t *testing.T) {
			link := testLink()
			link.Loss = 0.01
			link.Duplicate = 0.2
			link.DuplicateDelay = 3 * monotime.Millisecond // later than a whole message
			cfg := core.Config{Scheme: scheme, InitialRTT: monotime.Millisecond, MaxMsgs: 2}
			p, err := coretest.NewPair(coretest.Config{Seed: 3, Link: link, A: cfg, B: cfg})
			if err != nil {
				t.Fatal(err)
			}
			for i := range 12 {
				msg := message(200_000 + 4096*i + i)
				if _, err := p.Transfer(msg, len(msg), nil, coretest.Limits{}); err != nil {
					t.Fatalf("message %d: %v", i, err)
				}
			}
			if st := p.B.Conn.Stats(); st.StalePackets == 0 {
				t.Fatal("no stale packets arrived: the test did not exercise generations")
			}
		})
	}
}

// TestGeometries moves messages with MTUs and chunk sizes other than the
// defaults, including an MTU that is not a power of two and one-packet
// chunks.
func TestGeometries(t *testing.T) {
	for _, g := range []struct{ mtu, chunk int }{{1000, 16000}, {64, 64}, {9000, 9000 * 8}, {4096, 1 << 20}, {1500, 0}} {
		for _, name := range []string{"sr-nack", "ec:32,8", "gbn", "csaud"} {
			t.Run(fmt.Sprintf("mtu%d/chunk%d/%s", g.mtu, g.chunk, name), func(t *testing.T) {
				link := testLink()
				link.Loss = 0.01
				cfg := core.Config{MTU: g.mtu, ChunkSize: g.chunk, Scheme: schemes(t)[name], InitialRTT: monotime.Millisecond}
				p, err := coretest.NewPair(coretest.Config{Seed: 5, Link: link, A: cfg, B: cfg})
				if err != nil {
					t.Fatal(err)
				}
				msg := message(300_007)
				if _, err := p.Transfer(msg, len(msg), nil, coretest.Limits{}); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestBytesInFlightLimit checks that MaxBytesInFlight holds the sender to
// a window: at 128 KiB per 1 ms round trip it cannot beat about 1 Gbit/s
// on a 10 Gbit/s link, and it still delivers every byte under loss.
func TestBytesInFlightLimit(t *testing.T) {
	const window = 128 << 10
	msg := message(8 << 20)
	run := func(limit int64) coretest.Result {
		link := testLink()
		link.Loss = 0.001
		cfg := core.Config{MaxBytesInFlight: limit, InitialRTT: monotime.Millisecond}
		p, err := coretest.NewPair(coretest.Config{Seed: 2, Link: link, A: cfg, B: cfg})
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Transfer(msg, len(msg), nil, coretest.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	free, limited := run(0), run(window)
	// Lower bound: size / (window per RTT) round trips.
	minTime := monotime.Duration(len(msg)/window) * monotime.Millisecond
	if limited.Duration < minTime {
		t.Fatalf("window-limited transfer took %v, faster than the %v a %d-byte window allows", limited.Duration, minTime, window)
	}
	if free.Duration > minTime/4 {
		t.Fatalf("unlimited transfer took %v: the limit test has no contrast", free.Duration)
	}
}

// TestVirtualMessages moves messages without content, as the simulator
// does for buffers larger than memory: the protocol, bitmaps and events
// behave exactly as for real bytes.
func TestVirtualMessages(t *testing.T) {
	for name, scheme := range schemes(t) {
		t.Run(name, func(t *testing.T) {
			link := testLink()
			link.Loss = 0.01
			p := newPair(t, link, scheme, 4)
			const size = 5<<20 + 77
			rh, err := p.B.Conn.PostRecvVirtual(size)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.A.Conn.SendVirtual(size, nil); err != nil {
				t.Fatal(err)
			}
			var recvd, sent bool
			p.B.OnEvent = func(ev core.Event) { recvd = recvd || ev.Kind == core.EventRecvDone }
			p.A.OnEvent = func(ev core.Event) { sent = sent || ev.Kind == core.EventSendDone }
			if err := p.Drive(func() bool { return recvd && sent }, coretest.Limits{}); err != nil {
				t.Fatal(err)
			}
			bm, _ := p.B.Conn.ChunkBitmap(rh)
			st := p.B.Conn.Stats()
			if !bm.All() || st.RecvPackets+st.RecoveredPackets != (size+4095)/4096 {
				t.Fatalf("bitmap %d/%d whole, %d+%d packets", bm.Count(), bm.Len(), st.RecvPackets, st.RecoveredPackets)
			}
			// A virtual message into a real buffer arrives as zeros.
			buf := make([]byte, 100_000)
			for i := range buf {
				buf[i] = 0xff
			}
			if _, err := p.B.Conn.PostRecv(buf); err != nil {
				t.Fatal(err)
			}
			if err := p.B.Conn.Complete(rh); err != nil {
				t.Fatal(err)
			}
			recvd, sent = false, false
			if _, err := p.A.Conn.SendVirtual(len(buf), nil); err != nil {
				t.Fatal(err)
			}
			p.Wake()
			if err := p.Drive(func() bool { return recvd && sent }, coretest.Limits{}); err != nil {
				t.Fatal(err)
			}
			if string(buf) != string(make([]byte, len(buf))) {
				t.Fatal("virtual message into a real buffer did not arrive as zeros")
			}
		})
	}
}
