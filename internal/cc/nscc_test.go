package cc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// nsccPath is an ACK clock in fake time: each round the sender puts its
// window on the wire and the ACKs come back evenly over one RTT of base
// RTT + the round's queueing delay.
type nsccPath struct {
	n     *NSCC
	now   monotime.Time
	base  monotime.Duration
	owed  int64 // bytes lost last round, acknowledged without an RTT sample
	trace func(now monotime.Time, window int64)
	noise func() monotime.Duration // added to each RTT sample: a host's lateness
}

const mss = 4096

// round runs one window. lost says whether a packet is reported lost
// (NACKed) instead of acknowledged.
func (p *nsccPath) round(delay monotime.Duration, marked bool, lost func() bool) {
	pkts := max(p.n.Window()/mss, 1)
	rtt := p.base + delay
	gap := rtt / monotime.Duration(pkts)
	for range pkts {
		p.n.OnSend(p.now, mss)
	}
	if p.owed > 0 {
		p.n.OnAck(p.now, Ack{Bytes: p.owed, InFlight: pkts * mss})
		p.owed = 0
	}
	for i := range pkts {
		p.now = p.now.Add(gap)
		if lost != nil && lost() {
			p.n.OnLoss(p.now, Loss{Bytes: mss})
			p.owed += mss
		} else {
			sample := rtt
			if p.noise != nil {
				sample += p.noise()
			}
			p.n.OnAck(p.now, Ack{Bytes: mss, RTT: sample, ECN: marked, InFlight: (pkts - i - 1) * mss})
		}
		if w := p.n.Window(); w > p.n.MaxWindow() || w < mss {
			panic("window out of bounds")
		}
		if p.trace != nil {
			p.trace(p.now, p.n.Window())
		}
	}
}

func newNSCCPath(cfg NSCCConfig) *nsccPath {
	return &nsccPath{n: NewNSCC(cfg), base: cfg.BaseRTT}
}

func TestNSCCDefaults(t *testing.T) {
	c := NSCCDefaults(testParams)
	// 100 Gbit/s x 12 us is the reference network: a = b = 1.
	want := NSCCConfig{
		LineRate: 100e9, BaseRTT: 12 * us, MSS: mss, Target: 12 * us, A: 1, B: 1,
		Alpha: 4 * mss / float64(12*us), FI: 5 * mss, Eta: 0.15 * mss, Gamma: 0.8,
		DelayWeight: 0.0125, QAThreshold: 48 * us, QAGate: 3, MaxWindowBDPs: 1.5,
		AdjustBytes: 8 * mss, AdjustPeriod: 12 * us, FastIncreaseDelay: 1 * us,
		FastIncreaseScale: 0.25, LossNeedsCongestion: true, LossDelayWeight: 0.125,
		LossDelayThreshold: 12 * us, MaxLineRate: 1e12,
		MaxTarget: 1 * monotime.Millisecond, MaxGain: 1,
		// The host mode's settings, unused without HostNoise.
		DelayGain: 0.5, DelayEta: 2 * mss, InitialWindow: 16 * mss, Quantum: mss,
	}
	if math.Abs(c.A-1) > 1e-12 || math.Abs(c.Alpha-want.Alpha) > 1e-12*want.Alpha {
		t.Errorf("a %g alpha %g, want 1, %g", c.A, c.Alpha, want.Alpha)
	}
	c.A, c.Alpha, c.FI, c.Eta, c.FastIncreaseScale = want.A, want.Alpha, want.FI, want.Eta, want.FastIncreaseScale
	want.params = testParams.WithDefaults() // what it derives from, for LearnBaseRTT
	if c != want {
		t.Errorf("defaults %+v\nwant %+v", c, want)
	}
	alg, err := Parse("nscc")
	if err != nil {
		t.Fatal(err)
	}
	n := alg.New(testParams).(*NSCC)
	if n.Window() != 225000 || n.MaxWindow() != 225000 || n.NextSend() != 0 || n.NextTimer() != monotime.Never {
		t.Errorf("fresh: window %d max %d next send %d timer %d, want 1.5 BDP, no pacing, no timer",
			n.Window(), n.MaxWindow(), n.NextSend(), n.NextTimer())
	}
	// DelayEta is two datagrams' bytes, at most the default 4 KiB ones'.
	for _, tc := range []struct{ mss, want int }{{1024, 2048}, {4096, 8192}, {8192, 8192}} {
		if got := NSCCDefaults(Params{MSS: tc.mss}).DelayEta; got != float64(tc.want) {
			t.Errorf("DelayEta with a %d-byte MSS: %g, want %d", tc.mss, got, tc.want)
		}
	}
	// A sub-microsecond RTT keeps a 1 us target; a long path scales up.
	if got := NSCCDefaults(Params{BaseRTT: 300 * monotime.Nanosecond}).Target; got != 1*us {
		t.Errorf("target at 300 ns RTT %v, want 1us", got)
	}
	if got := NSCCDefaults(Params{LineRate: 10e9, BaseRTT: 10 * monotime.Millisecond}).A; math.Abs(got-12.5e6/150000) > 1e-9 {
		t.Errorf("a at 10G x 10ms %g, want %g", got, 12.5e6/150000.0)
	}
}

// TestNSCCTarget: NSCCOptions.Target replaces the default target and every
// floor on it, and the gains scaled by the target follow it.
func TestNSCCTarget(t *testing.T) {
	ms := monotime.Millisecond
	host := Params{LineRate: 1e9, BaseRTT: 20 * ms, MSS: mss, HostNoise: 2 * ms}
	for _, tt := range []struct {
		name   string
		target monotime.Duration
		want   monotime.Duration
	}{
		{"default on a host: the host-noise floor, above the 1 ms cap", 0, 2 * ms},
		{"below the least queueing delay", monotime.Nanosecond, nsccMinQDly},
		{"below the host-noise floor", 500 * us, 500 * us},
		{"above the 1 ms cap", 5 * ms, 5 * ms},
	} {
		c := NSCCDefaultsWith(host, NSCCOptions{Target: tt.target})
		if c.Target != tt.want {
			t.Errorf("%s: target %v, want %v", tt.name, c.Target, tt.want)
		}
		if wantB := float64(tt.want) / float64(nsccRefRTT); math.Abs(c.B-wantB) > 1e-9*wantB {
			t.Errorf("%s: b %g, want %g", tt.name, c.B, wantB)
		}
	}
}

// TestNSCCWith: the algorithm a driver builds with options makes
// controllers that run with them, under NSCC's name.
func TestNSCCWith(t *testing.T) {
	ms := monotime.Millisecond
	a := NSCCWith(NSCCOptions{Target: 500 * us})
	n, ok := a.New(Params{LineRate: 1e9, BaseRTT: 20 * ms, HostNoise: ms}).(*NSCC)
	if !ok {
		t.Fatalf("NSCCWith made a %T", a.New(Params{}))
	}
	if got := n.Config().Target; got != 500*us {
		t.Errorf("target %v, want the option's 500us", got)
	}
	if a.Name() != "nscc" {
		t.Errorf("name %q, want nscc", a.Name())
	}
}

// TestNSCCHostTarget: on a real host the default target is at least a
// twentieth of the base RTT (hostTarget), so a long path's law has room
// over the host's noise; paths up to 20 ms keep 1 ms, simulation keeps
// uec.cpp's capped target, and a set target wins.
func TestNSCCHostTarget(t *testing.T) {
	ms := monotime.Millisecond
	for _, tt := range []struct {
		name          string
		rtt, noise, p monotime.Duration
		want          monotime.Duration
	}{
		{"loopback", 200 * us, ms, 0, ms},
		{"20 ms", 20 * ms, ms, 0, ms},
		{"50 ms, the lossy long haul", 50 * ms, ms, 0, 2500 * us},
		{"200 ms", 200 * ms, ms, 0, 10 * ms},
		{"50 ms in simulation", 50 * ms, 0, 0, ms},
		{"50 ms, a set target", 50 * ms, ms, 500 * us, 500 * us},
	} {
		c := NSCCDefaultsWith(Params{LineRate: 1e9, BaseRTT: tt.rtt, MSS: mss, HostNoise: tt.noise}, NSCCOptions{Target: tt.p})
		if c.Target != tt.want {
			t.Errorf("%s: target %v, want %v", tt.name, c.Target, tt.want)
		}
	}
}

// TestNSCCLearnBaseRTT: on a real host whose base RTT nobody measured
// (a listener), the first sample becomes the base RTT though it is above
// the default, and what derives from it follows; a measured base RTT and
// simulation keep uec.cpp's rule (only a lower sample replaces it).
func TestNSCCLearnBaseRTT(t *testing.T) {
	ms := monotime.Millisecond
	host := Params{LineRate: 10e9, LearnLineRate: true, MSS: mss, Quantum: 16 * mss, HostNoise: ms}
	n := NewNSCC(NSCCDefaults(host))
	n.scaleLineRate(2) // learned before the first sample: kept
	n.OnSend(0, mss)
	n.OnAck(50*monotime.Time(ms), Ack{Bytes: mss, RTT: 50 * ms})
	if c := n.Config(); n.baseRTT != 50*ms || c.BaseRTT != 50*ms || c.Target != 2500*us || c.QAThreshold != 200*ms || c.LearnBaseRTT {
		t.Errorf("listener after a 50 ms sample: base RTT %v, config's %v, target %v, quick adapt at %v, still learning %v; want 50 ms, 50 ms, 2.5 ms, 200 ms, false",
			n.baseRTT, c.BaseRTT, c.Target, c.QAThreshold, c.LearnBaseRTT)
	}
	if want := int64(1.5*20e9/8*0.05) + 15*mss; n.MaxWindow() != want || n.LineRate() != 20e9 {
		t.Errorf("listener's maximum window %d at a line rate of %g, want 1.5 BDP at 20 Gbit/s and 50 ms plus a chunk less an MSS, %d",
			n.MaxWindow(), n.LineRate(), want)
	}
	n.OnAck(60*monotime.Time(ms), Ack{Bytes: mss, RTT: 70 * ms})
	if n.baseRTT != 50*ms {
		t.Errorf("a later, longer sample moved the base RTT to %v", n.baseRTT)
	}
	for _, p := range []Params{
		{LineRate: 10e9, LearnLineRate: true, MSS: mss, HostNoise: ms, BaseRTT: 20 * ms}, // a dialer: the handshake's RTT
		{LineRate: 10e9, MSS: mss}, // simulation
	} {
		n := NewNSCC(NSCCDefaults(p))
		base := n.baseRTT
		n.OnSend(0, mss)
		n.OnAck(50*monotime.Time(ms), Ack{Bytes: mss, RTT: 50 * ms})
		if n.baseRTT != base {
			t.Errorf("%+v: a 50 ms sample moved the base RTT from %v to %v", p, base, n.baseRTT)
		}
	}
}

// TestNSCCDecrease: marked ACKs above the target shrink the window, by at
// most half within any base RTT.
func TestNSCCDecrease(t *testing.T) {
	for _, tt := range []struct {
		name     string
		delay    float64 // in targets; below the quick-adapt threshold of 4
		deepest  float64 // the least factor one base RTT may apply
		shrinkTo float64 // the window after 40 rounds, at most this x maxwnd
	}{
		{"twice the target", 2, 0.5, 0.05},
		{"near quick adapt", 3.9, 0.5, 0.05},
	} {
		cfg := NSCCDefaults(testParams)
		p := newNSCCPath(cfg)
		type point struct {
			at monotime.Time
			w  int64
		}
		var pts []point
		p.trace = func(now monotime.Time, w int64) { pts = append(pts, point{now, w}) }
		delay := monotime.Duration(tt.delay * float64(cfg.Target))
		for range 40 {
			p.round(delay, true, nil)
		}
		worst := 1.0
		for j := range pts {
			for i := j - 1; i >= 0 && pts[j].at.Sub(pts[i].at) <= cfg.BaseRTT; i-- {
				worst = min(worst, float64(pts[j].w)/float64(pts[i].w))
			}
		}
		if worst < tt.deepest {
			t.Errorf("%s: window fell to %.3f of itself within a base RTT, want >= %g", tt.name, worst, tt.deepest)
		}
		if max := float64(p.n.MaxWindow()); float64(p.n.Window()) > tt.shrinkTo*max {
			t.Errorf("%s: window %d after 40 marked rounds, want <= %g x %g", tt.name, p.n.Window(), tt.shrinkTo, max)
		}
		if p.n.Stats().Decreases == 0 || p.n.Stats().Congestions == 0 {
			t.Errorf("%s: stats %+v", tt.name, p.n.Stats())
		}
	}
}

// TestNSCCDecreaseBound: however far the average delay is above the
// target, one decrease keeps half the window, and a second waits a base RTT.
func TestNSCCDecreaseBound(t *testing.T) {
	cfg := NSCCDefaults(testParams)
	n := NewNSCC(cfg)
	n.avgDelay = 100 * float64(cfg.Target)
	w := n.Window()
	marked := Ack{Bytes: mss, RTT: cfg.BaseRTT + 2*cfg.Target, ECN: true, InFlight: w}
	at := monotime.Time(cfg.BaseRTT) // inside the first quick adapt period
	n.OnAck(at, marked)
	if got := n.Window(); got != w/2 {
		t.Errorf("decrease at 100 targets: window %d -> %d, want %d", w, got, w/2)
	}
	// One base RTT on: no decrease, only fulfill's Eta.
	n.OnAck(at.Add(cfg.BaseRTT), marked)
	if want := float64(w/2) + cfg.Eta; n.cwnd != want {
		t.Errorf("one base RTT later: window %g, want %g (no second decrease)", n.cwnd, want)
	}
	c := n.cwnd
	n.OnAck(at.Add(cfg.BaseRTT+1), marked)
	if n.cwnd != c/2 {
		t.Errorf("past a base RTT: window %g -> %g, want %g", c, n.cwnd, c/2)
	}
}

// TestNSCCIncrease: from a small window, unmarked ACKs grow it to the
// maximum and not beyond, in each increasing quadrant.
func TestNSCCIncrease(t *testing.T) {
	for _, tt := range []struct {
		name   string
		delay  float64 // in targets
		rounds int     // to reach the maximum window
	}{
		{"fast increase (idle path)", 0, 30},
		{"proportional increase", 0.5, 60},
		{"fair increase above target", 2, 60},
	} {
		cfg := NSCCDefaults(testParams)
		p := newNSCCPath(cfg)
		for p.n.Window() > p.n.MaxWindow()/10 {
			p.round(3*cfg.Target, true, nil)
		}
		start := p.n.Window()
		delay := monotime.Duration(tt.delay * float64(cfg.Target))
		last := start
		var early int64 // growth in rounds 1-5, past the first's partial accounting
		for r := range tt.rounds {
			p.round(delay, false, nil)
			w := p.n.Window()
			if w < last {
				t.Fatalf("%s: round %d window fell %d -> %d", tt.name, r, last, w)
			}
			if r >= 1 && r <= 5 {
				early += w - last
			}
			last = w
		}
		if g := float64(early) / 5; tt.delay >= 1 && (g < 0.75*cfg.FI || g > 1.2*cfg.FI+4*cfg.Eta) {
			// A round acks about a window, gathering FI x cwnd, and
			// fulfill divides by cwnd; Eta adds once per base RTT.
			t.Errorf("%s: grew %g per round trip, want about FI %g", tt.name, g, cfg.FI)
		}
		if last != p.n.MaxWindow() {
			t.Errorf("%s: window %d after %d rounds from %d, want max %d", tt.name, last, tt.rounds, start, p.n.MaxWindow())
		}
	}
}

// TestNSCCLoss: a NACK cuts the window by its bytes on a congested path
// only; a timeout there quick-adapts to what the path delivered.
func TestNSCCLoss(t *testing.T) {
	cfg := NSCCDefaults(testParams)
	// On a path that marks: delay-only mode would cut the window for the
	// unmarked delay above the target before any loss (TestNSCCDelayOnly).
	cfg.DelayWithoutECN = false
	faithful := cfg
	faithful.LossNeedsCongestion = false
	for _, tt := range []struct {
		name     string
		cfg      NSCCConfig
		delay    float64 // in targets
		marked   bool
		wantCut  bool
		rounds   int
		fromHalf bool // start the window at half the maximum
	}{
		{"delay above target", cfg, 2, false, true, 10, false},
		{"ECN in the last RTT, low delay", cfg, 0.2, true, true, 10, true},
		{"random loss, low delay", cfg, 0.2, false, false, 10, false},
		{"random loss, uec.cpp reaction", faithful, 0.2, false, true, 10, false},
	} {
		p := newNSCCPath(tt.cfg)
		if tt.fromHalf {
			p.n.cwnd = p.n.maxWnd / 2
		}
		for range tt.rounds {
			p.round(monotime.Duration(tt.delay*float64(cfg.Target)), tt.marked, nil)
		}
		before, dec := p.n.Window(), p.n.Stats().Decreases
		p.n.OnLoss(p.now, Loss{Bytes: mss})
		got := p.n.Window()
		switch {
		case tt.wantCut && got != before-mss:
			t.Errorf("%s: NACK took window %d -> %d, want -%d", tt.name, before, got, mss)
		case tt.wantCut && p.n.Stats().Decreases != dec+1:
			t.Errorf("%s: decreases %d -> %d", tt.name, dec, p.n.Stats().Decreases)
		case !tt.wantCut && (got != before || p.n.IgnoredLosses() != 1):
			t.Errorf("%s: NACK took window %d -> %d (%d ignored), want unchanged", tt.name, before, got, p.n.IgnoredLosses())
		}
	}

	// A stall: one packet acked in the last quick adapt period, then the
	// retransmission timer fires three base RTTs later, past the span in
	// which an ECN echo counts. A path that marked counts as congested
	// while its latest ACK was marked and left data in flight: a window
	// lost whole sends no ACK back. A mark on an ACK that left nothing in
	// flight says nothing of what is sent after an idle spell.
	for _, tt := range []struct {
		name          string
		cfg           NSCCConfig
		delay         float64 // in targets
		marked, stall bool    // the rounds' ACKs, the stall's ACKs marked
		left          int64   // bytes the stall's ACKs leave in flight
		want          int64   // window after the timeout; 0: unchanged
	}{
		{"delay above target", cfg, 2, false, false, mss, mss},
		{"clean path", cfg, 0.2, false, false, mss, 0},
		{"marks, the latest ACK marked", cfg, 0.2, true, true, mss, mss},
		{"marks, then an unmarked ACK", cfg, 0.2, true, false, mss, 0},
		{"marks, the latest ACK marked, nothing left in flight", cfg, 0.2, true, true, 0, 0},
		// uec.cpp: a tail loss on a clean path collapses the window.
		{"clean path, uec.cpp reaction", faithful, 0.2, false, false, mss, mss},
	} {
		p := newNSCCPath(tt.cfg)
		for range 5 {
			p.round(monotime.Duration(tt.delay*float64(cfg.Target)), tt.marked, nil)
		}
		p.now = p.now.Add(5 * cfg.BaseRTT)
		p.n.OnAck(p.now, Ack{Bytes: mss, ECN: tt.stall, InFlight: tt.left}) // starts a period
		p.n.OnAck(p.now, Ack{Bytes: mss, ECN: tt.stall, InFlight: tt.left})
		if tt.left == 0 { // idle, then a packet
			p.now = p.now.Add(monotime.Second)
			p.n.OnSend(p.now, mss)
		}
		p.now = p.now.Add(3 * cfg.BaseRTT)
		if p.now.Sub(p.n.lastECN) <= cfg.BaseRTT+cfg.Target {
			t.Fatalf("%s: the timeout comes within the echo's span", tt.name)
		}
		before := p.n.Window()
		p.n.OnLoss(p.now, Loss{Bytes: mss, Timeout: true})
		want := tt.want
		if want == 0 {
			want = before
		}
		if p.n.Window() != want {
			t.Errorf("timeout, %s: window %d -> %d, want %d", tt.name, before, p.n.Window(), want)
		}
	}
}

// TestNSCCRandomLoss: random loss on a path whose delay stays below the
// target leaves the window near its maximum. For contrast, uec.cpp's
// reaction (every NACK cuts its bytes) at 5% loss with a delay just below
// the target, where its increase cannot keep up.
func TestNSCCRandomLoss(t *testing.T) {
	cfg := NSCCDefaults(testParams)
	faithful := cfg
	faithful.LossNeedsCongestion = false
	for _, tt := range []struct {
		name           string
		cfg            NSCCConfig
		loss           float64
		delayLo, delay float64 // delay drawn from [delayLo, delayLo+delay) targets
		lowest         float64 // least window seen, at least this x maxwnd
		mean           float64 // mean window, at most this x maxwnd
	}{
		{"1% loss, delay below target", cfg, 0.01, 0, 0.9, 0.9, 1},
		{"5% loss, delay near target", cfg, 0.05, 0.5, 0.5, 0.9, 1},
		{"5% loss, delay near target, uec.cpp reaction", faithful, 0.05, 0.5, 0.5, 0, 0.7},
	} {
		p := newNSCCPath(tt.cfg)
		r := rand.New(rand.NewPCG(7, 11))
		lowest, sum, n := p.n.Window(), 0.0, 0.0
		p.trace = func(_ monotime.Time, w int64) { lowest, sum, n = min(lowest, w), sum+float64(w), n+1 }
		lost := func() bool { return r.Float64() < tt.loss }
		for range 500 {
			delay := monotime.Duration((tt.delayLo + r.Float64()*tt.delay) * float64(cfg.Target))
			p.round(delay, false, lost)
		}
		max := float64(p.n.MaxWindow())
		if float64(lowest) < tt.lowest*max || sum/n > tt.mean*max {
			t.Errorf("%s: lowest window %.2f, mean %.2f of max", tt.name, float64(lowest)/max, sum/n/max)
		}
		if tt.cfg.LossNeedsCongestion && p.n.IgnoredLosses() == 0 {
			t.Errorf("%s: no loss ignored", tt.name)
		}
	}
}

func TestNSCCNoAllocs(t *testing.T) {
	n := NewNSCC(NSCCDefaults(testParams))
	var now monotime.Time
	i := 0
	step := func() {
		i++
		now = now.Add(100 * monotime.Nanosecond)
		n.OnSend(now, mss)
		n.OnAck(now, Ack{Bytes: mss, RTT: 12*us + monotime.Duration(i%40)*us, ECN: i%3 == 0, InFlight: 40 * mss})
		if i%100 == 0 {
			n.OnLoss(now, Loss{Bytes: mss})
		}
		n.OnTimer(now)
	}
	if a := testing.AllocsPerRun(10000, step); a != 0 {
		t.Errorf("%g allocations per send+ack+timer, want 0", a)
	}
}

func TestNSCCDeterministic(t *testing.T) {
	run := func() []int64 {
		cfg := NSCCDefaults(testParams)
		p := newNSCCPath(cfg)
		r := rand.New(rand.NewPCG(3, 4))
		var trace []int64
		p.trace = func(_ monotime.Time, w int64) { trace = append(trace, w) }
		for range 200 {
			d := monotime.Duration(r.Float64() * 3 * float64(cfg.Target))
			p.round(d, r.IntN(2) == 0, func() bool { return r.IntN(50) == 0 })
		}
		return append(trace, int64(p.n.Stats().Decreases), int64(p.n.IgnoredLosses()))
	}
	a, b := run(), run()
	if len(a) != len(b) {
		t.Fatalf("runs differ in length: %d, %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("runs differ at %d: %d, %d", i, a[i], b[i])
		}
	}
}

func BenchmarkNSCC(b *testing.B) {
	n := NewNSCC(NSCCDefaults(testParams))
	var now monotime.Time
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now = now.Add(330 * monotime.Nanosecond)
		n.OnSend(now, mss)
		n.OnAck(now, Ack{Bytes: mss, RTT: 12*us + monotime.Duration(i%32)*us, ECN: i%16 == 0, InFlight: 40 * mss})
	}
}

// TestNSCCTargetCap: the target is one base RTT up to MaxTarget (1 ms),
// and past it the proportional gain closes at most the gap per round
// trip at the line rate.
func TestNSCCTargetCap(t *testing.T) {
	ms := monotime.Millisecond
	for _, tt := range []struct {
		p          Params
		maxTarget  monotime.Duration
		wantTarget monotime.Duration
		wantAlpha  float64 // bytes per ps; 0: uec.cpp's, unbounded
	}{
		{testParams, 0, 12 * us, 0},
		{Params{LineRate: 100e9, BaseRTT: 100 * us}, 0, 100 * us, 0}, // below 109 us the bound is slack
		{Params{LineRate: 1e9, BaseRTT: 20 * ms}, 0, 1 * ms, 1e9 / 8 / 1e12},
		{Params{LineRate: 1e9, BaseRTT: 20 * ms}, 5 * ms, 5 * ms, 1e9 / 8 / 1e12},
		{Params{LineRate: 1e9, BaseRTT: 500 * us}, 5 * ms, 500 * us, 1e9 / 8 / 1e12},
	} {
		c := NSCCDefaultsWith(tt.p, NSCCOptions{MaxTarget: tt.maxTarget})
		p := tt.p.WithDefaults()
		uec := 4 * float64(p.MSS) * float64(p.BDP()) / nsccRefBDP * (float64(c.Target) / float64(nsccRefRTT)) / float64(c.Target)
		want := tt.wantAlpha
		if want == 0 {
			want = uec
		}
		if c.Target != tt.wantTarget || math.Abs(c.Alpha-want) > 1e-9*want || c.QAThreshold != 4*p.BaseRTT ||
			c.LossDelayThreshold != p.BaseRTT || math.Abs(c.B-float64(c.Target)/float64(12*us)) > 1e-9 {
			t.Errorf("%+v: target %v alpha %g (uec.cpp %g) b %g, want %v, %g", tt.p, c.Target, c.Alpha, uec, c.B, tt.wantTarget, want)
		}
	}
}

// bottleneck is a fluid drop-tail bottleneck for nsccPath: a window
// beyond the BDP queues, and beyond the BDP + the buffer is lost.
type bottleneck struct {
	bdp, buffer, rate float64 // bytes, bytes, bytes per ps
	// Optional: a standing queue not the sender's, and random loss (a
	// packet is lost when it returns true) besides the buffer's.
	other  monotime.Duration
	random func() bool
}

// run drives p through rounds and returns the mean utilization of the
// link, the bytes lost and the largest queue, over the rounds after warm.
func (b bottleneck) run(p *nsccPath, rounds, warm int, marks bool) (util, lost, maxQ float64) {
	var sumU float64
	for i := range rounds {
		w := float64(p.n.Window())
		q := max(w-b.bdp, 0)
		over := int64(max(q-b.buffer, 0)) / mss
		q = min(q, b.buffer)
		drop := func() bool {
			if over > 0 {
				over--
				return true
			}
			return b.random != nil && b.random()
		}
		if i >= warm {
			sumU += min(w/b.bdp, 1)
			maxQ = max(maxQ, q)
			lost += float64(int64(max(w-b.bdp-b.buffer, 0))/mss) * mss
		}
		p.round(monotime.Duration(q/b.rate)+b.other, marks && q > b.buffer/4, drop)
	}
	return sumU / float64(rounds-warm), lost, maxQ
}

// TestNSCCDelayOnly: on a 1 Gbit/s, 20 ms path with a 256 KiB drop-tail
// queue that never marks, NSCC holds the queue below the buffer and the
// link near full; uec.cpp's law (no delay-only mode, a 20 ms target)
// overflows it round after round. Random loss on the same path does not
// collapse the window.
func TestNSCCDelayOnly(t *testing.T) {
	ms := monotime.Millisecond
	params := Params{LineRate: 1e9, BaseRTT: 20 * ms, MSS: mss}
	b := bottleneck{bdp: 1e9 / 8 * 0.02, buffer: 256 << 10, rate: 1e9 / 8 / 1e12}

	cfg := NSCCDefaults(params)
	cfg.DelayWithoutECN = true
	p := newNSCCPath(cfg)
	util, lost, maxQ := b.run(p, 400, 100, false)
	t.Logf("delay-only: utilization %.3f, lost %.0f B, largest queue %.0f B (%v)", util, lost, maxQ, monotime.Duration(maxQ/b.rate))
	if util < 0.9 || lost > 0 || maxQ >= b.buffer {
		t.Errorf("delay-only: utilization %.3f, lost %.0f B, largest queue %.0f B: want >= 0.9, none, < %.0f", util, lost, maxQ, b.buffer)
	}

	uec := NSCCDefaultsWith(Params{LineRate: 1e9, BaseRTT: 20 * ms, MSS: mss}, NSCCOptions{MaxTarget: 20 * ms})
	uec.DelayWithoutECN, uec.MaxGain = false, 0
	uec.Alpha = 4 * mss * uec.A * uec.B / float64(uec.Target)
	p = newNSCCPath(uec)
	_, lostUEC, _ := b.run(p, 400, 100, false)
	t.Logf("uec.cpp: lost %.0f B", lostUEC)
	if lostUEC == 0 {
		t.Errorf("uec.cpp's law lost nothing on an unmarked shallow queue; the test shows nothing")
	}

	// The first ECN echo ends delay-only mode: an unmarked delay above
	// the target is another hop's queue again.
	p = newNSCCPath(cfg)
	p.round(cfg.Target/2, true, nil)
	if p.n.delayOnly() {
		t.Errorf("still delay-only after an ECN echo")
	}
	before := p.n.Window()
	for range 3 {
		p.round(3*cfg.Target, false, nil)
	}
	if p.n.Window() < before {
		t.Errorf("after ECN, unmarked delay cut the window %d -> %d", before, p.n.Window())
	}

	// 1% random loss without a queue: the window stays at its maximum.
	p = newNSCCPath(cfg)
	r := rand.New(rand.NewPCG(3, 5))
	lowest := p.n.Window()
	p.trace = func(_ monotime.Time, w int64) { lowest = min(lowest, w) }
	for range 200 {
		p.round(monotime.Duration(r.Float64()*0.5*float64(cfg.Target)), false, func() bool { return r.Float64() < 0.01 })
	}
	if float64(lowest) < 0.9*float64(p.n.MaxWindow()) {
		t.Errorf("random loss: lowest window %.2f of max", float64(lowest)/float64(p.n.MaxWindow()))
	}
}
