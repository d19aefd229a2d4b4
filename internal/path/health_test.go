package path

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// TestFailedPath kills one of 16 paths and checks, for every health-aware
// selector, that the failure is detected within a few RTTs, that the path
// then only gets probes, spaced one RTT then doubling up to the cap, and
// that it is restored and used again once it delivers.
//
// With losses reported (after an RTO of 3 RTT) the loss rule fires; with
// losses never reported the silence rule must.
func TestFailedPath(t *testing.T) {
	const (
		n    = 16
		dead = 0 // the lowest RTT: BestRTT's favourite
		rtt  = 100 * us
	)
	for _, kind := range healthAware {
		for _, lossReported := range []bool{true, false} {
			name := kind.String() + "/silence"
			bound := 6 * rtt // last ack at kill+RTT, then 4 RTT of silence
			if lossReported {
				name = kind.String() + "/losses"
				// Three losses, the first reported an RTO (3.45 RTT here)
				// after sending.
				bound = 5 * rtt
			}
			t.Run(name, func(t *testing.T) {
				rtts := make([]monotime.Duration, n)
				for i := range rtts {
					rtts[i] = rtt + monotime.Duration(i)*us
				}
				f := newFakeNet(t, kind, rtts, 11)
				if !lossReported {
					f.rto = 0
				}
				f.run(5 * monotime.Millisecond)

				kill := f.now
				f.dead[dead] = true
				for f.t.Up(dead) {
					f.step()
					if f.now.Sub(kill) > 20*rtt {
						t.Fatalf("dead path not detected after %v", f.now.Sub(kill))
					}
				}
				failedAt := f.now
				if d := failedAt.Sub(kill); d > bound {
					t.Errorf("detected %v after the kill, want within %v", d, bound)
				}
				st := f.t.Stats(dead)
				if st.State != "failed" {
					t.Errorf("state %q, want failed", st.State)
				}

				// Dead for 20 ms: only probes, at failure + b, 3b, 7b,
				// ... the interval doubling from b = SRTT up to 32 b.
				b := st.SRTT
				var probes []monotime.Time
				for end := f.now.Add(20 * monotime.Millisecond); f.now < end; {
					if f.step() == dead {
						probes = append(probes, f.now)
					}
				}
				want := failedAt
				interval := b
				for k, at := range probes {
					want = want.Add(interval)
					if d := at.Sub(want); d < 0 || d > 2*f.gap {
						t.Errorf("probe %d at %v after failure, want %v", k, at.Sub(failedAt), want.Sub(failedAt))
					}
					want = at
					interval = min(2*interval, MaxProbeBackoff*b)
				}
				if len(probes) < 8 || len(probes) > 11 {
					t.Errorf("%d probes in 20 ms, want about 10 (%v)", len(probes), probes)
				}
				if f.t.Up(dead) {
					t.Error("dead path restored while dead")
				}

				// The path comes back: the next probe restores it.
				back := f.now
				f.dead[dead] = false
				for !f.t.Up(dead) {
					f.step()
					if f.now.Sub(back) > 40*rtt {
						t.Fatalf("path not restored %v after it came back", f.now.Sub(back))
					}
				}
				if d := f.now.Sub(back); d > MaxProbeBackoff*b+rtt+2*f.gap {
					t.Errorf("restored %v after it came back, want within a capped probe interval and an RTT", d)
				}
				got := f.run(5 * monotime.Millisecond)
				share := float64(got[dead]) / float64(sum(got))
				wantShare := map[Kind]float64{
					Oblivious:  0.9 / n,
					RoundRobin: 0.9 / n,
					BestRTT:    0.9,
					// DWRR's weight follows what the path delivered
					// while dead: the floor.
					DWRR: 0.5 / DWRRMinShare / n,
				}[kind]
				if share < wantShare {
					t.Errorf("restored path got %.4f of packets, want at least %.4f", share, wantShare)
				}
			})
		}
	}
}

// TestAllPathsFailed kills every path: sending never stalls, every path
// gets packets in round robin, and they all come back when the network does.
func TestAllPathsFailed(t *testing.T) {
	const (
		n   = 8
		rtt = 50 * us
	)
	for _, kind := range healthAware {
		t.Run(kind.String(), func(t *testing.T) {
			f := newFakeNet(t, kind, uniformRTT(n, rtt), 3)
			f.run(2 * monotime.Millisecond)
			for i := range f.dead {
				f.dead[i] = true
			}
			for f.t.UpCount() > 0 {
				f.step()
				if f.now > 10*monotime.Time(monotime.Millisecond) {
					t.Fatal("paths not detected as failed")
				}
			}
			// Every path once per cycle of n, in an order that changes
			// from cycle to cycle (no fixed phase to resonate with).
			picks := make([]int, 10*n)
			count := make([]int, n)
			for k := range picks {
				picks[k] = f.step()
				count[picks[k]]++
			}
			for p, c := range count {
				if c < 9 || c > 11 {
					t.Errorf("all failed: path %d picked %d times in %d picks, want about once per %d", p, c, len(picks), n)
				}
			}
			periodic := true
			for k := n; k < len(picks); k++ {
				periodic = periodic && picks[k] == picks[k-n]
			}
			if periodic {
				t.Errorf("all failed: the same order every cycle: %v", picks[:n])
			}
			got := f.run(monotime.Millisecond)
			for p, c := range got {
				if c < 1000/n-1 {
					t.Errorf("all failed: path %d got %d of %d packets", p, c, sum(got))
				}
			}
			back := f.now
			for i := range f.dead {
				f.dead[i] = false
			}
			for f.t.UpCount() < n {
				f.step()
				if f.now.Sub(back) > 4*rtt {
					t.Fatalf("%d of %d paths up %v after the network came back", f.t.UpCount(), n, f.now.Sub(back))
				}
			}
		})
	}
}

// TestRestoredByLateAck: an ack of a packet sent before the failure also
// proves the path delivers.
func TestRestoredByLateAck(t *testing.T) {
	s, _ := New(RoundRobin, 4, 1)
	tb := TableOf(s)
	now := monotime.Time(0)
	for range 4 {
		s.OnSent(now, 2, pkt)
	}
	for range LossThreshold - 1 {
		s.OnLost(now, 2)
	}
	if !tb.Up(2) {
		t.Fatalf("failed after %d losses, want %d", LossThreshold-1, LossThreshold)
	}
	s.OnLost(now, 2)
	if tb.Up(2) || tb.UpCount() != 3 {
		t.Fatalf("not failed after %d losses", LossThreshold)
	}
	for range 8 {
		if p := s.Select(now); p == 2 {
			t.Fatal("Select returned a failed path before its probe was due")
		}
	}
	s.OnAcked(now, 2, pkt, 0)
	if !tb.Up(2) || tb.UpCount() != 4 {
		t.Fatal("ack did not restore the path")
	}
}
