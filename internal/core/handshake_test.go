package core_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
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
	if err := e.HandleDatagramFrom(0, testAddr, 0, hello(t), false); !errors.Is(err, core.ErrNotListening) {
		t.Fatalf("HELLO to a non-listening endpoint: %v", err)
	}
	if err := e.Listen(core.Config{MTU: 3}); err == nil {
		t.Fatal("Listen with MTU 3 accepted")
	}
	if _, err := e.Dial(0, testAddr, core.Config{Paths: 129}); err == nil {
		t.Fatal("Dial with 129 paths accepted")
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
