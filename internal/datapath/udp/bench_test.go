package udp_test

import (
	"errors"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/datapath/udp"
)

// BenchmarkLoopback measures one-way throughput of 4 KiB datagrams over
// 127.0.0.1, sent and received in batches of 64: one op is one datagram.
// The sender keeps at most 512 datagrams ahead of the receiver, so the
// socket buffers do not overflow; "lost" counts datagrams that never came.
func BenchmarkLoopback(b *testing.B) {
	cases := []struct {
		name  string
		new   func() udp.Bind
		paths int
	}{
		{"gso-gro", func() udp.Bind { return udp.NewUDPBind(udp.Config{}) }, 1},
		{"plain", func() udp.Bind { return udp.NewUDPBind(udp.Config{DisableGSO: true, DisableGRO: true}) }, 1},
		{"gso-gro-4paths", func() udp.Bind { return udp.NewUDPBind(udp.Config{}) }, 4},
		{"plain-4paths", func() udp.Bind { return udp.NewUDPBind(udp.Config{DisableGSO: true, DisableGRO: true}) }, 4},
		// What reading and marking ECN costs (on Linux; elsewhere there is none).
		{"gso-gro-noecn", func() udp.Bind { return udp.NewUDPBind(udp.Config{DisableECN: true}) }, 1},
		{"plain-noecn", func() udp.Bind {
			return udp.NewUDPBind(udp.Config{DisableGSO: true, DisableGRO: true, DisableECN: true})
		}, 1},
	}
	if runtime.GOOS == "linux" {
		cases = append(cases, struct {
			name  string
			new   func() udp.Bind
			paths int
		}{"std", func() udp.Bind { return udp.NewStdBind(udp.Config{}) }, 1})
	}
	for _, bc := range cases {
		b.Run(bc.name, func(b *testing.B) { benchLoopback(b, bc.new, bc.paths) })
	}
}

func benchLoopback(b *testing.B, newBind func() udp.Bind, paths int) {
	const (
		size   = 4096
		batch  = 64
		window = 512
	)
	tx := open(b, newBind(), loop4, paths)
	rx := open(b, newBind(), loop4, paths)
	send := make([]udp.Message, batch)
	for i := range send {
		p := i % paths
		send[i] = udp.Message{Buf: make([]byte, size), N: size, Addr: rx.ap(p), Path: p}
	}
	recv := receiveMsgs(batch, size)

	var received atomic.Int64
	var sendErr atomic.Pointer[error]
	done := make(chan struct{})
	b.SetBytes(size)
	b.ReportAllocs()
	rx.b.SetReceiveDeadline(time.Now().Add(time.Minute))
	b.ResetTimer()
	start := time.Now()
	progress := make(chan struct{}, 1) // the receiver got more
	go func() {
		defer close(done)
		stall := time.NewTimer(time.Hour)
		defer stall.Stop()
		for sent := 0; sent < b.N; {
			k := min(batch, b.N-sent)
			if int64(sent+k)-received.Load() > window {
				stall.Reset(50 * time.Millisecond)
			wait:
				for int64(sent+k)-received.Load() > window {
					select {
					case <-progress:
					case <-stall.C:
						break wait // lost datagrams: go on
					}
				}
				stall.Stop()
			}
			if err := tx.b.Send(send[:k]); err != nil {
				sendErr.Store(&err)
				return
			}
			sent += k
		}
	}()
	got, tail := 0, false
	for got < b.N {
		if !tail {
			select {
			case <-done:
				tail = true
			default:
			}
		}
		if tail {
			rx.b.SetReceiveDeadline(time.Now().Add(200 * time.Millisecond))
		}
		n, err := rx.b.Receive(recv)
		if errors.Is(err, os.ErrDeadlineExceeded) && tail {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		got += n
		received.Store(int64(got))
		select {
		case progress <- struct{}{}:
		default:
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	<-done
	if p := sendErr.Load(); p != nil {
		b.Fatal(*p)
	}
	b.ReportMetric(float64(got)/elapsed.Seconds(), "dgrams/s")
	b.ReportMetric(float64(b.N-got), "lost")
	if b.N >= 1<<16 {
		st, sr := tx.b.Stats(), rx.b.Stats()
		b.Logf("N=%d: sender %d send calls, %d GSO sends; receiver %d receive calls, %d GRO datagrams; socket buffers %d/%d",
			b.N, st.SendCalls, st.GSOSends, sr.RecvCalls, sr.GROReceives, sr.RecvBuffer, st.SendBuffer)
	}
}
