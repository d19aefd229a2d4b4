package core_test

import (
	"net/netip"
	"testing"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// TestPacedWake: when a controller's pacing holds a data packet back, the
// endpoint says until when, once, so a driver can time that wait finely;
// without a controller, or when nothing was held, it says nothing.
func TestPacedWake(t *testing.T) {
	for _, name := range []string{"none", "nscc"} {
		alg, err := cc.Parse(name)
		if err != nil {
			t.Fatal(err)
		}
		// A real host's NSCC (HostNoise): paced, in slow start.
		cfg := core.Config{CC: alg, HostNoise: monotime.Millisecond, LineRate: 1e9,
			BaseRTT: 20 * monotime.Millisecond, InitialRTT: 20 * monotime.Millisecond}
		ea, eb := core.NewEndpoint(), core.NewEndpoint()
		a, err := ea.NewConn(1, 2, netip.AddrPort{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, err := eb.NewConn(2, 1, netip.AddrPort{}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.PostRecv(make([]byte, 1<<20)); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Send(message(1 << 20)); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, core.DefaultMTU+wire.MaxHeaderLen)
		now := monotime.Time(monotime.Millisecond)
		var held monotime.Time
		for turn := 0; turn < 8 && held == 0; turn++ { // the CTS, then data
			for {
				var tx core.Transmit
				if !eb.PollTransmit(now, buf, &tx) {
					break
				}
				_ = ea.HandleDatagram(now, core.Received{Buf: buf[:tx.Len]})
			}
			for {
				var tx core.Transmit
				if !ea.PollTransmit(now, buf, &tx) {
					break
				}
			}
			if w, ok := ea.PacedWake(); ok {
				held = w
				if _, again := ea.PacedWake(); again {
					t.Errorf("%s: PacedWake answered twice for one hold", name)
				}
			}
		}
		switch {
		case name == "none" && held != 0:
			t.Errorf("none: PacedWake %v, want no pacing hold", held)
		case name == "nscc" && held <= now:
			t.Errorf("nscc: PacedWake %v at %v, want a hold after now", held, now)
		}
	}
}
