package core_test

import (
	"errors"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// dropTypes loses the first n packets of type t.
func dropTypes(t wire.Type, n int) func([]byte) bool {
	return func(b []byte) bool {
		if h, err := wire.ParseHeader(b); err == nil && h.Type == t && n > 0 {
			n--
			return true
		}
		return false
	}
}

func dialPair(t *testing.T, link coretest.LinkConfig, a, b core.Config) (*coretest.Pair, *[]core.Event) {
	t.Helper()
	p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, A: a, B: b, Handshake: true})
	if err != nil {
		t.Fatal(err)
	}
	var events []core.Event
	p.A.OnEvent = func(ev core.Event) { events = append(events, ev) }
	return p, &events
}

func has(events []core.Event, k core.EventKind) *core.Event {
	for i := range events {
		if events[i].Kind == k {
			return &events[i]
		}
	}
	return nil
}

func TestHandshake(t *testing.T) {
	for _, tt := range []struct {
		name  string
		drops func([]byte) bool
	}{
		{"clean", nil},
		{"hello lost twice", dropTypes(wire.TypeHello, 2)},
		{"accept lost", dropTypes(wire.TypeAccept, 1)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			link := testLink()
			link.Drop = tt.drops
			p, events := dialPair(t, link, core.Config{MTU: 9000, MaxMsgs: 64}, core.Config{MTU: 4096, MaxMsgs: 256})
			if _, err := p.A.Conn.Send([]byte("x")); !errors.Is(err, core.ErrNotEstablished) {
				t.Fatalf("Send while dialing = %v", err)
			}
			if err := p.Drive(func() bool { return has(*events, core.EventEstablished) != nil }, coretest.Limits{}); err != nil {
				t.Fatal(err)
			}
			if p.B.Conn == nil {
				t.Fatal("B accepted nothing")
			}
			for _, c := range []*core.Conn{p.A.Conn, p.B.Conn} {
				if cfg := c.Config(); cfg.MTU != 4096 || cfg.MaxMsgs != 64 {
					t.Fatalf("negotiated MTU %d, max messages %d; want 4096 and 64", cfg.MTU, cfg.MaxMsgs)
				}
			}
			if rtt := p.A.Conn.Stats().SmoothedRTT; rtt < monotime.Millisecond || rtt > 2*monotime.Millisecond {
				t.Fatalf("RTT from the handshake = %v, want about 1ms", rtt)
			}
			msg := message(1 << 20)
			if _, err := p.Transfer(msg, len(msg), nil, coretest.Limits{}); err != nil {
				t.Fatal(err)
			}
			if n := p.B.EP.Stats(); n.Malformed != 0 {
				t.Fatalf("listener saw %d malformed datagrams", n.Malformed)
			}
		})
	}
}

// TestDialDeadPeer dials a peer that never answers: the dial must fail
// with ErrHandshakeTimeout, on time, and not hang.
func TestDialDeadPeer(t *testing.T) {
	link := testLink()
	link.Loss = 0.999999
	p, events := dialPair(t, link, core.Config{HandshakeTimeout: 3 * monotime.Second}, core.Config{})
	err := p.Drive(func() bool { return has(*events, core.EventClosed) != nil }, coretest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ev := has(*events, core.EventClosed)
	if !errors.Is(ev.Err, core.ErrHandshakeTimeout) {
		t.Fatalf("closed with %v", ev.Err)
	}
	if p.Now < monotime.Time(3*monotime.Second) || p.Now > monotime.Time(3*monotime.Second+monotime.Millisecond) {
		t.Fatalf("gave up at %v, want at the 3s handshake timeout", monotime.Duration(p.Now))
	}
}

// TestIdleTimeout checks keepalives hold an idle connection open, and a
// peer that goes silent is detected within the idle timeout.
func TestIdleTimeout(t *testing.T) {
	var dead bool
	link := testLink()
	link.Drop = func([]byte) bool { return dead }
	cfg := core.Config{IdleTimeout: 2 * monotime.Second}
	p, events := dialPair(t, link, cfg, cfg)
	if err := p.Drive(func() bool { return has(*events, core.EventEstablished) != nil }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	idleUntil := p.Now.Add(20 * monotime.Second)
	if err := p.Drive(func() bool { return p.Now >= idleUntil }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	if ev := has(*events, core.EventClosed); ev != nil {
		t.Fatalf("idle but healthy connection closed: %v", ev.Err)
	}
	dead = true
	cut := p.Now
	if err := p.Drive(func() bool { return has(*events, core.EventClosed) != nil }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	if ev := has(*events, core.EventClosed); !errors.Is(ev.Err, core.ErrIdleTimeout) {
		t.Fatalf("closed with %v", ev.Err)
	}
	if d := p.Now.Sub(cut); d > 2*monotime.Second+monotime.Millisecond {
		t.Fatalf("silent peer detected after %v, want within the 2s idle timeout", d)
	}
}

func TestListenErrors(t *testing.T) {
	e := core.NewEndpoint()
	if err := e.HandleDatagram(0, core.Received{Buf: hello(t), From: testAddr}); !errors.Is(err, core.ErrNotListening) {
		t.Fatalf("HELLO to a non-listening endpoint: %v", err)
	}
	if err := e.Listen(core.Config{MTU: 3}); err == nil {
		t.Fatal("Listen with MTU 3 accepted")
	}
	if _, err := e.Dial(0, testAddr, core.Config{Paths: 129}); err == nil {
		t.Fatal("Dial with 129 paths accepted")
	}
	if _, err := e.Dial(0, testAddr, core.Config{Paths: 4, Select: path.DWRR, SelectTuning: path.Tuning{DWRRWindowRTTs: -1}}); err == nil {
		t.Fatal("Dial with a DWRR window of -1 RTTs accepted")
	}
}

var testAddr = netip.MustParseAddrPort("127.0.0.1:9")

func hello(t *testing.T) []byte {
	h := wire.Handshake{Source: 5, Paths: 1, MTU: 4096, MaxMsgs: 16}
	b := make([]byte, wire.HandshakeLen)
	if _, err := h.Encode(b, wire.TypeHello); err != nil {
		t.Fatal(err)
	}
	return b
}

// hub joins several endpoints by address in fake time, with no delay: the
// test double for admission tests with many dialers.
type hub struct {
	now    monotime.Time
	eps    map[netip.AddrPort]*core.Endpoint
	events map[*core.Endpoint][]core.Event
	buf    []byte
	// drop, when set, loses the datagrams it returns true for.
	drop func(from, to netip.AddrPort, b []byte) bool
	// sent, when set, sees every datagram sent.
	sent func(from netip.AddrPort, t core.Transmit, b []byte)
}

func newHub() *hub {
	return &hub{eps: map[netip.AddrPort]*core.Endpoint{}, events: map[*core.Endpoint][]core.Event{},
		buf: make([]byte, core.MaxMTU+wire.ParityLen)}
}

func (h *hub) add(addr string) (*core.Endpoint, netip.AddrPort) {
	a := netip.MustParseAddrPort(addr)
	e := core.NewEndpoint()
	h.eps[a] = e
	return e, a
}

// run delivers datagrams and fires timers until nothing happens or d of
// fake time has passed.
func (h *hub) run(d monotime.Duration) {
	end := h.now.Add(d)
	addrs := make([]netip.AddrPort, 0, len(h.eps))
	for a := range h.eps {
		addrs = append(addrs, a)
	}
	slices.SortFunc(addrs, func(a, b netip.AddrPort) int { return a.Compare(b) })
	for h.now <= end {
		moved := false
		for _, a := range addrs {
			e := h.eps[a]
			if t, ok := e.NextTimeout(); ok && t <= h.now {
				e.HandleTimeout(h.now)
			}
			for {
				var t core.Transmit
				ok := e.PollTransmit(h.now, h.buf, &t)
				if !ok {
					break
				}
				moved = true
				b := append(append([]byte(nil), h.buf[:t.Len]...), t.Payload...)
				if h.sent != nil {
					h.sent(a, t, b)
				}
				if to := h.eps[t.Addr]; to != nil && (h.drop == nil || !h.drop(a, t.Addr, b)) {
					_ = to.HandleDatagram(h.now, core.Received{Buf: b, From: a})
				}
			}
			for {
				ev, ok := e.PollEvent()
				if !ok {
					break
				}
				h.events[e] = append(h.events[e], ev)
			}
		}
		if moved {
			continue
		}
		next := monotime.Never
		for _, e := range h.eps {
			if t, ok := e.NextTimeout(); ok {
				next = min(next, t)
			}
		}
		if next == monotime.Never || next > end {
			h.now = end
			return
		}
		h.now = max(h.now, next)
	}
}

func (h *hub) has(e *core.Endpoint, k core.EventKind) *core.Event { return has(h.events[e], k) }

// TestRandomIDsUse64Bits: two endpoints drawing random ids hand out ids
// above 2^32, and a handshake and a message between them work, so every
// packet names its connection by all 64 bits of its id.
func TestRandomIDsUse64Bits(t *testing.T) {
	p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: testLink(), Handshake: true, RandomIDs: true})
	if err != nil {
		t.Fatal(err)
	}
	var events []core.Event
	p.A.OnEvent = func(ev core.Event) { events = append(events, ev) }
	if err := p.Drive(func() bool { return has(events, core.EventEstablished) != nil }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*coretest.Side{p.A, p.B} {
		if id := s.Conn.ID(); id < 1<<32 || s.EP.Conn(id) != s.Conn {
			t.Fatalf("connection id %#x: want one above 2^32 that finds its connection", id)
		}
	}
	if p.A.Conn.ID() == p.B.Conn.ID() {
		t.Fatalf("both ends drew id %#x", p.A.Conn.ID())
	}
	msg := message(256 << 10)
	if _, err := p.Transfer(msg, len(msg), nil, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
}

// TestRetry checks the listener's stateless retry: a HELLO without a
// cookie gets a Retry no longer than itself and creates nothing; only
// the cookie echoed from the address, port and id it was issued to,
// within its lifetime, creates a connection.
func TestRetry(t *testing.T) {
	const life = 2 * monotime.Second
	var now monotime.Time
	newListener := func(t *testing.T) *core.Endpoint {
		e := core.NewEndpoint()
		if err := e.ListenWith(core.Config{}, core.ListenConfig{Secret: []byte("0123456789abcdef"), CookieLifetime: life}); err != nil {
			t.Fatal(err)
		}
		return e
	}
	buf := make([]byte, 2048)
	getRetry := func(t *testing.T, e *core.Endpoint, to netip.AddrPort, source uint64) wire.Cookie {
		t.Helper()
		if err := e.HandleDatagram(now, core.Received{Buf: hello(t), From: to}); err != nil {
			t.Fatal(err)
		}
		var tx core.Transmit
		ok := e.PollTransmit(now, buf, &tx)
		if !ok || tx.Conn != nil || tx.Addr != to || tx.Len > wire.HandshakeLen {
			t.Fatalf("answer to a HELLO: %+v %v, want a Retry of at most %d bytes to %v", tx, ok, wire.HandshakeLen, to)
		}
		r, typ, err := wire.ParseHandshake(buf[:tx.Len])
		if err != nil || typ != wire.TypeAccept || r.Flags != wire.FlagRetry || r.Conn != source {
			t.Fatalf("Retry = %+v %v %v", r, typ, err)
		}
		if e.PollTransmit(now, buf, &tx) {
			t.Fatal("more than one answer to one HELLO")
		}
		return r.Cookie
	}
	echo := func(ck wire.Cookie, source uint64) []byte {
		h := wire.Handshake{Flags: wire.FlagCookie, Source: source, Paths: 1, MTU: 4096, MaxMsgs: 16, Cookie: ck}
		b := make([]byte, wire.HelloCookieLen)
		_, _ = h.Encode(b, wire.TypeHello)
		return b
	}
	other := netip.MustParseAddrPort("127.0.0.1:10")
	for _, tt := range []struct {
		name   string
		from   netip.AddrPort
		source uint64
		after  monotime.Duration
		forge  bool
		accept bool
	}{
		{"echoed at once", testAddr, 5, 0, false, true},
		{"echoed at the end of its life", testAddr, 5, life, false, true},
		{"expired", testAddr, 5, life + monotime.Millisecond, false, false},
		{"from another port", other, 5, 0, false, false},
		{"for another connection id", testAddr, 6, 0, false, false},
		{"for an id that differs above 2^32", testAddr, 1<<32 | 5, 0, false, false},
		{"forged", testAddr, 5, 0, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			now = monotime.Time(monotime.Second)
			e := newListener(t)
			ck := getRetry(t, e, testAddr, 5)
			if st := e.Stats(); st.Conns != 0 || st.Retries != 1 {
				t.Fatalf("after a HELLO without a cookie: %+v", st)
			}
			if _, ok := e.PollEvent(); ok {
				t.Fatal("an event before any connection")
			}
			if tt.forge {
				ck.MAC[0] ^= 0x80
			}
			now = now.Add(tt.after)
			_ = e.HandleDatagram(now, core.Received{Buf: echo(ck, tt.source), From: tt.from})
			st := e.Stats()
			var tx core.Transmit
			ok := e.PollTransmit(now, buf, &tx)
			if !ok {
				t.Fatal("no answer to the echoed cookie")
			}
			r, _, err := wire.ParseHandshake(buf[:tx.Len])
			if err != nil {
				t.Fatal(err)
			}
			if !tt.accept {
				if st.Conns != 0 || st.BadCookies != 1 || st.Retries != 2 || r.Flags != wire.FlagRetry || tx.Addr != tt.from {
					t.Fatalf("bad cookie: stats %+v, answer %+v to %v; want a fresh Retry and no state", st, r, tx.Addr)
				}
				return
			}
			ev, _ := e.PollEvent()
			if st.Conns != 1 || st.HalfOpen != 1 || ev.Kind != core.EventAccepted || r.Flags != 0 || r.Conn != 5 || tx.Conn != ev.Conn {
				t.Fatalf("valid cookie: stats %+v, event %v, answer %+v; want one half-open connection and an ACCEPT", st, ev.Kind, r)
			}
		})
	}
}

// TestHelloFlood sprays 100,000 HELLOs from random addresses, ports and
// ids at a listener, some with forged cookies: no connection and no
// memory beyond the fixed answer queue, the answers bounded by it and by
// the Retry rate.
func TestHelloFlood(t *testing.T) {
	for _, tt := range []struct {
		name string
		rate int
		want int // Retries sent: 100 rounds, 1 ms apart, the queue drained after each
	}{
		{"queue bound", -1, 100 * core.MaxPendingAnswers},
		{"default rate", 0, core.MaxPendingAnswers + 99*core.DefaultRetryRate/1000},
	} {
		t.Run(tt.name, func(t *testing.T) { helloFlood(t, tt.rate, tt.want) })
	}
}

func helloFlood(t *testing.T, rate, want int) {
	e := core.NewEndpoint()
	if err := e.ListenWith(core.Config{}, core.ListenConfig{Secret: []byte("0123456789abcdef"), RetryRate: rate}); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, wire.HelloCookieLen)
	buf := make([]byte, 2048)
	var sent, answered int
	for round := range 100 {
		for range 1000 {
			h := wire.Handshake{Source: rng.Uint64() | 1, Paths: 1, MTU: 4096, MaxMsgs: 16, Echo: rng.Uint64()}
			if round%2 == 1 {
				h.Flags = wire.FlagCookie
				h.Cookie.Time = rng.Uint32()
				h.Cookie.MAC[0] = byte(rng.Uint32())
			}
			n, _ := h.Encode(b, wire.TypeHello)
			from := netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, byte(rng.Uint32()), byte(rng.Uint32()), 1}), uint16(rng.Uint32()))
			_ = e.HandleDatagram(monotime.Time(round)*monotime.Time(monotime.Millisecond), core.Received{Buf: b[:n], From: from})
			sent++
		}
		for {
			if !e.PollTransmit(0, buf, new(core.Transmit)) {
				break
			}
			answered++
		}
	}
	st := e.Stats()
	if st.Conns != 0 || st.HalfOpen != 0 {
		t.Fatalf("the flood created connections: %+v", st)
	}
	if _, ok := e.PollEvent(); ok {
		t.Fatal("the flood raised an event")
	}
	if int(st.Retries) != answered || int(st.Retries+st.Unanswered) != sent || st.BadCookies != uint64(sent/2) {
		t.Fatalf("stats %+v; %d sent, %d answered", st, sent, answered)
	}
	if answered != want {
		t.Fatalf("%d answered, want %d", answered, want)
	}
	from := netip.MustParseAddrPort("10.1.1.1:1")
	hb := hello(t)
	var tx core.Transmit
	if n := testing.AllocsPerRun(1000, func() {
		_ = e.HandleDatagram(monotime.Time(monotime.Second), core.Received{Buf: hb, From: from})
		_ = e.PollTransmit(0, buf, &tx)
	}); n != 0 {
		t.Fatalf("a HELLO and its Retry allocate %v times", n)
	}
}

// TestAdmissionLimits dials a listener from many endpoints: within the
// limits the dials succeed through the retry; past MaxHalfOpen (dialers
// that never confirm) and past MaxConns they are refused with
// ErrRefused; half-open connections expire and are reaped, and so are
// closed ones, so the listener's connections come back to zero.
func TestAdmissionLimits(t *testing.T) {
	h := newHub()
	l, laddr := h.add("127.0.0.1:1")
	if err := l.ListenWith(core.Config{IdleTimeout: -1}, core.ListenConfig{MaxConns: 3, MaxHalfOpen: 2, HalfOpenTimeout: 2 * monotime.Second}); err != nil {
		t.Fatal(err)
	}
	var silent bool
	h.drop = func(from, to netip.AddrPort, b []byte) bool {
		// Dialers 100-109 lose every PONG they send: they never confirm.
		if hd, err := wire.ParseHeader(b); err == nil && hd.Type == wire.TypePing && from.Port() >= 100 && from.Port() < 110 {
			return true
		}
		return silent && to == laddr
	}
	dial := func(port int) (*core.Endpoint, *core.Conn) {
		e, _ := h.add("127.0.0.1:" + strconv.Itoa(port))
		c, err := e.Dial(h.now, laddr, core.Config{IdleTimeout: -1, HandshakeTimeout: 3 * monotime.Second})
		if err != nil {
			t.Fatal(err)
		}
		return e, c
	}
	// Two dialers that never confirm fill the half-open table; a third
	// is refused.
	e1, _ := dial(100)
	e2, _ := dial(101)
	h.run(100 * monotime.Millisecond)
	if h.has(e1, core.EventEstablished) == nil || h.has(e2, core.EventEstablished) == nil {
		t.Fatal("the first two dials failed")
	}
	if st := l.Stats(); st.Conns != 2 || st.HalfOpen != 2 || st.Retries != 2 {
		t.Fatalf("listener after two unconfirmed dials: %+v", st)
	}
	e3, _ := dial(102)
	h.run(100 * monotime.Millisecond)
	if ev := h.has(e3, core.EventClosed); ev == nil || !errors.Is(ev.Err, core.ErrRefused) {
		t.Fatalf("dial past MaxHalfOpen: %+v, want ErrRefused", ev)
	}
	// They expire and are reaped; their dialers are told.
	h.run(3 * monotime.Second)
	if st := l.Stats(); st.Conns != 0 || st.HalfOpen != 0 || st.HalfOpenExpired != 2 || st.Reaped != 2 || st.Refused != 1 {
		t.Fatalf("listener after the half-open timeout: %+v", st)
	}
	if h.has(e1, core.EventClosed) == nil {
		t.Fatal("the unconfirmed dialer was not told its connection closed")
	}
	// Three confirmed dials fill MaxConns; a fourth is refused.
	var conns []*core.Conn
	for port := 200; port < 203; port++ {
		e, c := dial(port)
		h.run(100 * monotime.Millisecond)
		if h.has(e, core.EventEstablished) == nil {
			t.Fatalf("dial %d failed: %v", port, h.events[e])
		}
		conns = append(conns, c)
	}
	if st := l.Stats(); st.Conns != 3 || st.HalfOpen != 0 {
		t.Fatalf("listener after three confirmed dials: %+v", st)
	}
	e4, _ := dial(203)
	h.run(100 * monotime.Millisecond)
	if ev := h.has(e4, core.EventClosed); ev == nil || !errors.Is(ev.Err, core.ErrRefused) {
		t.Fatalf("dial past MaxConns: %+v, want ErrRefused", ev)
	}
	// Closed connections are reaped on both sides.
	for _, c := range conns {
		_ = c.Close(0, "done")
	}
	h.run(100 * monotime.Millisecond)
	if st := l.Stats(); st.Conns != 0 || st.Reaped != 5 {
		t.Fatalf("listener after its peers closed: %+v", st)
	}
	for port := 200; port < 203; port++ {
		if st := h.eps[netip.MustParseAddrPort("127.0.0.1:"+strconv.Itoa(port))].Stats(); st.Conns != 0 || st.Reaped != 1 {
			t.Fatalf("dialer %d after closing: %+v", port, st)
		}
	}
	// Stopped accepting: a verified dialer is refused, and a silent
	// listener leaves a dialer to its handshake timeout.
	l.StopAccepting()
	e5, _ := dial(300)
	h.run(100 * monotime.Millisecond)
	if ev := h.has(e5, core.EventClosed); ev == nil || !errors.Is(ev.Err, core.ErrRefused) {
		t.Fatalf("dial after StopAccepting: %+v, want ErrRefused", ev)
	}
	silent = true
	e6, _ := dial(301)
	h.run(4 * monotime.Second)
	if ev := h.has(e6, core.EventClosed); ev == nil || !errors.Is(ev.Err, core.ErrHandshakeTimeout) {
		t.Fatalf("dial to a silent listener: %+v", ev)
	}
}

// TestRetryMultipath checks every HELLO of a multipath dialer leaves on
// path 0, the source port its cookie is bound to.
func TestRetryMultipath(t *testing.T) {
	h := newHub()
	l, laddr := h.add("127.0.0.1:1")
	if err := l.Listen(core.Config{}); err != nil {
		t.Fatal(err)
	}
	d, _ := h.add("127.0.0.1:2")
	var hellos int
	h.sent = func(from netip.AddrPort, tx core.Transmit, b []byte) {
		if hd, err := wire.ParseHeader(b); err == nil && hd.Type == wire.TypeHello {
			hellos++
			if tx.Path != 0 {
				t.Errorf("HELLO on path %d", tx.Path)
			}
		}
	}
	if _, err := d.Dial(0, laddr, core.Config{Paths: 8, Select: path.RoundRobin}); err != nil {
		t.Fatal(err)
	}
	h.run(100 * monotime.Millisecond)
	if h.has(d, core.EventEstablished) == nil || hellos != 2 {
		t.Fatalf("dial: %d HELLOs, events %v", hellos, h.events[d])
	}
	if st := l.Stats(); st.Retries != 1 || st.BadCookies != 0 || st.Conns != 1 || st.HalfOpen != 0 {
		t.Fatalf("listener: %+v", st)
	}
}

// TestPathMTU checks that each end's route caps the MTU both use, the
// chunk following it down, and that a route that says nothing changes
// nothing.
func TestPathMTU(t *testing.T) {
	route := func(mtu int) func(netip.AddrPort) int { return func(netip.AddrPort) int { return mtu } }
	for _, tt := range []struct {
		name               string
		dialer, listener   func(netip.AddrPort) int
		chunk              int
		wantMTU, wantChunk int
	}{
		{"dialer's route", route(1400), nil, 0, 1400, 44800},
		{"listener's route", nil, route(1000), 0, 1000, 64000},
		{"both, the smaller", route(1400), route(1180), 0, 1180, 37760},
		{"a chunk asked for", route(1400), nil, 1 << 20, 1400, 716800},
		{"a chunk too large for the route's MTU", route(1400), route(1400), 1 << 29, 1400, 1400 << 16},
		{"route says nothing", route(0), route(-1), 0, 8192, 65536},
		{"route above the MTU", route(9000), route(65000), 0, 8192, 65536},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := core.Config{MTU: 8192, ChunkSize: tt.chunk, PathMTU: tt.dialer}
			b := core.Config{MTU: 8192, ChunkSize: tt.chunk, PathMTU: tt.listener}
			p, events := dialPair(t, testLink(), a, b)
			if err := p.Drive(func() bool { return has(*events, core.EventEstablished) != nil }, coretest.Limits{}); err != nil {
				t.Fatal(err)
			}
			for _, c := range []*core.Conn{p.A.Conn, p.B.Conn} {
				if cfg := c.Config(); cfg.MTU != tt.wantMTU || cfg.ChunkSize != tt.wantChunk {
					t.Fatalf("MTU %d, chunk %d; want %d and %d", cfg.MTU, cfg.ChunkSize, tt.wantMTU, tt.wantChunk)
				}
			}
			msg := message(1 << 20)
			if _, err := p.Transfer(msg, len(msg), nil, coretest.Limits{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}
