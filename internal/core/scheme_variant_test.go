package core_test

import (
	"sync/atomic"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// eagerNACK is a scheme added in this one file, with no edit of the core
// or of the reliability package: selective repeat that NACKs a gap after
// an eighth of the round trip, under a wire kind of its own. Its
// receiver learns it from the kind its packets carry.
type eagerNACK struct{ reliability.SelectiveRepeat }

var eagerDelays atomic.Int64 // how often a receiver asked its NACK delay

func (eagerNACK) Kind() reliability.Kind { return 200 }

func (eagerNACK) NackDelay(rtt monotime.Duration) monotime.Duration {
	eagerDelays.Add(1)
	return max(rtt/8, monotime.Microsecond)
}

func init() {
	if err := reliability.Register("sr-eager", eagerNACK{reliability.SelectiveRepeat{NACK: true}}); err != nil {
		panic(err)
	}
}

// TestSchemeVariant: the scheme above, named as a user would name it,
// moves a message through loss, reordering and duplication with every
// byte intact, and the receiving core ran its policy.
func TestSchemeVariant(t *testing.T) {
	scheme, err := reliability.Parse("sr-eager")
	if err != nil {
		t.Fatal(err)
	}
	link := testLink()
	link.Loss, link.Duplicate, link.Reorder, link.ReorderDelay = 0.02, 0.01, 0.05, 200*monotime.Microsecond
	p := newPair(t, link, scheme, 7)
	before := eagerDelays.Load()
	msg := message(4 << 20)
	res, err := p.Transfer(msg, len(msg), nil, coretest.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if res.A.RetxPackets == 0 {
		t.Error("nothing resent: the loss shows nothing")
	}
	if eagerDelays.Load() == before {
		t.Error("the receiver never asked the variant's NACK delay: it did not run the variant")
	}
}
