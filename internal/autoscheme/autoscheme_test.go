package autoscheme

import (
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// longHaul is SDR-RDMA's long-haul link (400 Gbit/s, 25 ms RTT) with a
// loss rate measured over 10^9 packets.
func longHaul(size int64, loss float64) reliability.Conditions {
	return reliability.Conditions{Size: size, MTU: 4096, ChunkBytes: 64 << 10, RTT: 25 * monotime.Millisecond,
		Rate: 400e9, Lost: loss * 1e9, Sent: 1e9}
}

func TestChoices(t *testing.T) {
	for _, tc := range []struct {
		size int64
		loss float64
		want string
	}{
		// No loss: parity only costs injection time.
		{1 << 30, 0, "sr-nack"},
		{16 << 20, 0, "sr-nack"},
		// Rare losses on a long link: a light code beats waiting an RTT.
		{1 << 30, 1e-5, "ec:32,2"},
		// The paper's lossy corner: (32,8), the code it evaluates.
		{1 << 30, 1e-2, "ec:32,8"},
		{16 << 20, 1e-2, "ec:32,8"},
	} {
		ch := New()
		got := reliability.Name(ch.Choose(longHaul(tc.size, tc.loss)))
		if got != tc.want {
			t.Errorf("size %d loss %g: chose %s, want %s (model means %v)", tc.size, tc.loss, got, tc.want, ch.Predictions(longHaul(tc.size, tc.loss)))
		}
		if err := ch.Err(); err != nil {
			t.Errorf("size %d loss %g: %v", tc.size, tc.loss, err)
		}
	}
}

// TestPipelinedChoices: a message of a stream that keeps several under
// way is costed by the goodput it leaves; parity then costs more than the
// resends it saves, where alone its completion time would pick a code.
func TestPipelinedChoices(t *testing.T) {
	wan := func(loss float64, depth int) reliability.Conditions {
		return reliability.Conditions{Size: 8 << 20, MTU: 8192, ChunkBytes: 64 << 10, RTT: 50 * monotime.Millisecond,
			Rate: 1e9, Lost: loss * 1e6, Sent: 1e6, Depth: depth}
	}
	for _, tc := range []struct {
		loss  float64
		depth int
		want  string
	}{
		{1e-2, 1, "ec:"},     // alone: waiting for a resend costs an RTT; some code
		{1e-2, 8, "sr-nack"}, // a stream's eighth: the others fill the link meanwhile
		{2e-2, 8, "sr-nack"},
		{0, 8, "sr-nack"},
	} {
		ch := New()
		c := wan(tc.loss, tc.depth)
		if got := reliability.Name(ch.Choose(c)); got != tc.want && !(strings.HasSuffix(tc.want, ":") && strings.HasPrefix(got, tc.want)) {
			t.Errorf("loss %g depth %d: chose %s, want %s (costs %v)", tc.loss, tc.depth, got, tc.want, ch.Predictions(c))
		}
	}
	// Depth 0 and 1 are the same message alone.
	ch := New()
	a, b := ch.Predictions(wan(1e-2, 0)), ch.Predictions(wan(1e-2, 1))
	for name, v := range a {
		if b[name] != v {
			t.Errorf("%s: depth 0 costs %v, depth 1 %v", name, v, b[name])
		}
	}
}

// TestChoiceIsFastest: whatever Choose picks, no candidate is predicted
// more than TieTolerance faster.
func TestChoiceIsFastest(t *testing.T) {
	ch := New()
	for _, loss := range []float64{0, 1e-6, 1e-4, 1e-3, 1e-2} {
		for _, size := range []int64{128 << 10, 16 << 20, 1 << 30} {
			c := longHaul(size, loss)
			got := reliability.Name(ch.Choose(c))
			pred := ch.Predictions(c)
			for name, mean := range pred {
				if float64(mean)*(1+TieTolerance) < float64(pred[got]) {
					t.Errorf("size %d loss %g: chose %s (%v), but %s is predicted %v", size, loss, got, pred[got], name, mean)
				}
			}
		}
	}
}

func TestAssumedLoss(t *testing.T) {
	for _, tc := range []struct {
		lost, sent float64
		want       float64
	}{
		{0, 0, PriorLoss},    // nothing known: the prior
		{0, 99, PriorLoss},   // (0+1)/100 is the prior itself
		{0, 999, 1e-3},       // few packets, none lost: pessimistic
		{5, 100, 0.05},       // a lossy path measured: above the prior
		{1, 1e6, 2e-6},       // thin evidence of a rare loss
		{1000, 1e7, 1e-4},    // plenty of evidence: the measured rate
		{900, 1000, MaxLoss}, // beyond what the model takes
	} {
		got := AssumedLoss(reliability.Conditions{Lost: tc.lost, Sent: tc.sent})
		if d := got - tc.want; d > tc.want*1e-3 || d < -tc.want*1e-3 {
			t.Errorf("lost %g of %g: assumed %g, want %g", tc.lost, tc.sent, got, tc.want)
		}
	}
}

// TestCachedChoiceAllocatesNothing: a connection whose measurements stay
// in a bucket pays a map lookup per message.
func TestCachedChoiceAllocatesNothing(t *testing.T) {
	ch := New()
	c := longHaul(1<<20, 1e-3)
	coded := 0
	choose := func() {
		if ch.Choose(c).Code() != nil {
			coded++
		}
	}
	choose()
	if n := testing.AllocsPerRun(100, choose); n != 0 {
		t.Errorf("Choose allocates %v times per message once decided", n)
	}
	if coded != 102 { // AllocsPerRun runs it once more to warm up
		t.Errorf("%d of 102 messages given a code, want all", coded)
	}
}

// TestBackgroundDoesNotWait: a background chooser answers a new bucket
// with its last decision and has the new one ready afterwards.
func TestBackgroundDoesNotWait(t *testing.T) {
	ch := NewBackground()
	lossy := longHaul(1<<30, 1e-2)
	if got := reliability.Name(ch.Choose(lossy)); got != "sr-nack" {
		t.Errorf("first choice %s: want sr-nack while the model works", got)
	}
	ch.Wait()
	if got := reliability.Name(ch.Choose(lossy)); got != "ec:32,8" {
		t.Errorf("after the decision: %s, want ec:32,8", got)
	}
	if got := reliability.Name(ch.Choose(longHaul(1<<30, 1e-2*1.01))); got != "ec:32,8" {
		t.Errorf("same bucket: %s, want ec:32,8 at once", got)
	}
}

func TestParse(t *testing.T) {
	s, auto, err := Parse("auto")
	if err != nil || !auto || s.Kind() != reliability.KindSRNACK {
		t.Errorf("Parse(auto) = %v, %v, %v: want SR-NACK and auto", s, auto, err)
	}
	s, auto, err = Parse("ec:16,4")
	if err != nil || auto || reliability.Name(s) != "ec:16,4" {
		t.Errorf("Parse(ec:16,4) = %v, %v, %v", s, auto, err)
	}
	if _, _, err := Parse("autox"); err == nil || !strings.Contains(err.Error(), "or auto") {
		t.Errorf("Parse(autox): %v, want an error that offers auto", err)
	}
}

func BenchmarkChooseCached(b *testing.B) {
	ch := New()
	c := longHaul(1<<20, 1e-3)
	ch.Choose(c)
	b.ReportAllocs()
	for b.Loop() {
		ch.Choose(c)
	}
}
