package reliability

import (
	"fmt"
	"slices"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// fakeRecv is a RecvMessage over a plain packet set, recording what the
// hooks ask for.
type fakeRecv struct {
	have      []bool
	hi        uint32
	rtt, pkt  monotime.Duration
	gap       monotime.Duration
	first     monotime.Time
	injection monotime.Duration
	step      StepProgress
	nacks     []string
	reordered int
	fallbacks int
}

func newFakeRecv(n int) *fakeRecv {
	return &fakeRecv{have: make([]bool, n), rtt: 100 * monotime.Microsecond, pkt: monotime.Microsecond}
}

func (f *fakeRecv) Packets() uint32 { return uint32(len(f.have)) }
func (f *fakeRecv) Present() uint32 {
	n := uint32(0)
	for _, h := range f.have {
		if h {
			n++
		}
	}
	return n
}
func (f *fakeRecv) NextMissing(from, to uint32) uint32 {
	for p := from; p < to; p++ {
		if !f.have[p] {
			return p
		}
	}
	return to
}
func (f *fakeRecv) Highest() uint32   { return f.hi }
func (f *fakeRecv) WholeFrom() uint32 { return 0 }
func (f *fakeRecv) Nack(reason wire.NackReason, from, to uint32) {
	f.nacks = append(f.nacks, fmt.Sprintf("%s[%d,%d)", reasonNames[reason], from, to))
}
func (f *fakeRecv) Fallback()                     { f.fallbacks++; f.Nack(wire.NackFallback, 0, f.Packets()) }
func (f *fakeRecv) Reordered(monotime.Time)       { f.reordered++ }
func (f *fakeRecv) GapDelay() monotime.Duration   { return f.gap }
func (f *fakeRecv) RoundTrip() monotime.Duration  { return f.rtt }
func (f *fakeRecv) PacketTime() monotime.Duration { return f.pkt }
func (f *fakeRecv) FirstArrival() monotime.Time   { return f.first }
func (f *fakeRecv) Injection() monotime.Duration  { return f.injection }
func (f *fakeRecv) Step() StepProgress            { return f.step }

var reasonNames = map[wire.NackReason]string{
	wire.NackGap: "gap", wire.NackFallback: "fallback", wire.NackOutOfOrder: "out-of-order",
}

// deliver runs the receive hooks for packet p the way the core does.
func (f *fakeRecv) deliver(s Scheme, st *RecvState, now monotime.Time, p uint32, retransmit bool) Admission {
	if a := s.Admit(now, st, f, p); a != Admit {
		return a
	}
	if !f.have[p] {
		s.Arrived(now, st, f, p, retransmit)
		f.have[p] = true
		f.hi = max(f.hi, p+1)
	}
	return Admit
}

func TestGoBackNAdmit(t *testing.T) {
	f := newFakeRecv(8)
	var st RecvState
	st.Reset()
	s := GoBackN{}
	steps := []struct {
		p    uint32
		want Admission
	}{
		{0, Admit}, {2, RefuseEarly}, {3, RefuseEarly}, {0, RefuseStale}, {1, Admit}, {3, RefuseEarly}, {2, Admit},
	}
	for i, step := range steps {
		if got := f.deliver(s, &st, 0, step.p, false); got != step.want {
			t.Errorf("step %d: packet %d admitted %v, want %v", i, step.p, got, step.want)
		}
	}
	// One NAK per gap: packet 3 after 2 repeats nothing until 1 arrived.
	want := []string{"out-of-order[1,2)", "out-of-order[2,3)"}
	if !slices.Equal(f.nacks, want) {
		t.Errorf("NAKs %q, want %q", f.nacks, want)
	}
}

// at is a time us microseconds in.
func at(us int64) monotime.Time { return monotime.Time(us * int64(monotime.Microsecond)) }

// srNackRecv is an SR-NACK receiver of 16 packets, a 10 us gap delay, a
// 100 us round trip, with packet 0 arrived at time 0.
func srNackRecv() (*fakeRecv, *RecvState, SelectiveRepeat) {
	f := newFakeRecv(16)
	f.gap = 10 * monotime.Microsecond
	st := new(RecvState)
	st.Reset()
	s := SelectiveRepeat{NACK: true}
	f.deliver(s, st, 0, 0, false)
	return f, st, s
}

func TestSRNackGapTimers(t *testing.T) {
	f, st, s := srNackRecv()
	f.deliver(s, st, at(1), 3, false) // opens the gap [1,3)
	if st.Due() != at(11) {
		t.Fatalf("gap timer at %v, want %v", st.Due(), at(11))
	}
	s.RecvTimeout(at(11), st, f)
	// The NACK goes out, and the re-NACK waits RTT*1.5 plus the 2 packets
	// missing below the highest (the 12 above it are new data).
	if want := []string{"gap[0,3)"}; !slices.Equal(f.nacks, want) {
		t.Fatalf("NACKs %q, want %q", f.nacks, want)
	}
	if want := at(11 + 150 + 2); st.Due() != want {
		t.Fatalf("re-NACK at %v, want %v", st.Due(), want)
	}
	f.deliver(s, st, at(20), 1, false) // an original below what was NACKed: reordering
	if f.reordered != 1 {
		t.Errorf("reordered %d times, want 1", f.reordered)
	}
	f.deliver(s, st, at(21), 2, true) // a retransmission says nothing of reordering
	if f.reordered != 1 {
		t.Errorf("a retransmission counted as reordering")
	}
	s.RecvTimeout(st.Due(), st, f)
	if len(f.nacks) != 1 {
		t.Errorf("re-NACKed %q with nothing missing below the NACKed range", f.nacks[1:])
	}
	var rto RecvState
	rto.Reset()
	if (SelectiveRepeat{}).Arrived(0, &rto, f, 9, false); rto.Due() != monotime.Never {
		t.Errorf("SR-RTO armed a receive timer")
	}
}

// TestSRNackRenackOnlyWhatHadTime: a re-NACK asks again for the gaps
// NACKed when it was armed, and for a gap NACKed since only if its resend
// has had time to come back (a round trip and a quarter plus the missing
// packets' time: 129 us here); a gap too recent waits for the next
// re-NACK, a re-NACK delay after the first.
func TestSRNackRenackOnlyWhatHadTime(t *testing.T) {
	for _, tc := range []struct {
		name        string
		secondGap   int64 // when packet 6 arrives, opening the gap [3,6)
		firstRenack string
		// The re-NACK that covers both comes a round trip and a half
		// plus the 4 missing packets after the later of the first
		// re-NACK, when it covered both, and the NACK it left out.
		secondRenack int64
	}{
		{"in time", 20, "gap[1,6)", 162 + 154},   // NACKed at 30, 132 us before the re-NACK
		{"too late", 100, "gap[1,2)", 110 + 154}, // NACKed at 110, 52 us before
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, st, s := srNackRecv()
			f.deliver(s, st, at(1), 2, false) // gap [1,2)
			s.RecvTimeout(at(11), st, f)      // NACKed; re-NACK armed at 11 + 150 + 1
			f.deliver(s, st, at(tc.secondGap), 6, false)
			s.RecvTimeout(at(tc.secondGap+10), st, f)
			if want := []string{"gap[0,2)", "gap[2,6)"}; !slices.Equal(f.nacks, want) {
				t.Fatalf("NACKs %q, want %q", f.nacks, want)
			}
			first := at(11 + 150 + 1)
			if st.Due() != first {
				t.Fatalf("re-NACK at %v, want %v", st.Due(), first)
			}
			s.RecvTimeout(first, st, f)
			if got := f.nacks[2:]; !slices.Equal(got, []string{tc.firstRenack}) {
				t.Errorf("first re-NACK %q, want %q", got, tc.firstRenack)
			}
			if want := at(tc.secondRenack); st.Due() != want {
				t.Fatalf("second re-NACK at %v, want %v", st.Due(), want)
			}
			s.RecvTimeout(st.Due(), st, f)
			if got, want := f.nacks[3:], []string{"gap[1,6)"}; !slices.Equal(got, want) {
				t.Errorf("second re-NACK %q, want %q", got, want)
			}
		})
	}
}

func TestErasureCodingFallback(t *testing.T) {
	const us = monotime.Microsecond
	f := newFakeRecv(8)
	f.injection = 20 * us
	var st RecvState
	st.Reset()
	s := NewErasureCoding(must(NewMDS(4, 2)), 0)
	s.Started(0, &st, f)
	if want := at(20 + 100); st.Due() != want {
		t.Fatalf("fallback at %v, want injection + b*RTT = %v", st.Due(), want)
	}
	f.injection = 50 * us // arrivals showed a slower sender: the deadline moves
	s.RecvTimeout(at(120), &st, f)
	if f.fallbacks != 0 || st.Due() != at(150) {
		t.Fatalf("after the first deadline: %d fallbacks, due %v; want 0 and %v", f.fallbacks, st.Due(), at(150))
	}
	s.RecvTimeout(at(150), &st, f)
	if f.fallbacks != 1 {
		t.Fatalf("%d fallbacks, want 1", f.fallbacks)
	}
	s.RecvTimeout(st.Due(), &st, f) // still all missing: NACKed again, as a fallback
	if want := []string{"fallback[0,8)", "fallback[0,8)"}; !slices.Equal(f.nacks, want) {
		t.Errorf("NACKs %q, want %q", f.nacks, want)
	}
}

// fakeSend records what a send timeout asks for.
type fakeSend struct{ did []string }

func (f *fakeSend) Packets() uint32 { return 64 }
func (f *fakeSend) Chunks() uint32  { return 4 }
func (f *fakeSend) Cum() uint32     { return 17 }
func (f *fakeSend) Resend(from, to uint32) {
	f.did = append(f.did, fmt.Sprintf("resend[%d,%d)", from, to))
}
func (f *fakeSend) ResendChunk(c uint32)          { f.did = append(f.did, fmt.Sprintf("chunk %d", c)) }
func (f *fakeSend) ResendUnacked()                { f.did = append(f.did, "unacked") }
func (f *fakeSend) Rewind(from uint32)            { f.did = append(f.did, fmt.Sprintf("rewind %d", from)) }
func (f *fakeSend) ArmBackstop(now monotime.Time) { f.did = append(f.did, "backstop") }

func TestSendHooks(t *testing.T) {
	ec := NewErasureCoding(must(NewXOR(4, 2)), 0)
	tests := []struct {
		s                     Scheme
		firstPass, retx       bool // ChunkTimer in and after the first pass
		backstop              bool
		chunkTimeout, timeout []string
	}{
		{None{}, false, false, false, nil, nil},
		{GoBackN{}, true, true, false, []string{"rewind 17"}, nil},
		{SelectiveRepeat{}, true, true, false, []string{"chunk 2"}, nil},
		{SelectiveRepeat{NACK: true}, true, true, false, []string{"chunk 2"}, nil},
		{ec, false, true, true, []string{"chunk 2"}, []string{"unacked", "backstop"}},
	}
	for _, tt := range tests {
		name := Name(tt.s)
		if got := tt.s.ChunkTimer(true); got != tt.firstPass {
			t.Errorf("%s: ChunkTimer(first pass) = %v, want %v", name, got, tt.firstPass)
		}
		if got := tt.s.ChunkTimer(false); got != tt.retx {
			t.Errorf("%s: ChunkTimer(after) = %v, want %v", name, got, tt.retx)
		}
		if got := tt.s.Backstop(); got != tt.backstop {
			t.Errorf("%s: Backstop() = %v, want %v", name, got, tt.backstop)
		}
		if tt.retx {
			var f fakeSend
			tt.s.SendTimeout(0, &f, 2, false)
			if !slices.Equal(f.did, tt.chunkTimeout) {
				t.Errorf("%s: chunk timeout did %q, want %q", name, f.did, tt.chunkTimeout)
			}
		}
		if tt.backstop {
			var f fakeSend
			tt.s.SendTimeout(0, &f, 0, true)
			if !slices.Equal(f.did, tt.timeout) {
				t.Errorf("%s: backstop did %q, want %q", name, f.did, tt.timeout)
			}
		}
	}
}

// TestForWire: every kind a packet may name builds the scheme of that
// kind, with the code the packet names; nonsense builds nothing.
func TestForWire(t *testing.T) {
	for i := range 1 << 8 {
		k := Kind(i)
		s := ForWire(k, 8, 2)
		if !k.Valid() {
			if s != nil {
				t.Errorf("ForWire(%v) = %v, want nil", k, Name(s))
			}
			continue
		}
		if s == nil || s.Kind() != k {
			t.Errorf("ForWire(%v) = %v, want that kind", k, s)
			continue
		}
		if c := s.Code(); c != nil && (c.K() != 8 || c.M() != 2) {
			t.Errorf("ForWire(%v, 8, 2) has code (%d,%d)", k, c.K(), c.M())
		}
	}
	if s := ForWire(KindECMDS, 60, 10); s != nil {
		t.Errorf("ForWire(ec, 60, 10) = %v: K+M exceeds %d", Name(s), MaxShards)
	}
}
