package core_test

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// FuzzHandleDatagram feeds arbitrary datagrams to both ends of a
// connection that has messages of every kind in flight. Whatever arrives,
// the endpoints must not panic, and timers and polling must keep working.
func FuzzHandleDatagram(f *testing.F) {
	geo := wire.Geometry{MsgLen: 100_000, MTU: 4096, ChunkShift: 4, Scheme: uint8(reliability.KindECMDS), K: 32, M: 8}
	buf := make([]byte, 9000)
	d := wire.Data{Conn: 2, Packet: 3, Geometry: geo, Payload: make([]byte, 4096)}
	n, _ := d.Encode(buf)
	f.Add(append([]byte(nil), buf[:n]...))
	p := wire.Parity{Conn: 2, Geometry: geo, Index: 7, Stripe: 15, Payload: make([]byte, 4096)}
	n, _ = p.Encode(buf)
	f.Add(append([]byte(nil), buf[:n]...))
	a := wire.Ack{Conn: 1, Flags: wire.FlagChunkUnits, Cum: 2, Base: 64}
	n, _ = wire.EncodeAck(buf, &a, []uint64{^uint64(0)})
	f.Add(append([]byte(nil), buf[:n]...))
	nk := wire.Nack{Conn: 1, Reason: wire.NackFallback}
	n, _ = wire.EncodeNack(buf, &nk, []wire.Range{{Start: 0, Count: 1 << 31}})
	f.Add(append([]byte(nil), buf[:n]...))
	c := wire.CTS{Conn: 1, BufLen: 1 << 40, Credit: 1}
	n, _ = c.Encode(buf)
	f.Add(append([]byte(nil), buf[:n]...))
	f.Add([]byte{1, 6, 0, 0, 0, 0, 0, 2, 0, 0, 0, 9, 0, 0})

	f.Fuzz(func(t *testing.T, b []byte) {
		pair := newPair(t, testLink(), nil, 1)
		for i, name := range []string{"ec:32,8", "sr-nack", "gbn", "xor:4,2"} {
			s, _ := reliability.Parse(name)
			if _, err := pair.B.Conn.PostRecv(make([]byte, 50_000+i)); err != nil {
				t.Fatal(err)
			}
			if _, err := pair.A.Conn.SendWith(message(20_000+4096*i), s); err != nil {
				t.Fatal(err)
			}
		}
		target := pair.Now.Add(300 * monotime.Microsecond)
		_ = pair.Drive(func() bool { return pair.Now >= target }, coretest.Limits{})
		for range 2 {
			_ = pair.B.EP.HandleDatagram(pair.Now, 0, b)
			_ = pair.A.EP.HandleDatagram(pair.Now, 0, b)
		}
		pair.Wake()
		target = pair.Now.Add(50 * monotime.Millisecond)
		_ = pair.Drive(func() bool { return pair.Now >= target }, coretest.Limits{})
	})
}
