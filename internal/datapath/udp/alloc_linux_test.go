//go:build linux

package udp_test

import (
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/datapath/udp"
)

// TestZeroAllocs checks that a steady-state Send of 64 datagrams and the
// Receives that take them in allocate nothing, CE-marked ones too.
func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, tc := range []struct {
		name   string
		cfg    udp.Config
		paths  int
		gather bool
		ce     bool
	}{
		{"offload", udp.Config{}, 1, false, false},
		{"offload-4paths-gather", udp.Config{}, 4, true, false},
		{"offload-ce", udp.Config{}, 1, false, true},
		{"plain", udp.Config{DisableGSO: true, DisableGRO: true}, 1, false, false},
		{"plain-4paths-gather", udp.Config{DisableGSO: true, DisableGRO: true}, 4, true, false},
		{"plain-ce", udp.Config{DisableGSO: true, DisableGRO: true}, 1, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ua := udp.NewUDPBind(tc.cfg)
			a := open(t, ua, loop4, tc.paths)
			b := open(t, udp.NewUDPBind(tc.cfg), loop4, tc.paths)
			if !b.b.Stats().ECN {
				t.Log("without ECN: the TOS control messages are not exercised")
			} else if tc.ce {
				if err := udp.SetSendTOS(ua, 0, 0b11); err != nil {
					t.Fatal(err)
				}
			}
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
			if st := b.b.Stats(); tc.ce && st.ECN && (!recv[0].CE || st.CEReceived != st.Received) {
				t.Errorf("CE %v, %d of %d datagrams marked CE, want all", recv[0].CE, st.CEReceived, st.Received)
			}
		})
	}
}
