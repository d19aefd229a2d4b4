package core

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

func TestUnreachable(t *testing.T) {
	peer := netip.MustParseAddrPort("127.0.0.1:9")
	other := netip.MustParseAddrPort("127.0.0.1:10")
	for _, tc := range []struct {
		name       string
		dialing    bool
		silentFor  monotime.Duration
		from       netip.AddrPort
		wantClosed bool
	}{
		{"dialing", true, 0, peer, true},
		{"established, peer silent", false, 100 * monotime.Millisecond, peer, true},
		{"established, peer just heard", false, 10 * monotime.Microsecond, peer, false},
		{"another address", true, 0, other, false},
	} {
		e := NewEndpoint()
		var c *Conn
		var err error
		if tc.dialing {
			c, err = e.Dial(0, peer, Config{})
		} else {
			c, err = e.NewConn(1, 1, peer, Config{})
		}
		if err != nil {
			t.Fatal(err)
		}
		c.use() // as the packet heard would
		c.heard(0)
		e.Refused(monotime.Time(tc.silentFor), tc.from)
		var closedErr error
		for {
			ev, ok := e.PollEvent()
			if !ok {
				break
			}
			if ev.Kind == EventClosed {
				closedErr = ev.Err
			}
		}
		if got := closedErr != nil; got != tc.wantClosed || (got && !errors.Is(closedErr, ErrUnreachable)) {
			t.Errorf("%s: closed with %v, want closed %v", tc.name, closedErr, tc.wantClosed)
		}
	}
}

func TestRandomIDs(t *testing.T) {
	seen := map[uint64]bool{}
	e := NewEndpoint()
	e.RandomIDs([32]byte{1})
	for range 100 {
		c, err := e.Dial(0, netip.MustParseAddrPort("127.0.0.1:9"), Config{})
		if err != nil {
			t.Fatal(err)
		}
		if c.ID() == 0 || seen[c.ID()] {
			t.Fatalf("id %d again", c.ID())
		}
		seen[c.ID()] = true
	}
	// An id below 2^32 has its upper half zero: one in 2^32 random ids
	// does, every id drawn from 32 bits would.
	small := 0
	for id := range seen {
		if id < 1<<32 {
			small++
		}
	}
	if small > 0 {
		t.Fatalf("%d of 100 ids below 2^32: the upper 32 bits go unused", small)
	}
}
