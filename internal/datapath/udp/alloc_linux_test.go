//go:build linux

package udp_test

import (
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/datapath/udp"
)

// TestZeroAllocs checks that a steady-state Send of 64 datagrams and the
// Receives that take them in allocate nothing.
func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, tc := range []struct {
		name   string
		cfg    udp.Config
		paths  int
		gather bool
	}{
		{"offload", udp.Config{}, 1, false},
		{"offload-4paths-gather", udp.Config{}, 4, true},
		{"plain", udp.Config{DisableGSO: true, DisableGRO: true}, 1, false},
		{"plain-4paths-gather", udp.Config{DisableGSO: true, DisableGRO: true}, 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := open(t, udp.NewUDPBind(tc.cfg), loop4, tc.paths)
			b := open(t, udp.NewUDPBind(tc.cfg), loop4, tc.paths)
			send := make([]udp.Message, 64)
			for i := range send {
				p := i % tc.paths
				send[i] = udp.Message{Buf: make([]byte, 4096), N: 4096, Addr: b.ap(p), Path: p}
				if tc.gather {
					send[i].N, send[i].Payload = 64, send[i].Buf[64:]
				}
			}
			recv := receiveMsgs(64, 4096)
			b.b.SetReceiveDeadline(time.Now().Add(time.Minute))
			var err error
			round := func() {
				if e := a.b.Send(send); e != nil {
					err = e
					return
				}
				for got := 0; got < len(send); {
					n, e := b.b.Receive(recv)
					if e != nil {
						err = e
						return
					}
					got += n
				}
			}
			allocs := testing.AllocsPerRun(100, round)
			if err != nil {
				t.Fatal(err)
			}
			if allocs != 0 {
				t.Errorf("%.1f allocations per Send of 64 and its Receives, want 0", allocs)
			}
		})
	}
}
