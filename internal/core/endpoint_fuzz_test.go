package core_test

import (
	"errors"
	"net/netip"
	"sync"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// The fuzz targets build a fresh pair of endpoints for every input, so a
// crash replays from its input alone. That only pays if building and
// driving a pair is cheap: the first version used 4 KiB packets, 1024
// message slots and ~100 KB messages, cost about a millisecond and 2.7 MB
// of allocation per input (more under coverage instrumentation), and
// minimizing one 4 KiB input took so many runs that fuzzing sat at 0
// execs/s for most of a minute. Small packets, few slots and messages of a
// few dozen packets reach the same code: every scheme, several chunks per
// message, parity, ACK bitmaps, NACKs, CTS, slot generations that wrap.
const (
	fuzzMTU     = 256
	fuzzChunk   = 4 * fuzzMTU // several chunks per message: chunk-unit ACKs
	fuzzMaxMsgs = 8           // five messages in flight, slots of every state
	// fuzzMaxDatagram bounds the fuzzed datagram. A real one is at most
	// MTU+ParityLen here; the margin keeps over-long inputs of every type
	// in reach, while the bound keeps minimization (whose runs grow with
	// the input's length) from taking the fuzzer's whole time budget.
	fuzzMaxDatagram = 2 * (fuzzMTU + wire.ParityLen)
)

// fuzzSchemes are the schemes of the messages in flight, parsed once per
// process: building a Reed-Solomon code costs more than a whole run.
var fuzzSchemes = sync.OnceValue(func() []reliability.Scheme {
	var out []reliability.Scheme
	for _, name := range []string{"ec:4,2", "sr-nack", "gbn", "xor:4,2", "sr"} {
		s, err := reliability.Parse(name)
		if err != nil {
			panic(err)
		}
		out = append(out, s)
	}
	return out
})

// fuzzPayload is the bytes every message sends; receive buffers are
// scratch, reused by every run (their contents are not checked).
var (
	fuzzPayload = func() []byte {
		b := make([]byte, 24*fuzzMTU)
		for i := range b {
			b[i] = byte(i*7 + i>>8)
		}
		return b
	}()
	fuzzRecvBufs [5][]byte
)

func fuzzConfig() core.Config {
	return core.Config{MTU: fuzzMTU, ChunkSize: fuzzChunk, MaxMsgs: fuzzMaxMsgs, InitialRTT: monotime.Millisecond}
}

// fuzzLoadedPair returns a pair with a message of every scheme sent from
// A to B, at after the start: the CTS go out at once, data and parity
// after half a round trip (0.5 ms), ACKs and NACKs come back from 1 ms,
// and all is done within a few ms. seen, if not nil, is shown every
// datagram sent.
func fuzzLoadedPair(t testing.TB, seen func([]byte), at monotime.Duration) *coretest.Pair {
	link := testLink()
	// Losing every 17th datagram brings NACKs, retransmissions and
	// parity repairs into play, the same ones in every run.
	sent := 0
	link.Drop = func(b []byte) bool {
		if seen != nil {
			seen(b)
		}
		sent++
		return sent%17 == 0
	}
	cfg := fuzzConfig()
	pair, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, A: cfg, B: cfg})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range fuzzSchemes() {
		n := 5*fuzzMTU + 997*i // 5 to 21 packets, the last partial
		if fuzzRecvBufs[i] == nil {
			fuzzRecvBufs[i] = make([]byte, len(fuzzPayload))
		}
		if _, err := pair.B.Conn.PostRecv(fuzzRecvBufs[i][:n+i]); err != nil {
			t.Fatal(err)
		}
		if _, err := pair.A.Conn.SendWith(fuzzPayload[:n], s); err != nil {
			t.Fatal(err)
		}
	}
	target := pair.Now.Add(at)
	if err := pair.Drive(func() bool { return pair.Now >= target }, coretest.Limits{}); err != nil && !isIdle(err) {
		t.Fatal(err)
	}
	return pair
}

// fuzzDriveLimits bounds the drive after an injection. An undisturbed pair
// finishes its messages in a few hundred steps; a datagram that makes an
// endpoint poll forever, or re-arm a timer for the same instant, runs into
// the step bound and fails the input. (Simulated time is not bounded: the
// next event after the goal may be a HELLO resent a second later.)
var fuzzDriveLimits = coretest.Limits{Steps: 200_000}

// FuzzHandleDatagram feeds arbitrary datagrams to both ends of a
// connection that has messages of every kind in flight. Whatever arrives,
// the endpoints must not panic, and timers and polling must keep working:
// the pair goes on until it is idle or 50 ms have passed, within a bound
// on its steps.
func FuzzHandleDatagram(f *testing.F) {
	// Real datagrams of every type the pair sends, captured from a whole
	// run, are the seeds: they carry this pair's connection ids and
	// geometry, so mutations start deep inside the handlers. They are
	// injected mid-transfer (1.1 ms), when every kind is in flight.
	const mid = 110
	kept := map[wire.Type]int{}
	fuzzLoadedPair(f, func(b []byte) {
		h, err := wire.ParseHeader(b)
		if err == nil && kept[h.Type] < 2 {
			kept[h.Type]++
			f.Add(append([]byte(nil), b...), uint8(mid))
		}
	}, 100*monotime.Millisecond) // the whole transfer
	geo := wire.Geometry{MsgLen: 5000, MTU: fuzzMTU, ChunkShift: 2, Scheme: uint8(reliability.KindECMDS), K: 4, M: 2}
	buf := make([]byte, fuzzMaxDatagram)
	p := wire.Parity{Conn: 2, Geometry: geo, Index: 1, Stripe: 3, Payload: make([]byte, fuzzMTU)}
	n, _ := p.Encode(buf)
	f.Add(append([]byte(nil), buf[:n]...), uint8(mid))
	a := wire.Ack{Conn: 1, Flags: wire.FlagChunkUnits, Cum: 2, Base: 64}
	n, _ = wire.EncodeAck(buf, &a, []uint64{^uint64(0)})
	f.Add(append([]byte(nil), buf[:n]...), uint8(mid))
	nk := wire.Nack{Conn: 1, Reason: wire.NackFallback}
	n, _ = wire.EncodeNack(buf, &nk, []wire.Range{{Start: 0, Count: 1 << 31}})
	f.Add(append([]byte(nil), buf[:n]...), uint8(mid))
	c := wire.CTS{Conn: 1, BufLen: 1 << 40, Credit: 1}
	n, _ = c.Encode(buf)
	f.Add(append([]byte(nil), buf[:n]...), uint8(0))
	cl := wire.Close{Conn: 2, Code: 9}
	n, _ = cl.Encode(buf)
	f.Add(append([]byte(nil), buf[:n]...), uint8(mid))

	// at is when the datagram arrives, in steps of 10 us: before, during
	// or after the transfer.
	f.Fuzz(func(t *testing.T, b []byte, at uint8) {
		if len(b) > fuzzMaxDatagram {
			return
		}
		pair := fuzzLoadedPair(t, nil, monotime.Duration(at)*10*monotime.Microsecond)
		for range 2 {
			_ = pair.B.EP.HandleDatagram(pair.Now, core.Received{Buf: b})
			_ = pair.A.EP.HandleDatagram(pair.Now, core.Received{Buf: b})
		}
		pair.Wake()
		target := pair.Now.Add(50 * monotime.Millisecond)
		err := pair.Drive(func() bool { return pair.Now >= target }, fuzzDriveLimits)
		if err != nil && !isIdle(err) {
			t.Fatalf("after the datagram %x: %v", b, err)
		}
	})
}

// isIdle says a Drive ended because both sides had nothing left to do,
// which a forged ACK or CLOSE may legitimately cause.
func isIdle(err error) bool { return errors.Is(err, coretest.ErrIdle) }

// FuzzHandshake feeds an arbitrary datagram to a listening endpoint (from
// a peer address of its own) and to a dialing one, either before the
// handshake or once it is done, then lets the real handshake and a small
// message run. The endpoints must not panic, and what the handshake
// negotiates must stay within bounds: the listener accepts at most one
// connection per dialer, a negotiated MTU and message window never exceed
// what the dialer asked for, the chunk stays a power-of-two multiple of
// the MTU, and no datagram sent is longer than the MTU asked for allows.
// A dialer never adopts an MTU below MinMTU (it used to take whatever an
// ACCEPT named, down to 1 byte).
func FuzzHandshake(f *testing.F) {
	buf := make([]byte, wire.HandshakeLen)
	hello := wire.Handshake{Source: 7, Paths: 1, MTU: fuzzMTU, ChunkShift: 2, MaxMsgs: fuzzMaxMsgs, Echo: 1}
	n, _ := hello.Encode(buf, wire.TypeHello)
	f.Add(append([]byte(nil), buf[:n]...), uint16(9), false)
	f.Add(append([]byte(nil), buf[:n]...), uint16(1), true) // the dialer's own address
	accept := wire.Handshake{Conn: 1, Source: 1, Paths: 4, Scheme: uint8(reliability.KindECMDS), K: 4, M: 2,
		MTU: 128, ChunkShift: 1, MaxMsgs: 2, Echo: 0}
	n, _ = accept.Encode(buf, wire.TypeAccept)
	f.Add(append([]byte(nil), buf[:n]...), uint16(2), false)
	f.Add(append([]byte(nil), buf[:n]...), uint16(2), true)
	accept.MaxMsgs = 0x80000000
	n, _ = accept.Encode(buf, wire.TypeAccept)
	f.Add(append([]byte(nil), buf[:n]...), uint16(2), false)
	ping := wire.Ping{Conn: 1, Echo: 3}
	n, _ = ping.Encode(buf)
	f.Add(append([]byte(nil), buf[:n]...), uint16(2), true)

	f.Fuzz(func(t *testing.T, b []byte, port uint16, late bool) {
		fuzzHandshakeWith(t, fuzzConfig(), b, port, late)
	})
}

// FuzzKeyedHandshake is FuzzHandshake between ends that key their
// connection in the handshake and seal every packet after it (full
// protection, a stand-in key exchange: sdr's FuzzNoiseKeys fuzzes the
// Noise one): a forged or altered HELLO, ACCEPT or PING, before or after
// the real handshake, must not break the keyed connection's invariants.
func FuzzKeyedHandshake(f *testing.F) {
	buf := make([]byte, wire.HandshakeLen+64)
	hello := wire.Handshake{Source: 7, Flags: wire.FlagKeys, Paths: 1, MTU: fuzzMTU, ChunkShift: 2, MaxMsgs: fuzzMaxMsgs, Echo: 1,
		Keys: wire.KeyExchange{Protection: wire.ProtectFull, Msg: []byte("a shared secret")}}
	n, _ := hello.Encode(buf, wire.TypeHello)
	f.Add(append([]byte(nil), buf[:n]...), uint16(9), false)
	accept := wire.Handshake{Conn: 1, Source: 1, Flags: wire.FlagKeys, Paths: 1, MTU: fuzzMTU, ChunkShift: 2, MaxMsgs: fuzzMaxMsgs,
		Keys: wire.KeyExchange{Protection: wire.ProtectFull, Msg: []byte("ok")}}
	n, _ = accept.Encode(buf, wire.TypeAccept)
	f.Add(append([]byte(nil), buf[:n]...), uint16(2), false)
	f.Add(append([]byte(nil), buf[:n]...), uint16(2), true)
	f.Fuzz(func(t *testing.T, b []byte, port uint16, late bool) {
		cfg := fuzzConfig()
		cfg.Keys = func(bool) core.KeyExchange { return fixedKeys{} }
		cfg.Protection = wire.ProtectFull
		fuzzHandshakeWith(t, cfg, b, port, late)
	})
}

// fuzzHandshakeWith delivers the datagram b from port (or from the
// listener, to the dialer) to a pair of ends configured by cfg, early or
// once their own handshake is done, and checks what they negotiated.
func fuzzHandshakeWith(t *testing.T, cfg core.Config, b []byte, port uint16, late bool) {
	{
		if len(b) > fuzzMaxDatagram {
			return
		}
		link := testLink()
		longest := 0
		link.Drop = func(b []byte) bool { longest = max(longest, len(b)); return false }
		pair, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, A: cfg, B: cfg, Handshake: true})
		if err != nil {
			t.Fatal(err)
		}
		accepted, established := 0, 0
		pair.A.OnEvent = func(ev core.Event) {
			if ev.Kind == core.EventEstablished {
				established++
			}
		}
		pair.B.OnEvent = func(ev core.Event) {
			if ev.Kind == core.EventAccepted {
				accepted++
			}
		}
		if late {
			// Once the real handshake is done.
			_ = pair.Drive(func() bool { return pair.B.Conn != nil && established > 0 }, fuzzDriveLimits)
		}
		from := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
		for range 2 { // the second copy is a duplicate HELLO or ACCEPT
			_ = pair.B.EP.HandleDatagram(pair.Now, core.Received{Buf: b, From: from})
			_ = pair.A.EP.HandleDatagram(pair.Now, core.Received{Buf: b, From: pair.B.Addr})
		}
		pair.Wake()
		target := pair.Now.Add(50 * monotime.Millisecond)
		sent := false
		err = pair.Drive(func() bool {
			if !sent && established > 0 && pair.B.Conn != nil {
				// Whatever was negotiated, a message can be handed over.
				sent = true
				// (A forged CLOSE may have ended either connection.)
				if _, err := pair.B.Conn.PostRecv(make([]byte, 3*fuzzMTU)); err != nil && !errors.Is(err, core.ErrClosed) {
					t.Fatalf("PostRecv on the accepted connection: %v", err)
				}
				if _, err := pair.A.Conn.Send(fuzzPayload[:2*fuzzMTU+1]); err != nil && !errors.Is(err, core.ErrClosed) {
					t.Fatalf("Send on the dialed connection: %v", err)
				}
				pair.Wake()
			}
			return pair.Now >= target
		}, fuzzDriveLimits)
		if err != nil && !isIdle(err) {
			t.Fatalf("after the datagram %x: %v", b, err)
		}

		// One dialer, plus at most the one forged HELLO's source.
		if accepted > 2 {
			t.Fatalf("listener accepted %d connections from at most two dialers", accepted)
		}
		if established > 1 {
			t.Fatalf("dialer established %d times", established)
		}
		for _, s := range []*coretest.Side{pair.A, pair.B} {
			if s.Conn == nil {
				continue
			}
			got := s.Conn.Config()
			if got.MTU > cfg.MTU || got.MTU < core.MinMTU || got.MaxMsgs > cfg.MaxMsgs || got.MaxMsgs < 1 || got.MaxMsgs&(got.MaxMsgs-1) != 0 {
				t.Fatalf("negotiated MTU %d, %d messages in flight; asked for at most %d and %d (a power of two)",
					got.MTU, got.MaxMsgs, cfg.MTU, cfg.MaxMsgs)
			}
			if got.MTU < 1 || got.ChunkSize%got.MTU != 0 || (got.ChunkSize/got.MTU)&(got.ChunkSize/got.MTU-1) != 0 {
				t.Fatalf("negotiated chunk %d is not a power-of-two multiple of the MTU %d", got.ChunkSize, got.MTU)
			}
		}
		if longest > cfg.MTU+wire.ParityLen+protectionOverhead(cfg) {
			t.Fatalf("a %d-byte datagram left an endpoint with MTU %d", longest, cfg.MTU)
		}
	}
}

// protectionOverhead is what sealing adds to a datagram under cfg.
func protectionOverhead(cfg core.Config) int {
	if cfg.Keys == nil {
		return 0
	}
	return wire.TrailerLen
}
