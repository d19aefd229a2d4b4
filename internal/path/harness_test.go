package path

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

const (
	us  = monotime.Microsecond
	pkt = 4096
)

// inFlight is a packet on its way: its ack (or loss report) is due at due.
type inFlight struct{ sent, due monotime.Time }

// fakeNet drives a Selector the way a sender would, with fake time: one
// packet every gap; each path has a fixed RTT; a packet sent on a dead path
// is reported lost after rto (or never, when rto is zero), any other is
// acked after its path's RTT.
type fakeNet struct {
	s    Selector
	t    *Table
	now  monotime.Time
	gap  monotime.Duration
	rtt  []monotime.Duration
	dead []bool
	// capacity, when set, is in packets per gap; a path drops the packets
	// its token bucket (4 packets deep) cannot pass.
	capacity []float64
	tokens   []float64
	rto      monotime.Duration
	acks     [][]inFlight // per path, in order of due time
	loss     [][]inFlight
	picks    []int
}

func newFakeNet(tb testing.TB, kind Kind, rtt []monotime.Duration, seed uint64) *fakeNet {
	tb.Helper()
	s, err := New(kind, len(rtt), seed)
	if err != nil {
		tb.Fatal(err)
	}
	n := len(rtt)
	return &fakeNet{
		s: s, t: TableOf(s), gap: us, rtt: rtt, dead: make([]bool, n), rto: 3 * maxRTT(rtt),
		acks: make([][]inFlight, n), loss: make([][]inFlight, n), picks: make([]int, n),
	}
}

func maxRTT(rtt []monotime.Duration) monotime.Duration {
	var m monotime.Duration
	for _, r := range rtt {
		m = max(m, r)
	}
	return m
}

func uniformRTT(n int, rtt monotime.Duration) []monotime.Duration {
	r := make([]monotime.Duration, n)
	for i := range r {
		r[i] = rtt
	}
	return r
}

// step advances time by one gap, delivers the acks and loss reports due,
// then sends one packet and returns its path.
func (f *fakeNet) step() int {
	f.now = f.now.Add(f.gap)
	for p := range f.acks {
		q := f.acks[p]
		for len(q) > 0 && q[0].due <= f.now {
			f.s.OnAcked(f.now, p, pkt, f.now.Sub(q[0].sent))
			q = q[1:]
		}
		f.acks[p] = q
		q = f.loss[p]
		for len(q) > 0 && q[0].due <= f.now {
			f.s.OnLost(f.now, p)
			q = q[1:]
		}
		f.loss[p] = q
	}
	i := f.s.Select(f.now)
	if i < 0 || i >= len(f.rtt) {
		panic("Select returned an index out of range")
	}
	f.s.OnSent(f.now, i, pkt)
	dropped := false
	if f.capacity != nil {
		if f.tokens == nil {
			f.tokens = make([]float64, len(f.capacity))
		}
		for p, c := range f.capacity {
			f.tokens[p] = min(f.tokens[p]+c, 4)
		}
		if dropped = f.tokens[i] < 1; !dropped {
			f.tokens[i]--
		}
	}
	switch {
	case !f.dead[i] && !dropped:
		f.acks[i] = append(f.acks[i], inFlight{sent: f.now, due: f.now.Add(f.rtt[i])})
	case f.rto > 0:
		f.loss[i] = append(f.loss[i], inFlight{sent: f.now, due: f.now.Add(f.rto)})
	}
	f.picks[i]++
	return i
}

// run steps for d and returns how many packets each path got meanwhile.
func (f *fakeNet) run(d monotime.Duration) []int {
	got := make([]int, len(f.rtt))
	for end := f.now.Add(d); f.now < end; {
		got[f.step()]++
	}
	return got
}
