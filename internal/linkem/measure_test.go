package linkem

import (
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/units"
)

// TestMeasureRateDelay measures how closely the proxy holds a configured
// rate and delay on loopback. It takes about 15 s and its numbers depend on
// the machine, so it runs only when asked:
//
//	LINKEM_MEASURE=1 go test -run TestMeasureRateDelay -v -count=1 ./internal/linkem/
//
// One sender writes 4096-byte datagrams through the proxy (rate=R,
// delay=10ms, queue=4MiB) for 3 s, stamping the send time in each; the
// receiver measures throughput over the last 2.5 s and the one-way delay
// of every datagram sent in that time. "full" sends as fast as it can: the
// bucket should run at the rate, and the delay is 10ms plus a full queue
// (queue/rate). "paced" offers 90% of the rate, catching up at most 1 ms
// at a time: the queue stays nearly empty, so the delay should be about
// the configured one. A transparent run first shows what the machine can
// carry at all.
func TestMeasureRateDelay(t *testing.T) {
	if os.Getenv("LINKEM_MEASURE") == "" {
		t.Skip("set LINKEM_MEASURE=1 to measure rate and delay accuracy")
	}
	// Sender, receiver and proxy share this process. With no more Ps than
	// CPUs, Go's scheduler lets the busy sender starve the proxy's engine;
	// with more, the OS shares the CPUs, as between separate processes.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.NumCPU())))
	t.Logf("GOMAXPROCS %d on %d CPUs", runtime.GOMAXPROCS(0), runtime.NumCPU())
	const (
		size     = 4096
		delay    = 10 * time.Millisecond
		queue    = 4 << 20
		duration = 3 * time.Second
		warmup   = 500 * time.Millisecond
	)
	m := measure(t, size, 0, 0, 0, duration, warmup, 0)
	t.Logf("transparent, full speed: offered %s, received %s; delay p50 %v p99 %v; proxy read %d, forwarded %d",
		units.FormatRate(m.offered), units.FormatRate(m.received), m.pct(50), m.pct(99), m.stats.Received, m.stats.Forwarded)
	for _, rate := range []float64{1e9, 2e9} {
		for _, load := range []float64{0, 0.9} {
			name := "full"
			if load > 0 {
				name = fmt.Sprintf("paced %.0f%%", load*100)
			}
			m := measure(t, size, rate, delay, queue, duration, warmup, load)
			t.Logf("rate=%s delay=%v queue=%s %s: offered %s, received %s (%.2f%% of rate); delay min %v p50 %v p99 %v p99.9 %v max %v (expected >= %v, + up to %v queueing); proxy forwarded %d, queue drops %d; proxy writes late >100us %d, >1ms %d of %d, worst %v",
				units.FormatRate(rate), delay, units.FormatSize(queue), name,
				units.FormatRate(m.offered), units.FormatRate(m.received), 100*m.received/rate,
				m.pct(0), m.pct(50), m.pct(99), m.pct(99.9), m.pct(100),
				delay, time.Duration(float64(queue)*8/rate*1e9),
				m.stats.Forwarded, m.stats.DroppedQueue, m.late.Over100us, m.late.Over1ms, m.late.Writes, m.late.Max)
		}
	}
}

type measurement struct {
	offered, received float64 // bits/s
	delays            []time.Duration
	stats             DirStats
	late              Lateness
}

func (m *measurement) pct(p float64) time.Duration {
	if len(m.delays) == 0 {
		return 0
	}
	i := int(p / 100 * float64(len(m.delays)-1))
	return m.delays[i]
}

// measure runs one sender through a proxy to one receiver. Send times are
// stamped (wall clock) in each datagram just before it is written, and
// the receiver takes the kernel's receive timestamps, so neither the
// receiving goroutine's nor the test's scheduling shows in the delays.
func measure(t *testing.T, size int, rate float64, delay time.Duration, queue int64, duration, warmup time.Duration, load float64) measurement {
	rx, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	setBuffers(rx, 64<<20)
	stamped := enableRxTimestamps(rx)
	p, err := Listen("127.0.0.1:0", rx.LocalAddr().String(), Config{
		Default: Path{Forward: Impairment{Rate: rate, Delay: delay, Queue: queue}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	tx, err := net.DialUDP("udp", nil, p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()

	base := time.Now()
	baseWall := base.UnixNano()
	var m measurement
	var rxBytes int64
	var wg sync.WaitGroup
	var stop atomic.Bool
	wg.Go(func() {
		rb := newBatch(64, 1<<16, oobLen, nil)
		rc := newBatchConn(rx)
		for {
			rx.SetReadDeadline(time.Now().Add(time.Second))
			n, err := rc.ReadBatch(rb.msgs, 0)
			wall := time.Now().UnixNano()
			if err != nil {
				if stop.Load() {
					return
				}
				continue
			}
			for i := range n {
				msg := &rb.msgs[i]
				at := wall
				if ts, ok := rxTimestamp(msg.OOB[:msg.NN]); stamped && ok {
					at = ts
				}
				sent := binary.BigEndian.Uint64(msg.Buffers[0][8:])
				since := time.Duration(at - baseWall)
				if s := time.Duration(int64(sent) - baseWall); s >= warmup && s < duration {
					m.delays = append(m.delays, time.Duration(at-int64(sent)))
				}
				if since >= warmup && since < duration {
					rxBytes += int64(msg.N)
				}
			}
		}
	})
	buf := make([]byte, size)
	var sent, written int64 // sent includes the time skipped when late
	for seq := uint64(0); ; seq++ {
		now := time.Since(base)
		if now >= duration {
			break
		}
		if load > 0 {
			// Pace to load*rate, in bursts of at most 100 us, catching up
			// at most 1 ms when the sender ran late.
			due := time.Duration(float64(sent*8) / (load * rate) * 1e9)
			if ahead := due - now; ahead > 100*time.Microsecond {
				time.Sleep(ahead)
				continue
			} else if ahead < -time.Millisecond {
				sent += int64(float64(-ahead-time.Millisecond) * load * rate / 8e9)
			}
		}
		binary.BigEndian.PutUint64(buf, seq)
		binary.BigEndian.PutUint64(buf[8:], uint64(time.Now().UnixNano()))
		if _, err := tx.Write(buf); err == nil {
			sent += int64(size)
			written += int64(size)
		}
	}
	time.Sleep(delay + 200*time.Millisecond)
	stop.Store(true)
	rx.SetReadDeadline(time.Now())
	wg.Wait()
	slices.Sort(m.delays)
	m.offered = float64(written*8) / duration.Seconds()
	m.received = float64(rxBytes*8) / (duration - warmup).Seconds()
	st := p.Stats()
	m.stats, m.late = st.Forward, st.ForwardLate
	return m
}
