package core_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// thresholdChooser picks EC once the measured loss rate reaches 0.1%, and
// records what it was shown.
type thresholdChooser struct {
	sr, ec reliability.Scheme
	seen   []reliability.Conditions
}

func (c *thresholdChooser) Choose(cond reliability.Conditions) reliability.Scheme {
	c.seen = append(c.seen, cond)
	if cond.LossRate() >= 1e-3 {
		return c.ec
	}
	return c.sr
}

// TestChooserFollowsLoss sends 1 MiB messages without a scheme through a
// link whose loss goes 0, then 2%, then 0 again: the chooser must see
// the loss rate the link imposes (measured from NACKs and decode reports)
// and switch to EC within half of the lossy phase, and back within three
// quarters of the clean one after it (losses reported late keep the rate
// up for a block); every message must arrive intact whichever scheme
// carried it.
func TestChooserFollowsLoss(t *testing.T) {
	ec, err := reliability.Parse("ec:32,8")
	if err != nil {
		t.Fatal(err)
	}
	ch := &thresholdChooser{sr: reliability.SelectiveRepeat{NACK: true}, ec: ec}
	loss := 0.0
	rng := rand.New(rand.NewPCG(7, 7))
	link := testLink()
	link.Drop = func([]byte) bool { return rng.Float64() < loss }
	cfg := core.Config{InitialRTT: monotime.Millisecond, Chooser: ch}
	p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, A: cfg, B: cfg})
	if err != nil {
		t.Fatal(err)
	}
	const size, perPhase = 1 << 20, 64 // 64 x 256 packets: four loss blocks
	msg := message(size)
	var lossyRate float64 // at the end of the lossy phase
	for ph, rate := range []float64{0, 0.02, 0} {
		loss = rate
		for i := range perPhase {
			if _, err := p.Transfer(msg, size, nil, coretest.Limits{}); err != nil {
				t.Fatalf("phase %d message %d: %v", ph, i, err)
			}
			c := ch.seen[len(ch.seen)-1]
			if c.Size != size || c.MTU != core.DefaultMTU || c.RTT <= 0 || c.Depth != 1 {
				t.Fatalf("conditions %+v: want size %d, MTU %d, an RTT and depth 1 (one message at a time)", c, size, core.DefaultMTU)
			}
			if i >= perPhase/2 && ph == 1 && c.LossRate() < 1e-3 {
				t.Errorf("phase 1 message %d: loss rate %.2g measured under 2%% loss", i, c.LossRate())
			}
			if i >= perPhase*3/4 && ph != 1 && c.LossRate() >= 1e-3 {
				t.Errorf("phase %d message %d: loss rate %.2g measured without loss", ph, i, c.LossRate())
			}
			if ph == 1 {
				lossyRate = c.LossRate()
			}
		}
	}
	if r := lossyRate; r < 0.01 || r > 0.04 {
		t.Errorf("loss rate at the end of the 2%% phase measured %.3g, want within 1%%..4%%", r)
	}
	counts := map[string]uint64{}
	for _, sc := range p.A.Conn.Chosen() {
		counts[reliability.Name(sc.Scheme)] = sc.Messages
	}
	if counts["sr-nack"]+counts["ec:32,8"] != 3*perPhase || counts["ec:32,8"] < perPhase/2 {
		t.Errorf("chosen %v: want all %d messages counted, at least %d of them EC", counts, 3*perPhase, perPhase/2)
	}
}

// TestChooserSeesDepth: the chooser is told how many messages are under
// way with each one, itself included, and a delivered one no longer
// counts.
func TestChooserSeesDepth(t *testing.T) {
	sr := reliability.SelectiveRepeat{NACK: true}
	ch := &thresholdChooser{sr: sr, ec: sr}
	cfg := core.Config{InitialRTT: monotime.Millisecond, Chooser: ch}
	p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: testLink(), A: cfg, B: cfg})
	if err != nil {
		t.Fatal(err)
	}
	const size = 64 << 10
	done := 0
	p.A.OnEvent = func(ev core.Event) {
		if ev.Kind == core.EventSendDone {
			done++
		}
	}
	for range 3 {
		if _, err := p.B.Conn.PostRecvVirtual(size); err != nil {
			t.Fatal(err)
		}
		if _, err := p.A.Conn.SendVirtual(size, nil); err != nil {
			t.Fatal(err)
		}
	}
	p.Wake()
	if err := p.Drive(func() bool { return done == 3 }, coretest.Limits{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.A.Conn.SendVirtual(size, nil); err != nil {
		t.Fatal(err)
	}
	var depths []int
	for _, c := range ch.seen {
		depths = append(depths, c.Depth)
	}
	if want := []int{1, 2, 3, 1}; !slices.Equal(depths, want) {
		t.Errorf("depths %v, want %v", depths, want)
	}
}

// TestFixedSchemeIgnoresChooser: a message sent with a scheme keeps it.
func TestFixedSchemeIgnoresChooser(t *testing.T) {
	ec, _ := reliability.Parse("ec:32,8")
	ch := &thresholdChooser{sr: ec, ec: ec}
	cfg := core.Config{InitialRTT: monotime.Millisecond, Chooser: ch}
	p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: testLink(), A: cfg, B: cfg})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Transfer(message(1<<20), 1<<20, reliability.SelectiveRepeat{NACK: true}, coretest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ch.seen) != 0 || res.A.ParityPackets != 0 || p.A.Conn.Chosen() != nil {
		t.Errorf("chooser asked %d times, %d parity packets sent: want a message with its own scheme left alone", len(ch.seen), res.A.ParityPackets)
	}
}
