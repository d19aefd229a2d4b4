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
				// The path that died carried least, and is marked failed;
				// the others shared the load. (Their state at the end is
				// not checked: the emulator runs in this process, and on a
				// loaded machine a stall of it silences every path at
				// once, which fails them until their next acks.)
				least := 0
				for i, p := range st.Paths {
					if p.Sent < st.Paths[least].Sent {
						least = i
					}
				}
				if st.Paths[least].State != "failed" {
					t.Errorf("least-used path %d is %q; want the dead one failed: %+v", least, st.Paths[least].State, st.Paths)
				}
				var total uint64
				for _, p := range st.Paths {
					total += p.Sent
				}
				if share := float64(st.Paths[least].Sent) / float64(total); share > 0.03 {
					t.Errorf("dead path carried %.1f%% of packets, want it avoided", 100*share)
				}
				healthyMean := float64(total-st.Paths[least].Sent) / float64(len(st.Paths)-1)
				for i, p := range st.Paths {
					if i != least && float64(p.Sent) < healthyMean/2 {
						t.Errorf("healthy path %d carried %d packets, under half the healthy mean %.0f", i, p.Sent, healthyMean)
					}
				}
			}
			if es := l.Stats(); es.Malformed == 0 {
				t.Errorf("garbage datagrams were not counted as malformed: %+v", es)
			}
			t.Logf("%s: %d retransmitted, %d parity bytes, %d RTOs", tt.scheme, st.RetxBytes, st.ParityBytes, st.RTOs)
		})
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
