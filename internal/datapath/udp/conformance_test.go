package udp_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/datapath/udp"
)

// wait bounds every blocking step of these tests.
const wait = 10 * time.Second

var (
	loop4 = netip.MustParseAddr("127.0.0.1")
	loop6 = netip.IPv6Loopback()
)

// impl is one Bind implementation on one loopback address.
type impl struct {
	name string
	addr netip.Addr
	// pair returns two unopened Binds that can reach each other.
	pair func() (udp.Bind, udp.Bind)
}

func hasIPv6Loopback() bool {
	c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func impls() []impl {
	addrs := []netip.Addr{loop4}
	if hasIPv6Loopback() {
		addrs = append(addrs, loop6)
	}
	var out []impl
	for _, a := range addrs {
		fam := "4"
		if a.Is6() {
			fam = "6"
		}
		real := func(cfg udp.Config) func() (udp.Bind, udp.Bind) {
			return func() (udp.Bind, udp.Bind) { return udp.NewUDPBind(cfg), udp.NewUDPBind(cfg) }
		}
		out = append(out,
			impl{"udp" + fam, a, real(udp.Config{})},
			impl{"udp-nooffload" + fam, a, real(udp.Config{DisableGSO: true, DisableGRO: true})},
		)
		if runtime.GOOS == "linux" { // elsewhere UDPBind is StdBind
			out = append(out, impl{"std" + fam, a, func() (udp.Bind, udp.Bind) {
				return udp.NewStdBind(udp.Config{}), udp.NewStdBind(udp.Config{})
			}})
		}
	}
	out = append(out, impl{"memory", loop4, func() (udp.Bind, udp.Bind) {
		n := udp.NewMemoryNetwork()
		return n.NewBind(), n.NewBind()
	}})
	return out
}

// side is an opened Bind and its ports.
type side struct {
	b     udp.Bind
	addr  netip.Addr
	ports []uint16
}

func (s side) ap(path int) netip.AddrPort { return netip.AddrPortFrom(s.addr, s.ports[path]) }

// path returns the path of s that port belongs to, or -1.
func (s side) path(port uint16) int {
	for i, p := range s.ports {
		if p == port {
			return i
		}
	}
	return -1
}

func open(t testing.TB, b udp.Bind, addr netip.Addr, paths int) side {
	t.Helper()
	ports, err := b.Open(netip.AddrPortFrom(addr, 0), paths)
	if err != nil {
		t.Fatalf("Open(%v, %d): %v", addr, paths, err)
	}
	t.Cleanup(func() { b.Close() })
	if len(ports) != paths {
		t.Fatalf("Open returned %d ports, want %d", len(ports), paths)
	}
	seen := map[uint16]bool{}
	for _, p := range ports {
		if p == 0 || seen[p] {
			t.Fatalf("ports %v: zero or repeated", ports)
		}
		seen[p] = true
	}
	return side{b, addr, ports}
}

func openPair(t *testing.T, im impl, paths int) (side, side) {
	a, b := im.pair()
	return open(t, a, im.addr, paths), open(t, b, im.addr, paths)
}

func TestConformance(t *testing.T) {
	for _, im := range impls() {
		t.Run(im.name, func(t *testing.T) {
			t.Run("Exchange", func(t *testing.T) { testExchange(t, im) })
			t.Run("CloseUnblocksReceive", func(t *testing.T) { testClose(t, im) })
			t.Run("Deadline", func(t *testing.T) { testDeadline(t, im) })
			t.Run("Oversize", func(t *testing.T) { testOversize(t, im) })
			t.Run("BadMessage", func(t *testing.T) { testBadMessage(t, im) })
			t.Run("Truncated", func(t *testing.T) { testTruncated(t, im) })
			t.Run("NotOpen", func(t *testing.T) { testNotOpen(t, im) })
			t.Run("PortInUse", func(t *testing.T) { testPortInUse(t, im) })
			t.Run("ManyPaths", func(t *testing.T) { testManyPaths(t, im) })
		})
	}
}

// fill writes the content of datagram (src, dst, size, round).
func fill(b []byte, src, dst, size, round int) {
	x := byte(src*37 + dst*11 + size*3 + round*101)
	for k := range b {
		b[k] = x + byte(k*7) + byte(k>>8)
	}
}

type key struct{ src, dst, size int }

var sizes = []int{0, 1, 2, 63, 512, 1200, 1472, 3000, 4096, 4096, 8192, 9000}

// testExchange sends datagrams of assorted sizes from every path of each
// side to every path of the other, both ways at once, in batches with
// interleaved paths, and checks each arrives once, intact, from the right
// path to the right path.
func testExchange(t *testing.T, im impl) {
	const paths = 4
	a, b := openPair(t, im, paths)
	for round, gather := range []bool{false, true} {
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for _, d := range [][2]side{{a, b}, {b, a}} {
			from, to := d[0], d[1]
			want := map[key]int{}
			for src := range paths {
				for dst := range paths {
					for _, size := range sizes {
						want[key{src, dst, size}]++
					}
				}
			}
			var got atomic.Int64
			wg.Add(2)
			go func() {
				defer wg.Done()
				if err := receiveAll(to, from, want, round, &got); err != nil {
					errs <- fmt.Errorf("%v -> %v: %w", from.ports, to.ports, err)
				}
			}()
			go func() {
				defer wg.Done()
				if err := sendAll(from, to, paths, round, gather, &got); err != nil {
					errs <- fmt.Errorf("%v -> %v: %w", from.ports, to.ports, err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("round %d (gather %v): %v", round, gather, err)
		}
		if t.Failed() {
			return
		}
	}
	n := uint64(2 * paths * paths * len(sizes))
	for _, s := range []side{a, b} {
		st := s.b.Stats()
		if st.Sent != n || st.Received != n {
			t.Errorf("Stats: sent %d received %d, want %d each (%+v)", st.Sent, st.Received, n, st)
		}
	}
}

// sendAll sends every (src, dst, size) datagram from one side to the
// other, shuffled, in batches of at most BatchSize datagrams and 64 KiB,
// waiting after each batch until the receiver has it all (so that small
// socket buffers cannot drop any).
func sendAll(from, to side, paths, round int, gather bool, got *atomic.Int64) error {
	var msgs []udp.Message
	for src := range paths {
		for dst := range paths {
			for _, size := range sizes {
				buf := make([]byte, size+16)
				fill(buf[:size], src, dst, size, round)
				m := udp.Message{Buf: buf, N: size, Addr: to.ap(dst), Path: src}
				if gather && size > 8 {
					h := size / 3
					m.Buf, m.N, m.Payload = buf[:h+5], h, buf[h:size]
				}
				msgs = append(msgs, m)
			}
		}
	}
	rng := rand.New(rand.NewPCG(uint64(round), 7))
	rng.Shuffle(len(msgs), func(i, j int) { msgs[i], msgs[j] = msgs[j], msgs[i] })
	// Runs of equal datagrams to one destination, for GSO.
	sent := 0
	for len(msgs) > 0 {
		n, bytes := 0, 0
		for n < len(msgs) && n < from.b.BatchSize() && bytes < 64<<10 {
			bytes += msgs[n].N + len(msgs[n].Payload)
			n++
		}
		if err := from.b.Send(msgs[:n]); err != nil {
			return fmt.Errorf("Send: %w", err)
		}
		sent += n
		msgs = msgs[n:]
		deadline := time.Now().Add(wait)
		for got.Load() < int64(sent) {
			if time.Now().After(deadline) {
				return fmt.Errorf("receiver has %d of %d datagrams after %v", got.Load(), sent, wait)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	return nil
}

// receiveAll receives the datagrams want counts and checks them.
func receiveAll(s, from side, want map[key]int, round int, got *atomic.Int64) error {
	total := 0
	for _, n := range want {
		total += n
	}
	msgs := make([]udp.Message, 16)
	for i := range msgs {
		msgs[i].Buf = make([]byte, 9216)
	}
	if err := s.b.SetReceiveDeadline(time.Now().Add(wait)); err != nil {
		return err
	}
	defer s.b.SetReceiveDeadline(time.Time{})
	check := make([]byte, 9216)
	for n := 0; n < total; {
		for i := range msgs {
			msgs[i].CE = true // Receive must clear it: nothing on loopback marks CE
		}
		k, err := s.b.Receive(msgs)
		if err != nil {
			return fmt.Errorf("Receive after %d of %d datagrams: %w (missing %v)", n, total, err, missing(want))
		}
		if k < 1 || k > len(msgs) {
			return fmt.Errorf("Receive returned %d of %d", k, len(msgs))
		}
		for _, m := range msgs[:k] {
			src := from.path(m.Addr.Port())
			if src < 0 || m.Addr.Addr() != from.addr {
				return fmt.Errorf("datagram from %v, not from a path of %v %v", m.Addr, from.addr, from.ports)
			}
			kk := key{src, m.Path, m.N}
			if m.CE {
				return fmt.Errorf("datagram %+v marked CE", kk)
			}
			if want[kk] == 0 {
				return fmt.Errorf("unexpected or repeated datagram %+v", kk)
			}
			want[kk]--
			fill(check[:m.N], src, m.Path, m.N, round)
			if string(check[:m.N]) != string(m.Buf[:m.N]) {
				return fmt.Errorf("datagram %+v corrupted", kk)
			}
			n++
			got.Add(1)
		}
	}
	return nil
}

func missing(want map[key]int) []key {
	var out []key
	for k, n := range want {
		if n > 0 {
			out = append(out, k)
		}
	}
	if len(out) > 10 {
		out = out[:10]
	}
	return out
}

func receiveMsgs(n, size int) []udp.Message {
	msgs := make([]udp.Message, n)
	for i := range msgs {
		msgs[i].Buf = make([]byte, size)
	}
	return msgs
}

// recvWithin receives one batch, failing after wait.
func recvWithin(t *testing.T, b udp.Bind, msgs []udp.Message) int {
	t.Helper()
	if err := b.SetReceiveDeadline(time.Now().Add(wait)); err != nil {
		t.Fatal(err)
	}
	n, err := b.Receive(msgs)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return n
}

func testClose(t *testing.T, im impl) {
	a, b := openPair(t, im, 2)
	errc := make(chan error, 1)
	go func() {
		_, err := a.b.Receive(receiveMsgs(4, 2048))
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if err := a.b.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-errc:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("blocked Receive after Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(wait):
		t.Fatal("Close did not unblock Receive")
	}
	msg := []udp.Message{{Buf: []byte("x"), N: 1, Addr: b.ap(0)}}
	if err := a.b.Send(msg); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Send after Close: %v, want net.ErrClosed", err)
	}
	if _, err := a.b.Receive(receiveMsgs(1, 16)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Receive after Close: %v, want net.ErrClosed", err)
	}
	if err := a.b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := a.b.Open(netip.AddrPortFrom(im.addr, 0), 1); !errors.Is(err, udp.ErrOpen) {
		t.Errorf("Open after Close: %v, want ErrOpen", err)
	}
	// The peer is unaffected.
	if err := b.b.Send([]udp.Message{{Buf: []byte("y"), N: 1, Addr: b.ap(1)}}); err != nil {
		t.Errorf("peer Send: %v", err)
	}
	if n := recvWithin(t, b.b, receiveMsgs(1, 16)); n != 1 {
		t.Errorf("peer received %d", n)
	}
}

func testDeadline(t *testing.T, im impl) {
	a, b := openPair(t, im, 1)
	msgs := receiveMsgs(2, 2048)
	start := time.Now()
	if err := b.b.SetReceiveDeadline(start.Add(30 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.b.Receive(msgs); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Receive past the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	if d := time.Since(start); d < 25*time.Millisecond || d > wait {
		t.Errorf("deadline of 30ms returned after %v", d)
	}
	// A deadline set while Receive is blocked applies to it.
	if err := b.b.SetReceiveDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := b.b.Receive(msgs)
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	b.b.SetReceiveDeadline(time.Now().Add(10 * time.Millisecond))
	select {
	case err := <-errc:
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("blocked Receive: %v, want os.ErrDeadlineExceeded", err)
		}
	case <-time.After(wait):
		b.b.Close()
		t.Fatal("a new deadline did not unblock Receive")
	}
	// Clearing the deadline makes Receive wait for data again.
	if err := b.b.SetReceiveDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(20 * time.Millisecond)
		a.b.Send([]udp.Message{{Buf: []byte("late"), N: 4, Addr: b.ap(0)}})
	}()
	n := recvWithin(t, b.b, msgs)
	if n != 1 || string(msgs[0].Buf[:msgs[0].N]) != "late" {
		t.Errorf("received %d datagrams, first %q", n, msgs[0].Buf[:msgs[0].N])
	}
}

func testOversize(t *testing.T, im impl) {
	a, b := openPair(t, im, 1)
	big := make([]byte, udp.MaxDatagram+1)
	fill(big, 1, 2, 3, 4)
	msgs := []udp.Message{
		{Buf: []byte("first"), N: 5, Addr: b.ap(0)},
		{Buf: big, N: len(big), Addr: b.ap(0)},
		{Buf: big[:100], N: 100, Payload: big[100:], Addr: b.ap(0)},
		{Buf: big, N: udp.MaxDatagram, Addr: b.ap(0)}, // the largest that fits
		{Buf: []byte("last"), N: 4, Addr: b.ap(0)},
	}
	err := a.b.Send(msgs)
	if !errors.Is(err, udp.ErrTooLarge) {
		t.Fatalf("Send of %d bytes: %v, want ErrTooLarge", len(big), err)
	}
	if st := a.b.Stats(); st.Oversize != 2 || st.Sent != 3 {
		t.Errorf("Stats: oversize %d sent %d, want 2 and 3", st.Oversize, st.Sent)
	}
	rmsgs := receiveMsgs(4, 1<<16)
	var got []string
	for len(got) < 3 {
		n := recvWithin(t, b.b, rmsgs)
		for _, m := range rmsgs[:n] {
			switch {
			case m.N == udp.MaxDatagram && string(m.Buf[:m.N]) == string(big[:udp.MaxDatagram]):
				got = append(got, "max")
			default:
				got = append(got, string(m.Buf[:m.N]))
			}
		}
	}
	if fmt.Sprint(got) != "[first max last]" {
		t.Errorf("received %q, want [first max last]", got)
	}
}

func testBadMessage(t *testing.T, im impl) {
	a, b := openPair(t, im, 4)
	buf := []byte("hello")
	other := netip.AddrPortFrom(loop6, 9)
	if im.addr.Is6() {
		other = netip.AddrPortFrom(loop4, 0)
	}
	for _, m := range []udp.Message{
		{Buf: buf, N: 5, Addr: b.ap(0), Path: -1},
		{Buf: buf, N: 5, Addr: b.ap(0), Path: 4},
		{Buf: buf, N: 6, Addr: b.ap(0)},
		{Buf: buf, N: -1, Addr: b.ap(0)},
		{Buf: buf, N: 5},
		{Buf: buf, N: 5, Addr: other},
	} {
		err := a.b.Send([]udp.Message{m, {Buf: buf, N: 5, Addr: b.ap(3), Path: 3}})
		if !errors.Is(err, udp.ErrBadMessage) {
			t.Errorf("Send(%+v): %v, want ErrBadMessage", m, err)
		}
		msgs := receiveMsgs(2, 64)
		if n := recvWithin(t, b.b, msgs); n != 1 || msgs[0].Path != 3 || msgs[0].Addr != a.ap(3) || string(msgs[0].Buf[:msgs[0].N]) != "hello" {
			t.Errorf("the good message of the batch: %d datagrams, %+v", n, msgs[0])
		}
	}
}

func testTruncated(t *testing.T, im impl) {
	a, b := openPair(t, im, 1)
	long := make([]byte, 200)
	if err := a.b.Send([]udp.Message{
		{Buf: long, N: 200, Addr: b.ap(0)},
		{Buf: []byte("short"), N: 5, Addr: b.ap(0)},
	}); err != nil {
		t.Fatal(err)
	}
	msgs := receiveMsgs(4, 100)
	n := recvWithin(t, b.b, msgs)
	if n != 1 || string(msgs[0].Buf[:msgs[0].N]) != "short" {
		t.Errorf("received %d, first %q; want only \"short\"", n, msgs[0].Buf[:msgs[0].N])
	}
	if st := b.b.Stats(); st.Truncated != 1 {
		t.Errorf("Stats().Truncated = %d, want 1", st.Truncated)
	}
}

func testNotOpen(t *testing.T, im impl) {
	a, _ := im.pair()
	if err := a.Send([]udp.Message{{Buf: []byte("x"), N: 1, Addr: netip.AddrPortFrom(im.addr, 9)}}); !errors.Is(err, udp.ErrNotOpen) {
		t.Errorf("Send before Open: %v", err)
	}
	if _, err := a.Receive(receiveMsgs(1, 1)); !errors.Is(err, udp.ErrNotOpen) {
		t.Errorf("Receive before Open: %v", err)
	}
	for _, paths := range []int{0, udp.MaxPaths + 1} {
		if _, err := a.Open(netip.AddrPortFrom(im.addr, 0), paths); err == nil {
			t.Errorf("Open with %d paths succeeded", paths)
		}
	}
	if err := a.Close(); err != nil {
		t.Errorf("Close of an unopened bind: %v", err)
	}
}

func testPortInUse(t *testing.T, im impl) {
	a, b := im.pair()
	sa := open(t, a, im.addr, 1)
	if _, err := b.Open(sa.ap(0), 2); err == nil {
		t.Fatalf("Open on %v, which is in use, succeeded", sa.ap(0))
	}
	// A failed Open leaves the Bind unopened: it can try again.
	sb := open(t, b, im.addr, 2)
	if err := sb.b.Send([]udp.Message{{Buf: []byte("again"), N: 5, Addr: sa.ap(0), Path: 1}}); err != nil {
		t.Fatal(err)
	}
	msgs := receiveMsgs(1, 16)
	if n := recvWithin(t, sa.b, msgs); n != 1 || msgs[0].Addr != sb.ap(1) {
		t.Errorf("received %d from %v, want 1 from %v", n, msgs[0].Addr, sb.ap(1))
	}
}

// testManyPaths opens MaxPaths paths on each side and sends one datagram
// from every path, to a different path of the peer each.
func testManyPaths(t *testing.T, im impl) {
	const paths = udp.MaxPaths
	a, b := openPair(t, im, paths)
	msgs := make([]udp.Message, paths)
	for i := range msgs {
		buf := []byte{byte(i), byte(i * 7 % paths)}
		msgs[i] = udp.Message{Buf: buf, N: 2, Addr: b.ap(i * 7 % paths), Path: i}
	}
	if err := a.b.Send(msgs); err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, paths)
	rmsgs := receiveMsgs(32, 16)
	for got := 0; got < paths; {
		n := recvWithin(t, b.b, rmsgs)
		for _, m := range rmsgs[:n] {
			src := a.path(m.Addr.Port())
			if m.N != 2 || src < 0 || int(m.Buf[0]) != src || int(m.Buf[1]) != m.Path || seen[src] {
				t.Fatalf("datagram %v from %v (path %d) on path %d: wrong or repeated", m.Buf[:m.N], m.Addr, src, m.Path)
			}
			seen[src] = true
			got++
		}
	}
}
