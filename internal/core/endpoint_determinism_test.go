package core_test

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
)

// TestDeterministic runs the same lossy, reordering transfer twice: the
// core reads no clock and no global randomness, so everything must match.
func TestDeterministic(t *testing.T) {
	run := func(seed uint64) coretest.Result {
		link := testLink()
		link.Burst = coretest.Bursty(0.05, 3)
		link.Reorder, link.ReorderDelay = 0.05, 10*monotime.Microsecond
		link.Duplicate = 0.01
		p := newPair(t, link, schemes(t)["ec:32,8"], seed)
		res, err := p.Transfer(message(5<<20+3), 5<<20+3, nil, coretest.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, c := run(42), run(42), run(43)
	if a != b {
		t.Fatalf("same seed, different runs:\n%+v\n%+v", a, b)
	}
	if a == c {
		t.Fatalf("different seeds gave identical runs; the link is not random: %+v", a)
	}
}
