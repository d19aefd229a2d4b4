package core_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// TestHeldGrant: a buffer posted long before its sender's data (a ring's
// later steps) stops drawing CTSs once the sender says it holds the
// grant, and the message still arrives whole when the data comes, also
// when every answer is lost (the receiver goes on resending, backed off).
func TestHeldGrant(t *testing.T) {
	ms := monotime.Millisecond
	for _, tc := range []struct {
		name        string
		loseAnswers bool
		least, most int // CTSs while the buffer waits 1,000 round trips
	}{
		{"answered", false, 1, 4},
		{"answers lost: the receiver goes on", true, 10, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cts, answers := 0, 0
			count := func(b []byte) bool {
				if c, err := wire.ParseCTS(b); err == nil {
					if c.Flags != 0 {
						answers++
						return tc.loseAnswers
					}
					cts++
				}
				return false
			}
			link := coretest.LinkConfig{Delay: ms / 2, Rate: 10e9, Drop: count}
			p, err := coretest.NewPair(coretest.Config{Seed: 1, Link: link, A: core.Config{}, B: core.Config{}})
			if err != nil {
				t.Fatal(err)
			}
			msg := bytes.Repeat([]byte("held grant "), 10000)
			got := make([]byte, len(msg))
			if _, err := p.B.Conn.PostRecv(got); err != nil {
				t.Fatal(err)
			}
			p.Wake()
			wait := p.Now.Add(1000 * ms)
			if err := p.Drive(func() bool { return p.Now >= wait }, coretest.Limits{}); err != nil && !errors.Is(err, coretest.ErrIdle) {
				t.Fatal(err)
			}
			t.Logf("%d CTSs and %d answers while the buffer waited %v", cts, answers, monotime.Duration(p.Now))
			if cts < tc.least || cts > tc.most {
				t.Errorf("%d CTSs, want %d to %d", cts, tc.least, tc.most)
			}
			done := false
			p.B.OnEvent = func(ev core.Event) { done = done || ev.Kind == core.EventRecvDone }
			if _, err := p.A.Conn.Send(msg); err != nil {
				t.Fatal(err)
			}
			p.Wake()
			if err := p.Drive(func() bool { return done }, coretest.Limits{}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, msg) {
				t.Fatal("the message arrived corrupted")
			}
		})
	}
}
