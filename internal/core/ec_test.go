package core_test

import (
	"fmt"
	"testing"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// dropFirstPass returns a Drop filter that loses the first transmission of
// the chosen data chunks and parity chunks (sub-message, index); repairs
// get through.
func dropFirstPass(chunks []uint32, parity [][2]uint32) func([]byte) bool {
	lose := map[uint32]bool{}
	for _, c := range chunks {
		lose[c] = true
	}
	loseParity := map[[2]uint32]bool{}
	for _, p := range parity {
		loseParity[p] = true
	}
	return func(b []byte) bool {
		h, err := wire.ParseHeader(b)
		if err != nil {
			return false
		}
		switch h.Type {
		case wire.TypeData:
			d, err := wire.ParseData(b)
			return err == nil && d.Flags&wire.FlagRetransmit == 0 && lose[d.Packet>>d.ChunkShift]
		case wire.TypeParity:
			p, err := wire.ParseParity(b)
			return err == nil && loseParity[[2]uint32{p.Sub, uint32(p.Index)}]
		}
		return false
	}
}

func span(from, to uint32) []uint32 {
	var s []uint32
	for c := from; c < to; c++ {
		s = append(s, c)
	}
	return s
}

// TestErasureRecovery checks that EC repairs up to what the code can
// without a single retransmission, and falls back to selective repeat
// exactly when it cannot.
func TestErasureRecovery(t *testing.T) {
	mds := func(k, m int) reliability.Scheme {
		c, err := reliability.NewMDS(k, m)
		if err != nil {
			t.Fatal(err)
		}
		return reliability.NewErasureCoding(c, 0)
	}
	xor := func(k, m int) reliability.Scheme {
		c, err := reliability.NewXOR(k, m)
		if err != nil {
			t.Fatal(err)
		}
		return reliability.NewErasureCoding(c, 0)
	}
	// 64 chunks and a short tail: two full sub-messages of (32,8) and a
	// third holding one short chunk.
	const size = 64*65536 + 5000
	const lastChunk = 64
	tests := []struct {
		name     string
		scheme   reliability.Scheme
		chunks   []uint32
		parity   [][2]uint32
		fallback bool
	}{
		{"mds m whole chunks", mds(32, 8), span(0, 8), nil, false},
		{"mds m chunks of each sub-message", mds(32, 8), append(span(3, 11), span(40, 48)...), nil, false},
		{"mds data and parity", mds(32, 8), span(0, 4), [][2]uint32{{0, 0}, {0, 1}, {0, 2}, {0, 7}}, false},
		{"mds short last chunk", mds(32, 8), []uint32{lastChunk}, nil, false},
		{"mds m+1 chunks", mds(32, 8), span(0, 9), nil, true},
		{"mds all parity lost too", mds(4, 2), []uint32{1}, [][2]uint32{{0, 0}, {0, 1}}, true},
		{"xor one per group", xor(32, 8), span(8, 16), nil, false},
		{"xor two in a group", xor(32, 8), []uint32{0, 8}, nil, true},
		{"xor short last chunk", xor(32, 8), []uint32{lastChunk}, nil, false},
		{"xor (4,2) data and other group's parity", xor(4, 2), []uint32{0}, [][2]uint32{{0, 1}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			link := testLink()
			link.Drop = dropFirstPass(tt.chunks, tt.parity)
			p := newPair(t, link, tt.scheme, 1)
			res, err := p.Transfer(message(size), size, nil, coretest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if tt.fallback {
				if res.B.Fallbacks == 0 || res.A.RetxPackets == 0 {
					t.Fatalf("undecodable loss: %d fallbacks, %d retransmissions; want a fallback repair",
						res.B.Fallbacks, res.A.RetxPackets)
				}
				return
			}
			if res.A.RetxPackets != 0 || res.B.Fallbacks != 0 || res.A.RTOs != 0 {
				t.Fatalf("decodable loss: %d retransmissions, %d fallbacks, %d RTOs; want none",
					res.A.RetxPackets, res.B.Fallbacks, res.A.RTOs)
			}
			var lost uint64
			for _, c := range tt.chunks {
				lost += 16
				if c == lastChunk {
					lost = lost - 16 + 2 // 5000 bytes: two packets
				}
			}
			if res.B.RecoveredPackets != lost {
				t.Fatalf("decoded %d packets, want the %d lost", res.B.RecoveredPackets, lost)
			}
		})
	}
}

// TestErasureUnderWindow: a congestion window smaller than a coded
// sub-message (NSCC's 1.5 BDP at 1 Gbit/s and 1 ms is 187 KB; a (32,8)
// sub-message of 64 KiB chunks is 2 MiB) admits the sub-message whole:
// where every chunk loses a packet nothing is acknowledged before the
// sub-message decodes or falls back, so a window that held back its rest
// waited for ever. Each case must deliver the message.
func TestErasureUnderWindow(t *testing.T) {
	alg, err := cc.Parse("nscc")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ec:32,8", "xor:32,8"} {
		for _, lossy := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/lossy=%v", name, lossy), func(t *testing.T) {
				scheme := schemes(t)[name]
				link := testLink()
				if lossy {
					link.Drop = func(b []byte) bool { // the first packet of every chunk, first pass
						d, err := wire.ParseData(b)
						return err == nil && d.Flags&wire.FlagRetransmit == 0 && d.Packet%16 == 0
					}
				}
				cfg := core.Config{Scheme: scheme, InitialRTT: monotime.Millisecond, CC: alg, LineRate: 1e9}
				p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, A: cfg, B: cfg})
				if err != nil {
					t.Fatal(err)
				}
				const size = 6 << 20
				if _, err := p.Transfer(message(size), size, nil, coretest.Limits{}); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestErasureStallProbe: a first pass that stalls on the window after a
// sub-message whose every ACK was lost gets going again. The receiver has
// the sub-message whole, so it has nothing new to say, and erasure coding
// arms no timer per chunk in the first pass: without the stall's backstop
// (a tail probe) the transfer waited for ever.
func TestErasureStallProbe(t *testing.T) {
	alg, err := cc.Parse("nscc")
	if err != nil {
		t.Fatal(err)
	}
	probed := false
	fwd := testLink()
	fwd.Drop = func(b []byte) bool {
		if d, err := wire.ParseData(b); err == nil && d.Flags&wire.FlagRetransmit != 0 {
			probed = true
		}
		return false
	}
	rev := testLink()
	rev.Drop = func(b []byte) bool { // every ACK until the sender probes
		h, err := wire.ParseHeader(b)
		return err == nil && h.Type == wire.TypeAck && !probed
	}
	cfg := core.Config{Scheme: schemes(t)["ec:32,8"], InitialRTT: monotime.Millisecond, CC: alg, LineRate: 1e9}
	p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: fwd, Reverse: &rev, A: cfg, B: cfg})
	if err != nil {
		t.Fatal(err)
	}
	const size = 6 << 20
	res, err := p.Transfer(message(size), size, nil, coretest.Limits{Time: 10 * monotime.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !probed || res.A.RTOs == 0 {
		t.Fatalf("the transfer ended without a probe (%d RTOs)", res.A.RTOs)
	}
}

// TestDecodedReportedBeforeAck: the sender charges a packet that erasure
// decoding rebuilt to the path that lost it only if the report of the
// decode (NackDecoded) reaches it before any ACK that covers the packet;
// an ACK first credits the path with delivering it, and a dead path whose
// probes are decoded is restored by every such credit. An ACK queued
// before the decode but sent after it must not overtake the report.
func TestDecodedReportedBeforeAck(t *testing.T) {
	for _, name := range []string{"ec:32,8", "xor:32,8"} {
		t.Run(name, func(t *testing.T) {
			const chunkShift = 4 // 64 KiB chunks of 4 KiB packets
			dropped := map[uint32]bool{}
			reported := map[uint32]bool{}
			acks := 0
			// Reordering lets parity overtake data, so the arrival that
			// completes one chunk (queueing an ACK) also completes a
			// stripe, and decoding rebuilds packets that ACK will cover.
			link := testLink()
			link.Reorder, link.ReorderDelay = 0.2, 2*monotime.Millisecond
			link.Drop = func(b []byte) bool {
				h, err := wire.ParseHeader(b)
				if err != nil {
					return false
				}
				switch h.Type {
				case wire.TypeData: // lose packet 5 of every ninth chunk, first pass
					d, err := wire.ParseData(b)
					switch {
					case err != nil:
					case d.Flags&wire.FlagRetransmit != 0:
						delete(dropped, d.Packet) // repaired by resending, not decoding
					case d.Packet%(9<<chunkShift) == 5: // chunks 0, 9, 18, 27: one per XOR group
						dropped[d.Packet] = true
						return true
					}
				case wire.TypeNack:
					nk, err := wire.ParseNack(b)
					if err == nil && nk.Reason == wire.NackDecoded {
						for i := range nk.Len() {
							r := nk.Range(i)
							for p := r.Start; p < r.Start+r.Count; p++ {
								reported[p] = true
							}
						}
					}
				case wire.TypeAck:
					a, err := wire.ParseAck(b)
					if err != nil || a.Flags&wire.FlagDone != 0 {
						return false
					}
					acks++
					for p := range dropped {
						covered := a.Flags&wire.FlagChunkUnits != 0 && a.Covers(p>>chunkShift) ||
							a.Flags&wire.FlagPacketBits != 0 && a.PktChunk == p>>chunkShift && a.PktBits&(1<<(p&15)) != 0
						if covered && !reported[p] {
							t.Errorf("ACK covers packet %d before its decode was reported", p)
							delete(dropped, p)
						}
					}
				}
				return false
			}
			p := newPair(t, link, schemes(t)[name], 1)
			const size = 8 << 20
			res, err := p.Transfer(message(size), size, nil, coretest.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if res.B.RecoveredPackets == 0 || acks == 0 {
				t.Fatalf("%d packets decoded, %d ACKs: want decoding to repair, under ACKs", res.B.RecoveredPackets, acks)
			}
		})
	}
}

// TestProportionalParity: a sub-message of n < K data chunks gets
// ceil(n*M/K) parity chunks (at least one), so erasure coding never adds
// more than M/K of the data; and that parity repairs as many lost chunks
// as it has, without a retransmission.
func TestProportionalParity(t *testing.T) {
	const chunk = 64 << 10
	for _, tt := range []struct {
		name         string
		size, parity int // bytes, parity chunks sent
	}{
		{"one packet", 100, 1},
		{"2 chunks", 2 * chunk, 1},
		{"16 chunks", 16 * chunk, 4},
		{"31 chunks", 31 * chunk, 8},
		{"32 chunks", 32 * chunk, 8},
		{"33 chunks", 33 * chunk, 8 + 1},
		{"40 chunks and a packet", 40*chunk + 4096, 8 + 3},
	} {
		for _, name := range []string{"ec:32,8", "xor:32,8"} {
			t.Run(tt.name+"/"+name, func(t *testing.T) {
				link := testLink()
				// Lose the first pass of the first chunk of each XOR
				// group the last sub-message's parity covers.
				nchunks := (tt.size + chunk - 1) / chunk
				firstLast := nchunks / 32 * 32
				var lose []uint32
				if firstLast < nchunks {
					p := (tt.parity - 8*(nchunks/32))
					for c := firstLast; c < min(nchunks, firstLast+p); c++ {
						lose = append(lose, uint32(c))
					}
				}
				link.Drop = dropFirstPass(lose, nil)
				p := newPair(t, link, schemes(t)[name], 1)
				res, err := p.Transfer(message(tt.size), tt.size, nil, coretest.Limits{})
				if err != nil {
					t.Fatal(err)
				}
				stripes := uint64(min(16, (tt.size+4095)/4096))
				full := uint64(tt.size / (32 * chunk)) // full sub-messages: 16 stripes each
				lastParity := uint64(tt.parity) - 8*full
				if want := 8*full*16 + lastParity*stripes; res.A.ParityPackets != want {
					t.Errorf("%d parity packets, want %d", res.A.ParityPackets, want)
				}
				if res.A.RetxPackets != 0 || res.B.Fallbacks != 0 {
					t.Errorf("%d chunks lost of the short sub-message with %d parity: %d resent, %d fallbacks; want decoding alone",
						len(lose), lastParity, res.A.RetxPackets, res.B.Fallbacks)
				}
			})
		}
	}
}

// TestCodingAhead checks that parity coded ahead on codec workers is the
// parity coded inline: the same transfers, under loss that the parity
// repairs and loss that falls back to retransmission, end byte-identical
// (Transfer checks the SHA-256) with identical counters and timing,
// whichever goroutine coded.
func TestCodingAhead(t *testing.T) {
	w := reliability.NewWorkers(2)
	defer w.Close()
	for _, name := range []string{"ec:32,8", "ec:4,2", "xor:32,8"} {
		scheme, err := reliability.Parse(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, loss := range []float64{0, 1e-2, 5e-2} {
			for _, size := range []int{100_003, 64*65536 + 5000, 3<<20 + 17} {
				t.Run(fmt.Sprintf("%s/loss=%g/%d", name, loss, size), func(t *testing.T) {
					var res [2]coretest.Result
					for i, workers := range []*reliability.Workers{nil, w} {
						link := testLink()
						link.Loss = loss
						p := newPair(t, link, scheme, uint64(size))
						p.A.EP.SetCodecWorkers(workers)
						r, err := p.Transfer(message(size), size, nil, coretest.Limits{})
						if err != nil {
							t.Fatalf("workers=%v: %v", workers != nil, err)
						}
						res[i] = r
					}
					chunks := ((size+4095)/4096 + 15) / 16
					subs := uint64((chunks + scheme.Code().K() - 1) / scheme.Code().K())
					if res[1].A.ParityCodedAhead != subs || res[0].A.ParityCodedAhead != 0 {
						t.Fatalf("sub-messages coded ahead: %d with workers, %d without; want %d and 0",
							res[1].A.ParityCodedAhead, res[0].A.ParityCodedAhead, subs)
					}
					res[1].A.ParityCodedAhead = 0
					if res[0] != res[1] {
						t.Fatalf("coded inline: %+v\ncoded ahead: %+v", res[0], res[1])
					}
				})
			}
		}
	}
}
