package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/sdrnet/sdrnet/internal/units"
	"github.com/sdrnet/sdrnet/sdr"
)

// benchResult is what sdrnet bench measured, as --json prints it.
type benchResult struct {
	Scheme     string  `json:"scheme"`
	Paths      int     `json:"paths"`
	MTU        int     `json:"mtu"` // payload bytes per packet, as the ends agreed
	MsgBytes   int64   `json:"message_bytes"`
	Messages   int     `json:"messages"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	GoodputBps float64 `json:"goodput_bps"`
	// Past --omit (iperf3's -O): the goodput of the messages completed
	// after the first completion at or past Omit seconds, over the time
	// since that completion, so a start-up (slow start) is left out.
	// Zero when --omit is 0 or too long for the transfer.
	Omit        float64 `json:"omit_s,omitempty"`
	OmitGoodput float64 `json:"after_omit_goodput_bps,omitempty"`
	OmitSeconds float64 `json:"after_omit_seconds,omitempty"`
	OmitBytes   int64   `json:"after_omit_bytes,omitempty"`
	Completion  latency `json:"message_completion_s"`
	RetxBytes   uint64  `json:"retransmitted_bytes"`
	ParityBytes uint64  `json:"parity_bytes"`
	RTOs        uint64  `json:"rtos"`
	Probes      uint64  `json:"rto_probes"` // of RTOs: probes into a silent peer
	SRTT        float64 `json:"srtt_s"`
	CC          string  `json:"cc"`
	CCWindow    int64   `json:"cc_window_bytes"`
	CCDecreases uint64  `json:"cc_decreases"`
	// CCDetail is the controller's own figures (sdr.CCStats.Detail).
	CCDetail map[string]float64 `json:"cc_detail,omitempty"`
	// What the sender's time went to (Linux's tcp_info busy and limited
	// times): sending or pacing; held by the congestion window, the
	// receiver's grant or --window (MaxBytesInFlight).
	BusyS            float64       `json:"busy_s"`
	WindowLimitedS   float64       `json:"window_limited_s"`
	CreditLimitedS   float64       `json:"credit_limited_s"`
	InflightLimitedS float64       `json:"inflight_limited_s"`
	PathStats        []pathSummary `json:"paths_detail,omitempty"`
	// Schemes counts the messages --scheme auto gave each scheme.
	Schemes map[string]uint64 `json:"schemes,omitempty"`
	// posted and took are each message's post time (since the start) and
	// completion time, in message order, in seconds (--completions).
	posted, took []float64

	// iperf3's layout (see bench_iperf.go).
	Start     iperfStart      `json:"start"`
	Intervals []iperfInterval `json:"intervals"`
	End       iperfEnd        `json:"end"`
}

type latency struct {
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

type pathSummary struct {
	Sent, Acked, Lost uint64
	SRTT              float64 `json:"srtt_s"`
	State             string
}

func newBenchCmd() *cobra.Command {
	var tf transportFlags
	var listen, connect string
	var asJSON bool
	var completions string
	interval := durationFlag{max: time.Hour, d: time.Second, text: "1s"}
	omit := durationFlag{max: time.Hour, text: "0s"}
	total := sizeFlag{min: 1, max: 1 << 50, n: 1 << 30, text: "1GiB"}
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure goodput and message completion times, iperf3-style",
		Long: `bench measures SDR/UDP between two ends: goodput, message completion time
percentiles (send to acknowledgement, at the sender), retransmitted and
parity bytes, and a per-path table. With neither --listen nor --connect it
runs both ends in this process over loopback sockets; with --listen it is
the receiving end (it serves one connection after another), with
--connect ADDR the sending end.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := tf.config()
			if err != nil {
				return err
			}
			if listen != "" && connect != "" {
				return usageError{errors.New("give --listen or --connect, not both")}
			}
			ctx, cancel := interruptible()
			defer cancel()
			if listen != "" {
				return benchServe(ctx, cmd.ErrOrStderr(), listen, cfg, tf)
			}
			addr := connect
			if addr == "" { // both ends here
				l, err := sdr.Listen("127.0.0.1:0", cfg)
				if err != nil {
					return err
				}
				defer l.Close()
				pool := newBufferPool(tf.depth, int(tf.msg.n))
				go func() { _ = benchAccept(ctx, l, tf, pool) }()
				addr = l.Addr().String()
			}
			var lines io.Writer
			if !asJSON {
				lines = cmd.OutOrStdout()
			}
			res, err := benchClient(ctx, addr, cfg, tf, total.n, interval.d, lines)
			if err != nil {
				return err
			}
			res.afterOmit(omit.d)
			if completions != "" {
				if err := writeCompletions(completions, res); err != nil {
					return err
				}
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			printBench(cmd.OutOrStdout(), res)
			return nil
		},
	}
	tf.register(cmd)
	cmd.Flags().StringVar(&listen, "listen", "", "be the receiving end, listening on this address")
	cmd.Flags().StringVar(&connect, "connect", "", "be the sending end, connecting to this address")
	cmd.Flags().Var(&total, "size", "bytes to send in all")
	cmd.Flags().StringVar(&completions, "completions", "", "write each message's post and completion times to this CSV file (message,posted_s,completion_s,bytes), to see when a tail happened")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON: sdrnet's fields, and iperf3's -J layout (start, intervals, end.sum_sent, end.sum_received)")
	cmd.Flags().VarP(&interval, "interval", "i", "report goodput every this often (0: only at the end)")
	cmd.Flags().VarP(&omit, "omit", "O", "also report the goodput after this long, leaving out the start (slow start), as iperf3's -O (0..1h; 0: no)")
	return cmd
}

// afterOmit fills the Omit fields: the messages completed after the
// first completion at or past omit, over the time from that completion
// to the end. Each counts whole, though the one after that completion
// had up to a window of its bytes on the way before it (messages go out
// one after another), so the figure may run high by that window over
// the span: 2.5 MB of the 440 MB a 512 MiB transfer at 1 Gbit/s moves
// past its first second over 20 ms, 0.6%.
func (r *benchResult) afterOmit(omit time.Duration) {
	if omit <= 0 {
		return
	}
	r.Omit = omit.Seconds()
	done := make([]float64, len(r.posted))
	for i := range done {
		done[i] = r.posted[i] + r.took[i]
	}
	from := -1.0
	for _, t := range done {
		if t >= r.Omit && (from < 0 || t < from) {
			from = t
		}
	}
	if from < 0 || from >= r.Seconds {
		return // nothing completed past omit, or only the last message
	}
	var bytes int64
	for i, t := range done {
		if t > from {
			bytes += min(r.MsgBytes, r.Bytes-int64(i)*r.MsgBytes)
		}
	}
	r.OmitBytes, r.OmitSeconds = bytes, r.Seconds-from
	r.OmitGoodput = float64(bytes) * 8 / r.OmitSeconds
}

// benchServe receives connection after connection until ctx ends.
func benchServe(ctx context.Context, w io.Writer, addr string, cfg *sdr.Config, tf transportFlags) error {
	l, err := sdr.Listen(addr, cfg)
	if err != nil {
		return err
	}
	defer l.Close()
	pool := newBufferPool(tf.depth, int(tf.msg.n))
	fmt.Fprintf(w, "sdrnet bench: listening on %v\n", l.Addr())
	return benchAccept(ctx, l, tf, pool)
}

func benchAccept(ctx context.Context, l *sdr.Listener, tf transportFlags, pool *bufferPool) error {
	for {
		conn, err := l.Accept(ctx)
		if err != nil {
			return err
		}
		go func() {
			bufs := pool.get()
			sinkMessages(ctx, conn, bufs)
			pool.put(bufs)
		}()
	}
}

// bufferPool hands each connection its receive buffers with their pages
// already touched. A fresh buffer's first write faults its pages in, on
// some virtual machines at milliseconds per MiB, so a receiver that
// allocates as the data comes runs slow for its first hundreds of MiB; a
// long-running receiver's buffers are warm, and bench measures the
// transport, as iperf3 does with its one buffer. One set is ready before
// the first connection; a connection that finds none makes its own.
type bufferPool struct {
	sets        chan [][]byte
	depth, size int
}

func newBufferPool(depth, size int) *bufferPool {
	p := &bufferPool{sets: make(chan [][]byte, 1), depth: depth, size: size}
	p.sets <- p.fresh()
	return p
}

func (p *bufferPool) get() [][]byte {
	select {
	case s := <-p.sets:
		return s
	default:
		return p.fresh()
	}
}

func (p *bufferPool) put(s [][]byte) {
	select {
	case p.sets <- s:
	default:
	}
}

func (p *bufferPool) fresh() [][]byte {
	s := make([][]byte, p.depth)
	page := os.Getpagesize()
	for i := range s {
		s[i] = make([]byte, p.size)
		for j := 0; j < len(s[i]); j += page {
			s[i][j] = 0
		}
	}
	return s
}

// sinkMessages receives and drops messages into bufs, all posted at once,
// until the connection ends: bench measures messages, not a stream.
func sinkMessages(ctx context.Context, conn *sdr.Conn, bufs [][]byte) {
	depth := len(bufs)
	posted := make([]*sdr.Recv, depth)
	for i := range posted {
		r, err := conn.PostRecv(bufs[i])
		if err != nil {
			return
		}
		posted[i] = r
	}
	for i := 0; ; i = (i + 1) % depth {
		r := posted[i]
		if _, err := r.Wait(ctx); err != nil {
			return
		}
		buf := r.Buffer()
		if r.Complete() != nil {
			return
		}
		next, err := conn.PostRecv(buf)
		if err != nil {
			return
		}
		posted[i] = next
	}
}

// benchClient sends total bytes as messages, depth in flight, timing each.
// Every interval (zero: none) it cuts an interval of goodput, printed to
// lines as it ends (nil: not printed).
func benchClient(ctx context.Context, addr string, cfg *sdr.Config, tf transportFlags, total int64,
	interval time.Duration, lines io.Writer) (*benchResult, error) {
	conn, err := sdr.Dial(ctx, addr, cfg)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	meter := &intervalMeter{stats: conn.Stats, print: lines}
	msgSize := min(tf.msg.n, total)
	count := int((total + msgSize - 1) / msgSize)
	// Every message carries the same bytes, random as iperf3's: a buffer
	// of zeros would read from one shared page, which flatters the sender.
	buf := make([]byte, msgSize)
	rand.NewChaCha8([32]byte{}).Read(buf)
	times := make([]float64, count)
	posted := make([]float64, count)
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	meter.start = start
	stop := make(chan struct{})
	if interval > 0 {
		go meter.run(interval, stop)
	}
	for range min(tf.depth, count) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= count {
					return
				}
				size := min(msgSize, total-int64(i)*msgSize)
				t0 := time.Now()
				posted[i] = t0.Sub(start).Seconds()
				if err := conn.Send(ctx, buf[:size]); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				times[i] = time.Since(t0).Seconds()
				meter.done(size)
			}
		}()
	}
	wg.Wait()
	close(stop)
	end := time.Now()
	meter.cut(end)
	elapsed := end.Sub(start)
	if firstErr != nil {
		return nil, firstErr
	}
	st := conn.Stats()
	took := slices.Clone(times)
	slices.Sort(times)
	q := func(p float64) float64 { return times[min(int(p*float64(len(times))), len(times)-1)] }
	mtu, _ := conn.MTU()
	res := &benchResult{Scheme: tf.scheme, Paths: tf.paths, MTU: mtu, MsgBytes: msgSize, Messages: count, Bytes: total,
		Seconds: elapsed.Seconds(), GoodputBps: float64(total) * 8 / elapsed.Seconds(),
		Completion: latency{P50: q(0.5), P99: q(0.99), P999: q(0.999), Max: times[len(times)-1]},
		RetxBytes:  st.RetxBytes, ParityBytes: st.ParityBytes, RTOs: st.RTOs, Probes: st.SilentProbes, SRTT: st.SmoothedRTT.Seconds(),
		CC: tf.cc, CCWindow: st.CC.Window, CCDecreases: st.CC.Decreases, CCDetail: st.CC.Detail, Schemes: st.Schemes,
		BusyS: st.Busy.Seconds(), WindowLimitedS: st.WindowLimited.Seconds(), CreditLimitedS: st.CreditLimited.Seconds(),
		InflightLimitedS: st.InflightLimited.Seconds(), posted: posted, took: took}
	sum := iperfSum{End: elapsed.Seconds(), Seconds: elapsed.Seconds(), Bytes: total, BitsPerSecond: res.GoodputBps,
		Retransmits: st.RetxPackets, Sender: true, Messages: int64(count)}
	res.Start = newIperfStart(addr, msgSize, total, start)
	res.Intervals = meter.intervals
	res.End = iperfEnd{SumSent: sum, SumReceived: sum}
	for _, p := range st.Paths {
		res.PathStats = append(res.PathStats, pathSummary{Sent: p.Sent, Acked: p.Acked, Lost: p.Lost,
			SRTT: p.SRTT.Seconds(), State: p.State})
	}
	return res, nil
}

func printBench(w io.Writer, r *benchResult) {
	d := func(s float64) string {
		return time.Duration(s * float64(time.Second)).Round(time.Microsecond).String()
	}
	fmt.Fprintf(w, "scheme %s, %d path(s), MTU %d: %s in %d messages of %s, %v\n", r.Scheme, r.Paths, r.MTU,
		units.FormatSize(r.Bytes), r.Messages, units.FormatSize(r.MsgBytes), d(r.Seconds))
	fmt.Fprintf(w, "goodput %s\n", units.FormatRate(r.GoodputBps))
	if r.OmitGoodput > 0 {
		fmt.Fprintf(w, "goodput after the first %s: %s (%s in the last %s)\n", d(r.Omit), units.FormatRate(r.OmitGoodput),
			units.FormatSize(r.OmitBytes), d(r.OmitSeconds))
	} else if r.Omit > 0 {
		fmt.Fprintf(w, "goodput after the first %s: none measured (the transfer ended too soon)\n", d(r.Omit))
	}
	fmt.Fprintf(w, "message completion: p50 %s  p99 %s  p99.9 %s  max %s\n", d(r.Completion.P50), d(r.Completion.P99),
		d(r.Completion.P999), d(r.Completion.Max))
	fmt.Fprintf(w, "retransmitted %s, parity %s, %d RTOs (%d probes into silence), smoothed RTT %s\n", units.FormatSize(int64(r.RetxBytes)),
		units.FormatSize(int64(r.ParityBytes)), r.RTOs, r.Probes, d(r.SRTT))
	if len(r.Schemes) > 0 {
		var parts []string
		for _, name := range slices.Sorted(maps.Keys(r.Schemes)) {
			parts = append(parts, fmt.Sprintf("%s %d", name, r.Schemes[name]))
		}
		fmt.Fprintf(w, "auto chose: %s messages\n", strings.Join(parts, ", "))
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	fmt.Fprintln(w, sendTimes(sec(r.BusyS), sec(r.WindowLimitedS), sec(r.CreditLimitedS), sec(r.InflightLimitedS)))
	if r.CC != "none" {
		line := fmt.Sprintf("congestion control %s: window %s at the end, %d decreases", r.CC, units.FormatSize(r.CCWindow), r.CCDecreases)
		for _, name := range slices.Sorted(maps.Keys(r.CCDetail)) {
			line += fmt.Sprintf(", %s %g", name, r.CCDetail[name])
		}
		fmt.Fprintln(w, line)
	}
	if len(r.PathStats) > 1 {
		fmt.Fprintf(w, "%6s %10s %10s %8s %12s %s\n", "path", "sent", "acked", "lost", "srtt", "state")
		for i, p := range r.PathStats {
			fmt.Fprintf(w, "%6d %10d %10d %8d %12s %s\n", i, p.Sent, p.Acked, p.Lost, d(p.SRTT), p.State)
		}
	}
}

// writeCompletions writes r's messages, in the order they were posted, as
// CSV: index, post time since the start, completion time, bytes.
func writeCompletions(path string, r *benchResult) error {
	var b strings.Builder
	b.WriteString("message,posted_s,completion_s,bytes\n")
	for i, at := range r.posted {
		size := min(r.MsgBytes, r.Bytes-int64(i)*r.MsgBytes)
		fmt.Fprintf(&b, "%d,%.6f,%.6f,%d\n", i, at, r.took[i], size)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("--completions: %w", err)
	}
	return nil
}
