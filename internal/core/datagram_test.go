package core_test

import (
	"crypto/sha256"
	"math/rand/v2"
	"net/netip"
	"runtime"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// datagramMesh gives every node of m a datagram endpoint with every other
// node as a peer, ids derived from addresses as sdr derives them.
func datagramMesh(t *testing.T, m *coretest.Mesh, cfg core.Config) ([]*core.Datagram, [][]*core.Conn) {
	t.Helper()
	n := len(m.Nodes)
	dgs := make([]*core.Datagram, n)
	peers := make([][]*core.Conn, n)
	for i, nd := range m.Nodes {
		d, err := nd.EP.NewDatagram(cfg)
		if err != nil {
			t.Fatal(err)
		}
		dgs[i], peers[i] = d, make([]*core.Conn, n)
		for j, other := range m.Nodes {
			if j == i {
				continue
			}
			if peers[i][j], err = d.AddPeer(core.AddrID(other.Addr), core.AddrID(nd.Addr), other.Addr); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dgs, peers
}

// TestDatagramAllToAll runs all-to-all rounds among datagram endpoints
// over links that lose, duplicate (late, after messages completed) and
// reorder, and checks every byte of every message, that a peer's slots go
// back to the pool when it has nothing in flight, and that later rounds
// reuse the pool's blocks.
func TestDatagramAllToAll(t *testing.T) {
	for _, scheme := range []string{"csaud", "sr-nack", "gbn", "ec:8,2"} {
		t.Run(scheme, func(t *testing.T) {
			s, err := reliability.Parse(scheme)
			if err != nil {
				t.Fatal(err)
			}
			const n, rounds = 12, 3
			lc := coretest.LinkConfig{Delay: 5 * monotime.Microsecond, Loss: 0.01,
				Duplicate: 0.01, DuplicateDelay: 2 * monotime.Millisecond,
				Reorder: 0.02, ReorderDelay: 20 * monotime.Microsecond}
			m := coretest.NewMesh(n, 100e9, lc, 7)
			dgs, peers := datagramMesh(t, m, core.Config{MTU: 1024, ChunkSize: 8 << 10, Scheme: s,
				InitialRTT: 20 * monotime.Microsecond, MaxMsgs: 2})
			rng := rand.New(rand.NewPCG(1, 2))
			type recv struct {
				buf  []byte
				want [32]byte
			}
			for round := range rounds {
				recvs := make(map[*core.Conn]map[core.RecvHandle]*recv)
				pending, sends := 0, 0
				for i := range n {
					for j := range n {
						if i == j {
							continue
						}
						msg := make([]byte, 1+rng.IntN(40_000))
						for k := range msg {
							msg[k] = byte(rng.Uint32())
						}
						// j posts for i's message before i sends it, as a
						// collective posts its receives first.
						buf := make([]byte, len(msg))
						h, err := peers[j][i].PostRecv(buf)
						if err != nil {
							t.Fatal(err)
						}
						if recvs[peers[j][i]] == nil {
							recvs[peers[j][i]] = make(map[core.RecvHandle]*recv)
						}
						recvs[peers[j][i]][h] = &recv{buf: buf, want: sha256.Sum256(msg)}
						if _, err := peers[i][j].Send(msg); err != nil {
							t.Fatal(err)
						}
						pending++
						sends++
					}
				}
				for i, nd := range m.Nodes {
					nd.OnEvent = func(ev core.Event) {
						switch ev.Kind {
						case core.EventRecvDone:
							r := recvs[ev.Conn][core.RecvHandle(ev.Msg)]
							if r == nil {
								t.Errorf("node %d: unexpected receive %d", i, ev.Msg)
								return
							}
							if sha256.Sum256(r.buf) != r.want {
								t.Errorf("node %d round %d: message %d differs from what was sent", i, round, ev.Msg)
							}
							if err := ev.Conn.Complete(core.RecvHandle(ev.Msg)); err != nil {
								t.Error(err)
							}
							pending--
						case core.EventSendDone:
							sends--
						case core.EventRecvFailed, core.EventSendFailed, core.EventClosed:
							t.Errorf("node %d: %v on message %d: %v", i, ev.Kind, ev.Msg, ev.Err)
						}
					}
				}
				m.Wake()
				if err := m.Drive(func() bool { return pending == 0 && sends == 0 }, coretest.Limits{Time: 10 * monotime.Second}); err != nil {
					t.Fatalf("round %d: %v (%d receives, %d sends left)", round, err, pending, sends)
				}
			}
			// Let late duplicates arrive and be answered, then nothing
			// may hold slots.
			_ = m.Drive(func() bool { return false }, coretest.Limits{Time: 50 * monotime.Millisecond})
			ls := m.LinkStats()
			if ls.Lost == 0 || ls.Duplicated == 0 || ls.Reordered == 0 {
				t.Fatalf("links did not impair: %+v", ls)
			}
			for i, d := range dgs {
				st := d.Stats()
				if st.Leased != 0 {
					t.Errorf("node %d: %d peers still hold slots after everything completed", i, st.Leased)
				}
				if st.Leases <= uint64(st.Blocks) {
					t.Errorf("node %d: %d leases of %d blocks: blocks were not reused", i, st.Leases, st.Blocks)
				}
			}
			t.Logf("links: %+v; node 0: %+v", ls, dgs[0].Stats())
		})
	}
}

// TestDatagramPeerBytes measures what a peer costs: a datagram peer at
// rest against a connection with its default 1024 messages in flight each
// way, whose slots it keeps. The figures are logged; the test checks a
// datagram peer costs under a fiftieth of a connection in use.
func TestDatagramPeerBytes(t *testing.T) {
	addr := netip.MustParseAddrPort("127.0.0.2:9")
	udPeer := heapPer(t, 4096, func(e *core.Endpoint) func(int) error {
		d, err := e.NewDatagram(core.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return func(i int) error { _, err := d.AddPeer(uint64(i+1), 1, addr); return err }
	})
	rcPeer := heapPer(t, 32, func(e *core.Endpoint) func(int) error {
		return func(i int) error {
			c, err := e.NewConn(uint64(i+1), 1, addr, core.Config{})
			for range core.DefaultMaxMsgs {
				if err == nil {
					_, err = c.PostRecv(make([]byte, 1))
				}
				if err == nil {
					_, err = c.Send(make([]byte, 1))
				}
			}
			return err
		}
	})
	t.Logf("bytes per peer: datagram at rest %d, connection in use %d (%.0fx)", udPeer, rcPeer, float64(rcPeer)/float64(udPeer))
	if udPeer*50 > rcPeer {
		t.Errorf("a datagram peer costs %d bytes, a connection %d: want under a fiftieth", udPeer, rcPeer)
	}
}

// TestConnBytes measures what a connection costs at rest and carrying one
// message each way (a collective's connection to one peer): its slots are
// made as messages reach them, and a path table only by a sender. The
// figures are logged; the test fails if either grows past a bound.
func TestConnBytes(t *testing.T) {
	addr := netip.MustParseAddrPort("127.0.0.2:9")
	cfg := core.Config{Paths: 4, Select: path.Oblivious}
	conn := func(use func(*core.Conn) error) func(*core.Endpoint) func(int) error {
		return func(e *core.Endpoint) func(int) error {
			return func(i int) error {
				c, err := e.NewConn(uint64(i+1), 1, addr, cfg)
				if err == nil {
					err = use(c)
				}
				return err
			}
		}
	}
	rest := heapPer(t, 4096, conn(func(*core.Conn) error { return nil }))
	recv := heapPer(t, 4096, conn(func(c *core.Conn) error { _, err := c.PostRecvVirtual(1 << 20); return err }))
	both := heapPer(t, 4096, conn(func(c *core.Conn) error {
		_, err := c.PostRecvVirtual(1 << 20)
		if err == nil {
			_, err = c.SendVirtual(1<<20, nil)
		}
		return err
	}))
	t.Logf("bytes per connection: at rest %d, receiving one message %d, one each way (4 paths) %d", rest, recv, both)
	for _, tc := range []struct {
		what      string
		got, most uint64
	}{{"at rest", rest, 300}, {"receiving one message", recv, 2048}, {"one message each way", both, 4096}} {
		if tc.got > tc.most {
			t.Errorf("a connection %s costs %d bytes: want at most %d", tc.what, tc.got, tc.most)
		}
	}
}

// heapPer returns the heap bytes each of n peers leaves behind: setup
// makes an endpoint's adder of peers, whose first peer is not counted (it
// sizes the endpoint's own tables).
func heapPer(t *testing.T, n int, setup func(*core.Endpoint) func(int) error) uint64 {
	t.Helper()
	e := core.NewEndpoint()
	add := setup(e)
	if err := add(0); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := 1; i <= n; i++ {
		if err := add(i); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(e)
	return (after.HeapAlloc - before.HeapAlloc) / uint64(n)
}
