package cc

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

const us = monotime.Microsecond

var testParams = Params{LineRate: 100e9, BaseRTT: 12 * us, MSS: 4096}

func TestDCQCNPresets(t *testing.T) {
	tests := []struct {
		name string
		p    Params
		got  func(Params) DCQCNConfig
		want DCQCNConfig
	}{
		{"dcqcn", testParams, DCQCNNS3, DCQCNConfig{
			LineRate: 100e9, MinRate: 1e9, G: 1.0 / 256,
			AlphaInterval: 1 * us, DecreaseInterval: 4 * us, IncreaseInterval: 300 * us,
			ByteCounter: 10_000_000, RAI: 20e6, RHAI: 200e6, F: 1, CNPInterval: 0,
		}},
		{"dcqcn", Params{LineRate: 25e9}, DCQCNNS3, DCQCNConfig{
			LineRate: 25e9, MinRate: 1e9, G: 1.0 / 256,
			AlphaInterval: 1 * us, DecreaseInterval: 4 * us, IncreaseInterval: 300 * us,
			ByteCounter: 10_000_000, RAI: 5e6, RHAI: 50e6, F: 1, CNPInterval: 0,
		}},
		{"dcqcn", Params{LineRate: 500e6}, DCQCNNS3, DCQCNConfig{
			LineRate: 500e6, MinRate: 500e6, G: 1.0 / 256,
			AlphaInterval: 1 * us, DecreaseInterval: 4 * us, IncreaseInterval: 300 * us,
			ByteCounter: 10_000_000, RAI: 0.1e6, RHAI: 1e6, F: 1, CNPInterval: 0,
		}},
		{"dcqcn-paper", testParams, DCQCNPaper, DCQCNConfig{
			LineRate: 100e9, MinRate: 1e9, G: 1.0 / 256,
			AlphaInterval: 55 * us, DecreaseInterval: 50 * us, IncreaseInterval: 55 * us,
			ByteCounter: 10_000_000, RAI: 100e6, RHAI: 1000e6, F: 5, CNPInterval: 50 * us,
		}},
		{"dcqcn-paper", Params{LineRate: 40e9}, DCQCNPaper, DCQCNConfig{
			LineRate: 40e9, MinRate: 1e9, G: 1.0 / 256,
			AlphaInterval: 55 * us, DecreaseInterval: 50 * us, IncreaseInterval: 55 * us,
			ByteCounter: 10_000_000, RAI: 40e6, RHAI: 400e6, F: 5, CNPInterval: 50 * us,
		}},
	}
	for _, tt := range tests {
		if got := tt.got(tt.p); !sameDCQCNConfig(got, tt.want) {
			t.Errorf("%s(%g): got %+v\nwant %+v", tt.name, tt.p.LineRate, got, tt.want)
		}
		alg, err := Parse(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		d, ok := alg.New(tt.p).(*DCQCN)
		if !ok {
			t.Fatalf("Parse(%q).New is %T, want *DCQCN", tt.name, alg.New(tt.p))
		}
		if !sameDCQCNConfig(d.Config(), tt.want) {
			t.Errorf("Parse(%q).New(%g) runs %+v, want %+v", tt.name, tt.p.LineRate, d.Config(), tt.want)
		}
	}
}

// sameDCQCNConfig compares with a relative tolerance on the scaled rates.
func sameDCQCNConfig(a, b DCQCNConfig) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Abs(y) }
	ok := near(a.RAI, b.RAI) && near(a.RHAI, b.RHAI)
	a.RAI, a.RHAI = b.RAI, b.RHAI
	return ok && a == b
}

// alphaAt is d's alpha as of now, without changing d.
func alphaAt(d *DCQCN, now monotime.Time) float64 {
	c := *d
	c.catchUp(now)
	return c.alpha
}

var ecn = Ack{Bytes: 4096, ECN: true}

// TestDCQCNCutAndRecovery drives the timer alone (no byte counter): a cut
// by alpha/2, a second cut with the decayed alpha, then F fast recovery
// steps halving the distance to the target and additive steps of RAI.
func TestDCQCNCutAndRecovery(t *testing.T) {
	for _, preset := range []func(Params) DCQCNConfig{DCQCNNS3, DCQCNPaper} {
		cfg := preset(testParams)
		d := NewDCQCN(cfg)
		if d.Rate() != cfg.LineRate || d.NextTimer() != monotime.Never {
			t.Fatalf("fresh: rate %g next timer %d, want line rate and Never", d.Rate(), d.NextTimer())
		}
		t0 := monotime.Time(10 * us)
		d.OnAck(t0, ecn)
		if d.Rate() != cfg.LineRate/2 || d.Target() != cfg.LineRate {
			t.Fatalf("first CNP (alpha 1): rate %g target %g, want %g %g", d.Rate(), d.Target(), cfg.LineRate/2, cfg.LineRate)
		}
		t1 := t0.Add(max(cfg.DecreaseInterval, cfg.CNPInterval))
		alpha := math.Pow(1-cfg.G, float64((t1-t0)/monotime.Time(cfg.AlphaInterval)))
		if got := alphaAt(d, t1); math.Abs(got-alpha) > 1e-12 {
			t.Fatalf("alpha at %v: %g, want %g", t1, got, alpha)
		}
		d.OnAck(t1, ecn)
		rate, target := cfg.LineRate/2*(1-alpha/2), cfg.LineRate/2
		if math.Abs(d.Rate()-rate) > 1 || d.Target() != target {
			t.Fatalf("second CNP: rate %g target %g, want %g %g", d.Rate(), d.Target(), rate, target)
		}
		rate = d.Rate()
		for step := 1; step <= 30; step++ {
			at := d.NextTimer()
			if want := t1.Add(monotime.Duration(step) * cfg.IncreaseInterval); at != want {
				t.Fatalf("step %d due at %d, want %d", step, at, want)
			}
			d.OnTimer(at)
			if step > cfg.F {
				target += cfg.RAI
			}
			rate = (rate + target) / 2
			if d.Rate() != rate || d.Target() != target {
				t.Fatalf("%g step %d: rate %g target %g, want %g %g", cfg.RAI, step, d.Rate(), d.Target(), rate, target)
			}
		}
		if s := d.Stats(); s.Decreases != 2 || s.Congestions != 2 || s.Window != 0 || s.Rate != rate {
			t.Errorf("stats %+v", s)
		}
	}
}

// dcqcnRun paces a sender at d's rate for dur, one 4 KiB packet per
// departure; mark says whether its (instant) ACK echoes ECN.
func dcqcnRun(d *DCQCN, now, end monotime.Time, mark func(monotime.Time) bool, each func(monotime.Time)) monotime.Time {
	for now < end {
		next := max(now, d.NextSend())
		if tm := d.NextTimer(); tm <= next {
			now = max(now, tm)
			d.OnTimer(now)
			continue
		}
		now = next
		d.OnSend(now, 4096)
		d.OnAck(now, Ack{Bytes: 4096, ECN: mark(now)})
		if each != nil {
			each(now)
		}
	}
	return now
}

// TestDCQCNRecoversToLineRate marks every packet for a while, then none:
// the rate falls towards the minimum, then climbs back through fast
// recovery, additive and hyper increase to line rate, and the timers stop.
func TestDCQCNRecoversToLineRate(t *testing.T) {
	for _, preset := range []func(Params) DCQCNConfig{DCQCNNS3, DCQCNPaper} {
		cfg := preset(testParams)
		d := NewDCQCN(cfg)
		marksEnd := monotime.Time(500 * us)
		lowest, hyper := cfg.LineRate, false
		lastTarget := 0.0
		dcqcnRun(d, 0, monotime.Time(2*monotime.Second),
			func(now monotime.Time) bool { return now < marksEnd },
			func(now monotime.Time) {
				lowest = min(lowest, d.Rate())
				if now > marksEnd && d.Target()-lastTarget > 1.5*cfg.RAI {
					hyper = true
				}
				lastTarget = d.Target()
			})
		if lowest > cfg.LineRate/4 {
			t.Errorf("RAI %g: lowest rate %g under marks, want a deep cut", cfg.RAI, lowest)
		}
		if d.Rate() != cfg.LineRate || d.NextTimer() != monotime.Never {
			t.Errorf("RAI %g: after 2 s rate %g next timer %d, want line rate and Never", cfg.RAI, d.Rate(), d.NextTimer())
		}
		if !hyper {
			t.Errorf("RAI %g: no hyper increase step seen", cfg.RAI)
		}
	}
}

func TestDCQCNCNPInterval(t *testing.T) {
	paper := NewDCQCN(DCQCNPaper(testParams))
	for _, at := range []monotime.Duration{0, 10 * us, 49 * us, 50 * us, 60 * us, 100 * us} {
		paper.OnAck(monotime.Time(at), ecn)
	}
	if got := paper.Stats().Congestions; got != 3 {
		t.Errorf("paper: ECN at 0,10,49,50,60,100 us took %d CNPs, want 3 (0, 50, 100)", got)
	}

	// ns-3 takes every echo; the decrease interval spaces the cuts.
	ns3 := NewDCQCN(DCQCNNS3(testParams))
	for _, at := range []monotime.Duration{0, 1 * us, 2 * us} {
		ns3.OnAck(monotime.Time(at), ecn)
	}
	if s := ns3.Stats(); s.Congestions != 3 || s.Decreases != 1 {
		t.Errorf("ns-3: 3 echoes in 2 us gave %+v, want 3 congestions, 1 decrease", s)
	}
	if got := ns3.NextTimer(); got != monotime.Time(4*us) {
		t.Errorf("deferred cut due at %d, want 4 us", got)
	}
	before := ns3.Rate()
	ns3.OnTimer(monotime.Time(4 * us))
	if s := ns3.Stats(); s.Decreases != 2 || ns3.Rate() >= before {
		t.Errorf("deferred cut: %+v rate %g (before %g)", s, ns3.Rate(), before)
	}
}

func TestDCQCNPacing(t *testing.T) {
	d := NewDCQCN(DCQCNNS3(testParams))
	tx := monotime.TransmitTime(4096, 100e9)
	d.OnSend(0, 4096)
	if got := d.NextSend(); got != monotime.Time(tx) {
		t.Fatalf("after one packet NextSend %d, want %d", got, tx)
	}
	late := monotime.Time(10 * us)
	d.OnSend(late, 4096)
	if got := d.NextSend(); got != late {
		t.Errorf("late packet banks one packet: NextSend %d, want %d", got, late)
	}
	d.OnSend(late, 4096)
	if got := d.NextSend(); got != late.Add(tx) {
		t.Errorf("second packet: NextSend %d, want %d", got, late.Add(tx))
	}
	d.OnAck(late, ecn) // halves the rate: the last gap doubles
	if got := d.NextSend(); got != late.Add(monotime.TransmitTime(4096, 50e9)) {
		t.Errorf("after a cut NextSend %d, want %d", got, late.Add(monotime.TransmitTime(4096, 50e9)))
	}
	if d.Window() != 0 {
		t.Errorf("Window %d, want 0", d.Window())
	}
}

func TestDCQCNIgnoresLoss(t *testing.T) {
	d := NewDCQCN(DCQCNNS3(testParams))
	for i := range 100 {
		d.OnLoss(monotime.Time(i)*monotime.Time(us), Loss{Bytes: 4096, Timeout: i%2 == 0})
	}
	if d.Rate() != 100e9 || d.NextTimer() != monotime.Never || d.Stats().Decreases != 0 {
		t.Errorf("after losses: rate %g next %d stats %+v", d.Rate(), d.NextTimer(), d.Stats())
	}
}

func TestDCQCNNoAllocs(t *testing.T) {
	d := NewDCQCN(DCQCNNS3(testParams))
	var now monotime.Time
	i := 0
	step := func() {
		now = max(now, d.NextSend())
		if tm := d.NextTimer(); tm <= now {
			d.OnTimer(now)
		}
		d.OnSend(now, 4096)
		i++
		d.OnAck(now, Ack{Bytes: 4096, ECN: i%50 == 0})
	}
	for range 1000 {
		step()
	}
	if a := testing.AllocsPerRun(10000, step); a != 0 {
		t.Errorf("%g allocations per send+ack+timer, want 0", a)
	}
}

func TestDCQCNDeterministic(t *testing.T) {
	run := func() []float64 {
		d := NewDCQCN(DCQCNPaper(testParams))
		r := rand.New(rand.NewPCG(1, 2))
		var trace []float64
		dcqcnRun(d, 0, monotime.Time(20*monotime.Millisecond),
			func(monotime.Time) bool { return r.IntN(200) == 0 },
			func(now monotime.Time) {
				if len(trace) < 100000 {
					trace = append(trace, d.Rate(), float64(d.NextSend()))
				}
			})
		return trace
	}
	a, b := run(), run()
	if len(a) != len(b) {
		t.Fatalf("runs differ in length: %d, %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("runs differ at %d: %g, %g", i, a[i], b[i])
		}
	}
}

func BenchmarkDCQCN(b *testing.B) {
	d := NewDCQCN(DCQCNNS3(testParams))
	var now monotime.Time
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		now = max(now, d.NextSend())
		if tm := d.NextTimer(); tm <= now {
			d.OnTimer(now)
		}
		d.OnSend(now, 4096)
		d.OnAck(now, Ack{Bytes: 4096, ECN: i%64 == 0})
	}
}
