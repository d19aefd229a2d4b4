package sdr

import (
	"context"
	"crypto/sha256"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/linkem"
)

// throughLinkem puts the user-space link emulator, configured by spec, in
// front of l, and returns it; the test closes it.
func throughLinkem(t *testing.T, l *Listener, spec string) *linkem.Proxy {
	t.Helper()
	lcfg, err := linkem.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := linkem.Listen("127.0.0.1:0", l.Addr().String(), lcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	return proxy
}

// TestThroughLinkem moves 256 MiB over real loopback sockets through the
// user-space link emulator: 20 ms RTT, 1% loss each way, 16 paths of
// which one dies a second in. Every scheme must deliver every byte, and
// the multipath schemes must find the dead path. Garbage datagrams sprayed
// at the receiver meanwhile are dropped and counted.
func TestThroughLinkem(t *testing.T) {
	size := 256 << 20
	if testing.Short() {
		size = 32 << 20
	}
	msg := payload(size, 77)
	want := sha256.Sum256(msg)
	for _, tt := range []struct {
		scheme, sel string
		window      int64
	}{
		{"sr", "obs", 0},
		{"sr-nack", "obs", 0},
		{"ec:32,8", "obs", 0},
		// Go-back-N discards everything that arrives out of order, so it
		// cannot spray: like a RoCE QP it stays on one path (not the one
		// that dies). It resends its whole window after every loss, so a
		// small window keeps 1% loss affordable.
		{"gbn", "single", 2 << 20},
	} {
		t.Run(tt.scheme, func(t *testing.T) {
			l, err := Listen("127.0.0.1:0", &Config{Scheme: tt.scheme})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			proxy := throughLinkem(t, l, "delay=10ms,loss=1% path[3]:fail=1s")
			started := time.Now() // the emulator's clock starts with it

			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			var got []byte
			var recvErr error
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := l.Accept(ctx)
				if err != nil {
					recvErr = err
					return
				}
				buf := make([]byte, size)
				r, err := conn.PostRecv(buf)
				if err != nil {
					recvErr = err
					return
				}
				n, err := r.Wait(ctx)
				got, recvErr = buf[:n], err
			}()
			window := tt.window
			if window == 0 {
				window = 16 << 20
			}
			c, err := Dial(ctx, proxy.Addr().String(), &Config{Scheme: tt.scheme, Paths: 16, Select: tt.sel,
				Rate: 1e9, MaxBytesInFlight: window})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			stop := sprayGarbage(t, l.Addr().String())
			// Half a second after the path dies (25 round trips, ample
			// time to detect it), note what each path has carried: from
			// then on the dead one must be avoided.
			afterDeath := make(chan Stats, 1)
			deathTimer := time.AfterFunc(time.Until(started.Add(1500*time.Millisecond)), func() { afterDeath <- c.Stats() })
			if err := c.Send(ctx, msg); err != nil {
				t.Fatal(err)
			}
			stop()
			wg.Wait()
			if recvErr != nil {
				t.Fatal(recvErr)
			}
			if sha256.Sum256(got) != want {
				t.Fatalf("received %d bytes with a different SHA-256", len(got))
			}
			st := c.Stats()
			if tt.sel != "single" {
				if !deathTimer.Stop() {
					checkDeadPathAvoided(t, <-afterDeath, st)
				} else if !testing.Short() {
					t.Errorf("the transfer ended before the path had been dead half a second; the test proves nothing")
				}
			}
			if es := l.Stats(); es.Malformed == 0 {
				t.Errorf("garbage datagrams were not counted as malformed: %+v", es)
			}
			t.Logf("%s: %d retransmitted, %d parity bytes, %d RTOs", tt.scheme, st.RetxBytes, st.ParityBytes, st.RTOs)
		})
	}
}

// checkDeadPathAvoided checks that, between the snapshots before and
// after (taken once one path had died), the path that carried least was
// marked failed and carried a small share of the packets while the
// healthy paths shared the load. Shares are of what was sent after
// before was taken, so they do not depend on how long the transfer ran
// before the path died (that varies with the machine's load). The dead
// path is found by its traffic: the emulator numbers paths in the order
// their first packets reach it, which is not the sender's order.
func checkDeadPathAvoided(t *testing.T, before, after Stats) {
	t.Helper()
	sent := make([]uint64, len(after.Paths))
	var total uint64
	dead := 0
	for i := range after.Paths {
		sent[i] = after.Paths[i].Sent - before.Paths[i].Sent
		total += sent[i]
		if sent[i] < sent[dead] {
			dead = i
		}
	}
	if after.Paths[dead].State != "failed" {
		t.Errorf("least-used path %d is %q; want the dead one failed: %+v", dead, after.Paths[dead].State, after.Paths)
	}
	if total == 0 {
		t.Fatalf("nothing sent after the path died: %+v", after.Paths)
	}
	share := float64(sent[dead]) / float64(total)
	t.Logf("after the death: dead path %d carried %d of %d packets (%.2f%%)", dead, sent[dead], total, 100*share)
	if share > 0.02 {
		t.Errorf("dead path carried %.1f%% of the packets sent after it died, want it avoided", 100*share)
	}
	healthyMean := float64(total-sent[dead]) / float64(len(sent)-1)
	for i, n := range sent {
		if i != dead && float64(n) < healthyMean/2 {
			t.Errorf("healthy path %d carried %d packets after the death, under half the healthy mean %.0f", i, n, healthyMean)
		}
	}
}

// sprayGarbage sends junk datagrams at addr until stopped.
func sprayGarbage(t *testing.T, addr string) (stop func()) {
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		junk := [][]byte{{1, 1, 0, 0}, {1, 1, 0, 0, 0, 0, 0, 1, 9, 9}, make([]byte, 1200), {0xff}}
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
			_, _ = conn.Write(junk[i%len(junk)])
		}
	}()
	return func() { close(done); wg.Wait(); conn.Close() }
}

// TestListenerSendsThroughLinkem: a listener that sends runs the same
// congestion control as a dialer. Only the dialer times the handshake,
// so the listener's NSCC starts from a default base RTT of 12 us; it
// must take the path's from its first sample (it had read the whole
// 20 ms round trip as queue and held its window at two chunks, 20x
// slower than the dialer). Every byte is checked, and the listener's
// controller must end with a window above its floor, and read a queue
// under half the round trip at some point in the second half.
func TestListenerSendsThroughLinkem(t *testing.T) {
	size := 32 << 20
	msg := payload(size, 5)
	want := sha256.Sum256(msg)
	l, err := Listen("127.0.0.1:0", &Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	proxy := throughLinkem(t, l, "delay=10ms,rate=1Gbps,queue=256KiB")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sent := make(chan Stats, 1)
	leastQueue := make(chan time.Duration, 1)
	go func() {
		conn, err := l.Accept(ctx)
		if err != nil {
			t.Error(err)
			sent <- Stats{}
			leastQueue <- 0
			return
		}
		// The queue the controller reads, at its least over the second
		// half of the transfer: a misread round trip stays, a loaded
		// host's pause comes and goes.
		done := make(chan struct{})
		go func() {
			least := time.Duration(-1)
			for tick := time.NewTicker(10 * time.Millisecond); ; {
				select {
				case <-done:
					tick.Stop()
					leastQueue <- least
					return
				case <-tick.C:
				}
				if st := conn.Stats(); st.DataBytes >= uint64(size/2) && (least < 0 || st.CC.Queue < least) {
					least = st.CC.Queue
				}
			}
		}()
		if err := conn.Send(ctx, msg); err != nil {
			t.Error(err)
		}
		close(done)
		sent <- conn.Stats()
	}()
	c, err := Dial(ctx, proxy.Addr().String(), &Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	buf := make([]byte, size)
	r, err := c.PostRecv(buf)
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.Wait(ctx)
	if err != nil || sha256.Sum256(buf[:n]) != want {
		t.Fatalf("received %d of %d bytes (%v), or they differ", n, size, err)
	}
	st, queue := <-sent, <-leastQueue
	if floor := int64(2 * 64 << 10); st.CC.Window <= 4*floor || queue < 0 || queue >= 10*time.Millisecond {
		t.Errorf("listener's controller after 32 MiB: window %d (floor %d), queue read at least %v over the second half; want the window well above the floor, the queue under half the round trip",
			st.CC.Window, floor, queue)
	}
}

// TestDefaultsThroughBurstyLoss: a connection with every default (BBR,
// SR-NACK, no rate given) through a 1 Gbit/s, 20 ms path losing about 2%
// of packets in bursts each way delivers every byte, and its controller
// takes the losses for what they are: more of them are ignored (no
// queue came with them) than its window is cut.
func TestDefaultsThroughBurstyLoss(t *testing.T) {
	size := 64 << 20
	if testing.Short() {
		size = 16 << 20
	}
	msg := payload(size, 78)
	want := sha256.Sum256(msg)
	l, err := Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	proxy := throughLinkem(t, l, "delay=10ms,rate=1Gbps,ge=0.002/0.1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	got := make([]byte, size)
	recvDone := make(chan error, 1)
	go func() {
		conn, err := l.Accept(ctx)
		if err != nil {
			recvDone <- err
			return
		}
		r, err := conn.PostRecv(got)
		if err == nil {
			_, err = r.Wait(ctx)
		}
		recvDone <- err
	}()
	c, err := Dial(ctx, proxy.Addr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if err := <-recvDone; err != nil {
		t.Fatal(err)
	}
	if sha256.Sum256(got) != want {
		t.Fatal("received bytes with a different SHA-256")
	}
	st := c.Stats()
	t.Logf("%d bytes resent, %d RTOs; cc %+v", st.RetxBytes, st.RTOs, st.CC)
	if st.RetxBytes == 0 {
		t.Fatal("nothing was resent: the path lost nothing, the test proves nothing")
	}
	if st.CC.IgnoredLosses <= st.CC.Decreases {
		t.Errorf("%d losses ignored, %d window cuts: random loss taken for congestion", st.CC.IgnoredLosses, st.CC.Decreases)
	}
}
