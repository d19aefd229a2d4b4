package core_test

import (
	"fmt"
	"net/netip"
	"testing"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// BenchmarkDataPacket measures the core's cost of one data packet end to
// end: the sender's PollTransmit, the receiver's HandleDatagram (decode,
// bitmap, copy into the posted buffer), and the share of ACKs, events and
// message turnover that falls on each packet. The two endpoints are wired
// back to back and driven the way a batching datapath drives them, so
// nothing but the core is measured. 1 MiB messages are sent one after
// another, forever reusing the same buffers.
func BenchmarkDataPacket(b *testing.B) {
	for _, name := range []string{"sr", "sr-nack", "ec:32,8", "xor:32,8", "gbn", "none"} {
		b.Run(name, func(b *testing.B) {
			scheme, err := reliability.Parse(name)
			if err != nil {
				b.Fatal(err)
			}
			benchmarkDataPacket(b, scheme, cc.Algorithm{}, 1<<20, false, 1, false)
		})
	}
}

// BenchmarkDataPacketVirtual is BenchmarkDataPacket's SR-NACK case with
// virtual messages (the simulator's: no payload bytes, so no copy into a
// posted buffer): the core's own work per packet, which the copy's cost,
// a matter of the machine's memory, does not blur.
func BenchmarkDataPacketVirtual(b *testing.B) {
	scheme, err := reliability.Parse("sr-nack")
	if err != nil {
		b.Fatal(err)
	}
	benchmarkDataPacket(b, scheme, cc.Algorithm{}, 1<<20, false, 1, true)
}

// BenchmarkDatagramPacket is BenchmarkDataPacket with CSA-UD's scheme
// between datagram peers ("ud") and, to compare, a connection ("rc"):
// with 1 MiB messages, and with one-packet messages, where a datagram
// peer leases its slots from the pool and gives them back every message.
// The "1024peers" cases give each endpoint 1023 more peers (or
// connections) with nothing to do: what idle peers add to a busy one's
// packets, which should be next to nothing.
func BenchmarkDatagramPacket(b *testing.B) {
	scheme, err := reliability.Parse("csaud")
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{1 << 20, core.DefaultMTU} {
		for _, ud := range []bool{false, true} {
			for _, peers := range []int{1, 1024} {
				name := fmt.Sprintf("%s/%dKiB", map[bool]string{false: "rc", true: "ud"}[ud], size>>10)
				if peers > 1 {
					name += fmt.Sprintf("/%dpeers", peers)
				}
				b.Run(name, func(b *testing.B) {
					benchmarkDataPacket(b, scheme, cc.Algorithm{}, size, ud, peers, false)
				})
			}
		}
	}
}

// BenchmarkDataPacketCC is BenchmarkDataPacket's SR-NACK case with each
// congestion controller on: what the controller's calls add per packet.
// The back-to-back pair never queues, so the windows and rates grow to
// their maximum and hold back nothing after the warm-up; only the
// controllers' bookkeeping is measured, and the driver's turns and the
// datagrams back per packet (reported) are none's. Credit's grants are
// datagrams back of its own.
func BenchmarkDataPacketCC(b *testing.B) {
	for _, name := range cc.Names() {
		b.Run(name, func(b *testing.B) {
			alg, err := cc.Parse(name)
			if err != nil {
				b.Fatal(err)
			}
			scheme, err := reliability.Parse("sr-nack")
			if err != nil {
				b.Fatal(err)
			}
			benchmarkDataPacket(b, scheme, alg, 1<<20, false, 1, false)
		})
	}
}

func benchmarkDataPacket(b *testing.B, scheme reliability.Scheme, alg cc.Algorithm, size int, datagram bool, peers int, virtual bool) {
	// The harness's clock runs 32 packets a microsecond (1 Tbit/s): a
	// line rate above it keeps a pacing controller's rate from binding, so
	// the figure is the controller's cost per packet, not its pacing. It
	// also sizes NSCC's maximum window, 1.5 BDP at the harness's 31 ns
	// RTT: at 10 Tbit/s that was 58 KB, under a chunk, and held NSCC to
	// about 15 packets a driver's turn (0.066 turns per packet against
	// none's 0.035), so its figure had been the driver's turns as much as
	// its own bookkeeping.
	cfg := core.Config{Scheme: scheme, InitialRTT: monotime.Millisecond, CC: alg, LineRate: 1e15}
	ea, eb := core.NewEndpoint(), core.NewEndpoint()
	uds := map[*core.Endpoint]*core.Datagram{}
	newConn := func(e *core.Endpoint, id, peer uint64) *core.Conn {
		if !datagram {
			c, err := e.NewConn(id, peer, netip.AddrPort{}, cfg)
			if err != nil {
				b.Fatal(err)
			}
			return c
		}
		if uds[e] == nil {
			d, err := e.NewDatagram(cfg)
			if err != nil {
				b.Fatal(err)
			}
			uds[e] = d
		}
		c, err := uds[e].AddPeer(id, peer, netip.AddrPort{})
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	a, rb := newConn(ea, 1, 2), newConn(eb, 2, 1)
	for i := range uint64(peers - 1) { // idle ones
		newConn(ea, 3+2*i, 4+2*i)
		newConn(eb, 4+2*i, 3+2*i)
	}
	msg := message(size)
	recvBuf := make([]byte, size)
	buf := make([]byte, core.DefaultMTU+wire.ParityLen)
	// The datagram as the receiver's datapath would hand it over. Only the
	// header is refreshed per packet: gathering the payload is the
	// datapath's work (writev or GSO on a real network), not the core's,
	// and the receiver's cost does not depend on the payload's value.
	dgram := make([]byte, core.DefaultMTU+wire.ParityLen)
	var now monotime.Time
	start := func() {
		if virtual {
			if _, err := rb.PostRecvVirtual(size); err != nil {
				b.Fatal(err)
			}
			if _, err := a.SendVirtual(size, nil); err != nil {
				b.Fatal(err)
			}
			return
		}
		if _, err := rb.PostRecv(recvBuf); err != nil {
			b.Fatal(err)
		}
		if _, err := a.Send(msg); err != nil {
			b.Fatal(err)
		}
	}
	start()
	dataPackets, turns, backward := 0, 0, 0
	// pump is one turn of a batching driver: up to 32 datagrams each way
	// (one recvmmsg/sendmmsg batch), then events, then the next deadline.
	pump := func() {
		turns++
		turn := now
		for range 32 {
			var t core.Transmit
			ok := ea.PollTransmit(now, buf, &t)
			if !ok {
				break
			}
			if t.Data {
				dataPackets++
				// The clock moves on by a packet's time at 1 Tbit/s: a
				// frozen clock would hold a pacing controller (DCQCN, a
				// packet of catch-up) to one packet per batch however
				// high its rate, and the figure would be driver turns.
				now = now.Add(monotime.Microsecond / 32)
			}
			n := copy(dgram, buf[:t.Len])
			_ = eb.HandleDatagram(now, core.Received{Buf: dgram[:n+len(t.Payload)]})
		}
		for range 32 {
			var t core.Transmit
			ok := eb.PollTransmit(now, buf, &t)
			if !ok {
				break
			}
			backward++
			_ = ea.HandleDatagram(now, core.Received{Buf: buf[:t.Len]})
		}
		for {
			ev, ok := eb.PollEvent()
			if !ok {
				break
			}
			if ev.Kind == core.EventRecvDone {
				if err := rb.Complete(core.RecvHandle(ev.Msg)); err != nil {
					b.Fatal(err)
				}
			}
		}
		for {
			ev, ok := ea.PollEvent()
			if !ok {
				break
			}
			if ev.Kind == core.EventSendDone {
				start()
			}
		}
		for _, e := range []*core.Endpoint{ea, eb} {
			if t, ok := e.NextTimeout(); ok && t <= now {
				e.HandleTimeout(now) // controllers' timers and grants (credit)
			}
		}
		now = turn.Add(monotime.Microsecond)
	}
	// Warm up: one whole message, so every ring and slot has its size.
	for dataPackets < max(size/core.DefaultMTU*2, 64) {
		pump()
	}
	dataPackets, turns, backward = 0, 0, 0
	b.SetBytes(core.DefaultMTU)
	b.ReportAllocs()
	b.ResetTimer()
	for dataPackets < b.N {
		pump()
	}
	// What the driver did per data packet: the same with a controller as
	// without, where the controller holds nothing back
	// (bench/cc-core-share.sh relies on it).
	b.ReportMetric(float64(turns)/float64(dataPackets), "turns/pkt")
	b.ReportMetric(float64(backward)/float64(dataPackets), "acks/pkt")
}

// BenchmarkPayloadCopy is the floor under BenchmarkDataPacket: the one copy
// of a 4 KiB payload into a 1 MiB posted buffer that every received data
// packet needs. The core's own work is the difference.
func BenchmarkPayloadCopy(b *testing.B) {
	// The payload as the receiver finds it: behind the DATA header in the
	// received datagram. The 36-byte DATA header sdrnet had before left
	// it at 36: an offset that is not a multiple of 8 made the copy slower.
	for _, off := range []int{wire.MessageLen, 36} {
		b.Run(fmt.Sprintf("at%d", off), func(b *testing.B) {
			dgram := make([]byte, wire.MaxHeaderLen+core.DefaultMTU)
			copy(dgram[off:], message(core.DefaultMTU))
			src := dgram[off : off+core.DefaultMTU]
			dst := make([]byte, 1<<20)
			b.SetBytes(core.DefaultMTU)
			b.ReportAllocs()
			off := 0
			for b.Loop() {
				copy(dst[off:], src)
				off = (off + core.DefaultMTU) % len(dst)
			}
		})
	}
}
