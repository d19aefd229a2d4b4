//go:build linux

// Command tuntcp measures the kernel's own TCP across the link emulator:
// it joins two network namespaces through a linkem.Tunnel with the given
// impairments and runs iperf3 from namespace A (the client side; data flows
// A to B, the tunnel's forward direction) to namespace B, once per
// congestion control.
//
//	go run ./bench/tuntcp -spec 'delay=25ms,rate=1Gbps,loss=1%' -cc bbr,cubic -t 20
//
// It needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN), /dev/net/tun, ip and
// iperf3; without them it prints why it skips and exits 0. Every address
// it uses exists only inside the tunnel's namespaces, which are deleted on
// exit (also on SIGINT or SIGTERM).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sdrnet/sdrnet/internal/linkem"
)

// result is one iperf3 run, as -json prints it (one object per line).
type result struct {
	CC          string  `json:"cc"`
	Spec        string  `json:"spec"`
	Seconds     float64 `json:"seconds"`
	GoodputBps  float64 `json:"goodput_bps"`
	SentBps     float64 `json:"sent_bps"`
	Retransmits int64   `json:"retransmits"`
	// SenderCPU and ReceiverCPU are each iperf3 end's CPU seconds
	// (user and system, from its utilization over the run).
	SenderCPU   float64 `json:"sender_cpu_s"`
	ReceiverCPU float64 `json:"receiver_cpu_s"`
	MeanRTTms   float64 `json:"mean_rtt_ms"`
	MaxRTTms    float64 `json:"max_rtt_ms"`
	ForwardPkts uint64  `json:"tunnel_forwarded"`
	DroppedLoss uint64  `json:"tunnel_dropped_loss"`
	DroppedQ    uint64  `json:"tunnel_dropped_queue"`
	Paths       int     `json:"tunnel_paths"`
	Mix         *mix    `json:"mix,omitempty"`
	// sdrnetJSON is what sdrnet bench printed, for -sdrnet-json.
	sdrnetJSON []byte
}

// mix is what a TCP flow and an sdrnet connection got of one bottleneck:
// the bytes the tunnel forwarded for each (A to B) over the window both
// were sending, the middle of the sdrnet run.
type mix struct {
	SdrnetArgs      string  `json:"sdrnet_args"`
	Seconds         float64 `json:"seconds"`
	TCPBps          float64 `json:"tcp_bps"`
	SdrnetBps       float64 `json:"sdrnet_bps"`
	TCPShare        float64 `json:"tcp_share"`
	SdrnetShare     float64 `json:"sdrnet_share"`
	SdrnetGoodput   float64 `json:"sdrnet_goodput_bps"`
	SdrnetResentPct float64 `json:"sdrnet_resent_pct"`
	SdrnetRTOs      int64   `json:"sdrnet_rtos"`
	// SdrnetCompete is how often sdrnet's controller took up a
	// competitive mode (NSCC's beside a flow that holds the queue).
	SdrnetCompete int64 `json:"sdrnet_competitive"`
}

func main() {
	spec := flag.String("spec", "delay=25ms,rate=1Gbps,loss=1%", "linkem impairments, as sdrnet linkem --spec takes them")
	ccs := flag.String("cc", "bbr,cubic", "comma-separated TCP congestion controls to run")
	secs := flag.Int("t", 20, "seconds per iperf3 run")
	port := flag.Int("port", 5201, "iperf3 port inside namespace B")
	tcpMem := flag.Int("tcp-mem", 32<<20, "max TCP send/receive buffer (bytes) set in both namespaces; 0 keeps the host's")
	asJSON := flag.Bool("json", false, "print one JSON object per run instead of a text line")
	sdrnet := flag.String("sdrnet", "", "an sdrnet binary: run sdrnet bench beside each TCP flow through the same tunnel (give the spec shared=1 for one bottleneck) and report both shares")
	sdrArgs := flag.String("sdrnet-args", "", "flags for both sdrnet bench ends (space-separated); none: every default, the MTU from the tunnel's route")
	sdrKeep := flag.String("sdrnet-json", "", "a folder to keep each sdrnet run's JSON in, as sdrnet-CC-N.json (give -sdrnet-args an -i 100ms for the controller's state over time)")
	rt := flag.Int("rt", 10, "SCHED_FIFO priority of the emulator (1..99; 0 leaves it at the normal policy): a switch does not share its CPU with the hosts")
	flag.BoolVar(&kernelQueue, "kernel-queue", false, "put the forward bottleneck (the spec's rate, burst and queue) in a tbf qdisc on a veth pair beside the tunnel, which then carries only the reverse direction with the whole round trip's delay: the kernel forwards the data, so a small machine's CPU does not decide the shares (they are then of the two flows' goodput)")
	flag.IntVar(&tunnelMTU, "mtu", 0, "the tunnel devices' MTU, 576..65535 (0 keeps linkem's 1500): jumbo frames cost the emulator fewer packets per byte")
	flag.Parse()
	if tunnelMTU != 0 && (tunnelMTU < 576 || tunnelMTU > 65535) {
		fmt.Fprintf(os.Stderr, "tuntcp: -mtu %d out of range: give 576..65535, or 0 for 1500\n", tunnelMTU)
		os.Exit(2)
	}

	if err := linkem.TunnelSupported(); err != nil {
		fmt.Printf("tuntcp: skip: %v\n", err)
		return
	}
	if _, err := exec.LookPath("iperf3"); err != nil {
		fmt.Printf("tuntcp: skip: no iperf3: %v\n", err)
		return
	}
	cfg, err := linkem.ParseSpec(*spec)
	if err != nil {
		fatal(err)
	}
	if kernelQueue {
		if cfg, kernelQueueFwd, err = kernelQueueSplit(cfg); err != nil {
			fatal(err)
		}
	}
	if *rt < 0 || *rt > 99 {
		fatal(fmt.Errorf("-rt %d: want 0..99", *rt))
	}
	if *rt > 0 {
		raisePriority(*rt)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	failed := false
	for _, cc := range strings.Split(*ccs, ",") {
		if ctx.Err() != nil {
			break
		}
		// A fresh tunnel per run: no state (paths, queues, TCP metrics
		// cache) carries over from one congestion control to the next.
		var res *result
		var err error
		if *sdrnet != "" {
			res, err = runMix(ctx, cfg, *spec, cc, *secs, *port, *tcpMem, *sdrnet, strings.Fields(*sdrArgs))
		} else {
			res, err = runOne(ctx, cfg, *spec, cc, *secs, *port, *tcpMem)
		}
		if errors.Is(err, errSkip) {
			fmt.Printf("tuntcp: skip: %v\n", err)
			return
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "tuntcp: %s: %v\n", cc, err)
			failed = true
			continue
		}
		if *sdrKeep != "" && res.sdrnetJSON != nil {
			if err := keepJSON(*sdrKeep, "sdrnet-"+cc, res.sdrnetJSON); err != nil {
				fmt.Fprintf(os.Stderr, "tuntcp: %s: keeping sdrnet's JSON: %v\n", cc, err)
				failed = true
			}
		}
		if *asJSON {
			b, _ := json.Marshal(res)
			fmt.Println(string(b))
		} else {
			if res.Mix != nil {
				m := res.Mix
				of, queue := "of the bottleneck's forwarded bytes", "tunnel"
				if kernelQueue {
					of, queue = "of the two flows' goodput", "tbf"
				}
				fmt.Printf("tcp %-6s beside sdrnet (%s), over %.1f s: tcp %.1f Mbit/s (%.2f), sdrnet %.1f Mbit/s (%.2f) %s; sdrnet resent %.2f%%, %d RTOs, %d competitive spells, goodput %.1f Mbit/s; %s queue-dropped %d\n",
					res.CC, m.SdrnetArgs, m.Seconds, m.TCPBps/1e6, m.TCPShare, m.SdrnetBps/1e6, m.SdrnetShare, of, m.SdrnetResentPct, m.SdrnetRTOs, m.SdrnetCompete, m.SdrnetGoodput/1e6, queue, res.DroppedQ)
				continue
			}
			queue := "tunnel"
			if kernelQueue {
				queue = "tbf"
			}
			fmt.Printf("tcp %-6s goodput %7.1f Mbit/s  (sent %7.1f Mbit/s, %d retransmits, rtt mean %.1f ms max %.1f ms; %s lost %d, queue-dropped %d)\n",
				res.CC, res.GoodputBps/1e6, res.SentBps/1e6, res.Retransmits, res.MeanRTTms, res.MaxRTTms,
				queue, res.DroppedLoss, res.DroppedQ)
		}
	}
	if failed {
		os.Exit(1)
	}
}

var errSkip = errors.New("tunnel unavailable")

// tunnelMTU, when not zero, replaces the tunnel devices' MTU (-mtu).
var tunnelMTU int

// kernelQueue is -kernel-queue; kernelQueueFwd the forward impairment its
// tbf takes.
var (
	kernelQueue    bool
	kernelQueueFwd linkem.Impairment
)

// prepareNamespaces sets both namespaces' TCP buffer limits (tcpMem > 0)
// and the tunnel devices' MTU (-mtu), and adds the kernel bottleneck
// (-kernel-queue).
func prepareNamespaces(tun *linkem.Tunnel, tcpMem int) error {
	nsA, nsB := tun.Namespace(linkem.SideA), tun.Namespace(linkem.SideB)
	if kernelQueue {
		mtu := 1500
		if tunnelMTU > 0 {
			mtu = tunnelMTU
		}
		if err := addKernelQueue(tun, kernelQueueFwd, mtu); err != nil {
			return err
		}
	}
	if tunnelMTU > 0 {
		for _, side := range []linkem.Side{linkem.SideA, linkem.SideB} {
			if err := tun.SetMTU(side, tunnelMTU); err != nil {
				return err
			}
		}
	}
	for _, ns := range []string{nsA, nsB} {
		var cmds [][]string
		if tcpMem > 0 {
			cmds = append(cmds, []string{"ip", "netns", "exec", ns, "sysctl", "-q", "-w",
				fmt.Sprintf("net.ipv4.tcp_rmem=4096 131072 %d", tcpMem),
				fmt.Sprintf("net.ipv4.tcp_wmem=4096 16384 %d", tcpMem)})
		}
		for _, c := range cmds {
			if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
				return fmt.Errorf("%s: %v: %s", strings.Join(c, " "), err, strings.TrimSpace(string(out)))
			}
		}
	}
	return nil
}

func runOne(ctx context.Context, cfg linkem.Config, spec, cc string, secs, port, tcpMem int) (*result, error) {
	tun, err := linkem.NewTunnel(cfg)
	if err != nil {
		// e.g. a container that may not create namespaces
		return nil, fmt.Errorf("%w: %v", errSkip, err)
	}
	defer tun.Close()
	nsA, nsB := tun.Namespace(linkem.SideA), tun.Namespace(linkem.SideB)
	if err := prepareNamespaces(tun, tcpMem); err != nil {
		return nil, err
	}

	// The server: one client, then it exits. It stays a child of ours (no
	// -D) so it can be killed if anything goes wrong.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := nsCommand(sctx, nsB, "iperf3", "-s", "-1",
		"-B", tun.Addr(linkem.SideB).String(), "-p", fmt.Sprint(port))
	srv.Stdout, srv.Stderr = nil, nil
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("iperf3 server: %w", err)
	}
	defer func() { cancel(); _ = srv.Wait() }()
	if err := waitListening(ctx, nsB, port); err != nil {
		return nil, err
	}

	client := nsCommand(ctx, nsA, "iperf3", "-c", tun.Addr(linkem.SideB).String(),
		"-p", fmt.Sprint(port), "-C", cc, "-t", fmt.Sprint(secs), "-J")
	out, err := client.Output()
	var rep iperfReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		return nil, fmt.Errorf("iperf3 client: %v (json: %v): %s", err, jerr, truncate(out))
	}
	if rep.Error != "" {
		return nil, fmt.Errorf("iperf3 client: %s", rep.Error)
	}
	if err != nil {
		return nil, fmt.Errorf("iperf3 client: %w", err)
	}
	if rep.End.SumReceived.Seconds == 0 {
		return nil, fmt.Errorf("iperf3 client: no result: %s", truncate(out))
	}
	if got := rep.End.SenderTCPCongestion; got != "" && got != cc {
		return nil, fmt.Errorf("iperf3 ran %s, not %s", got, cc)
	}
	st := tun.Stats()
	res := &result{CC: cc, Spec: spec, Seconds: rep.End.SumReceived.Seconds,
		GoodputBps: rep.End.SumReceived.BitsPerSecond, SentBps: rep.End.SumSent.BitsPerSecond,
		Retransmits: rep.End.SumSent.Retransmits, ForwardPkts: st.Forward.Forwarded,
		DroppedLoss: st.Forward.DroppedLoss, DroppedQ: st.Forward.DroppedQueue, Paths: len(st.Paths),
		SenderCPU: rep.End.CPU.Host / 100 * rep.End.SumSent.Seconds, ReceiverCPU: rep.End.CPU.Remote / 100 * rep.End.SumSent.Seconds}
	if err := kernelQueueCounts(tun, res); err != nil {
		return nil, err
	}
	for _, s := range rep.End.Streams {
		res.MeanRTTms = float64(s.Sender.MeanRTT) / 1e3
		res.MaxRTTms = float64(s.Sender.MaxRTT) / 1e3
	}
	return res, nil
}

// waitListening polls until something listens on TCP port in namespace ns.
func waitListening(ctx context.Context, ns string, port int) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out, err := nsCommand(ctx, ns, "ss", "-Hltn", fmt.Sprintf("sport = :%d", port)).Output()
		if err != nil {
			// no ss: give the server a moment and hope
			time.Sleep(time.Second)
			return ctx.Err()
		}
		if strings.TrimSpace(string(out)) != "" {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return errors.New("iperf3 server did not start listening within 10s")
}

type iperfReport struct {
	Error string `json:"error"`
	End   struct {
		Streams []struct {
			Sender struct {
				MaxRTT  int64 `json:"max_rtt"`
				MeanRTT int64 `json:"mean_rtt"`
			} `json:"sender"`
		} `json:"streams"`
		SumSent struct {
			Seconds       float64 `json:"seconds"`
			BitsPerSecond float64 `json:"bits_per_second"`
			Retransmits   int64   `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived struct {
			Seconds       float64 `json:"seconds"`
			BitsPerSecond float64 `json:"bits_per_second"`
		} `json:"sum_received"`
		SenderTCPCongestion string `json:"sender_tcp_congestion"`
		CPU                 struct {
			Host   float64 `json:"host_total"`
			Remote float64 `json:"remote_total"`
		} `json:"cpu_utilization_percent"`
	} `json:"end"`
	// The receiver's intervals (--get-server-output, -kernel-queue).
	Server struct {
		Intervals intervals `json:"intervals"`
	} `json:"server_output_json"`
}

// intervals are iperf3's -J intervals (or sdrnet bench's): each one's
// span in seconds from the flow's start and the bytes it delivered.
type intervals []struct {
	Sum struct {
		Start float64 `json:"start"`
		End   float64 `json:"end"`
		Bytes int64   `json:"bytes"`
	} `json:"sum"`
}

// goodputIn is the rate, in bits per second, of the intervals that lie
// within [from, to] seconds from the flow's start; ok is false when none
// does.
func (iv intervals) goodputIn(from, to float64) (bps float64, ok bool) {
	var bytes int64
	var secs float64
	for _, i := range iv {
		if s := i.Sum; s.Start >= from && s.End <= to {
			bytes += s.Bytes
			secs += s.End - s.Start
		}
	}
	if secs <= 0 {
		return 0, false
	}
	return float64(bytes) * 8 / secs, true
}

func truncate(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 400 {
		s = s[:400] + "..."
	}
	return s
}

func fatal(err error) {
	fmt.Fprintf(os.Stderr, "tuntcp: %v\n", err)
	os.Exit(2)
}

// runMix runs iperf3 (TCP with congestion control cc, from its fixed
// client port cport = port+1) and sdrnet bench side by side from A to B
// through one tunnel. It samples the tunnel's per-path counters every
// 250 ms and reports each flow's forwarded bytes between 3 s after the
// start and 1 s before the earlier of the two ends, where both compete.
// sdrnet's paths are every path but the TCP flow's (its UDP source
// ports, and iperf3's control connection, a few bytes).
func runMix(ctx context.Context, cfg linkem.Config, spec, cc string, secs, port, tcpMem int, sdrnet string, sdrArgs []string) (*result, error) {
	tun, err := linkem.NewTunnel(cfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errSkip, err)
	}
	defer tun.Close()
	nsA, nsB := tun.Namespace(linkem.SideA), tun.Namespace(linkem.SideB)
	if err := prepareNamespaces(tun, tcpMem); err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b := tun.Addr(linkem.SideB).String()
	// -J: --get-server-output then gives the receiver's intervals as JSON.
	srv := nsCommand(sctx, nsB, "iperf3", "-s", "-1", "-J", "-B", b, "-p", fmt.Sprint(port))
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("iperf3 server: %w", err)
	}
	defer func() { cancel(); _ = srv.Wait() }()
	sdrPort := port + 2
	ssrv := nsCommand(sctx, nsB, append([]string{sdrnet, "bench", "--listen", fmt.Sprintf("%s:%d", b, sdrPort)}, sdrArgs...)...)
	if err := ssrv.Start(); err != nil {
		return nil, fmt.Errorf("sdrnet server: %w", err)
	}
	defer func() { cancel(); _ = ssrv.Wait() }()
	if err := waitListening(ctx, nsB, port); err != nil {
		return nil, err
	}
	time.Sleep(300 * time.Millisecond) // the sdrnet listener

	type sample struct {
		at       time.Time
		tcp, all uint64
	}
	cport := port + 1
	var samples []sample
	stopSampling := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			st := tun.Stats()
			s := sample{at: time.Now(), all: st.Forward.ForwardedBytes}
			for _, p := range st.Paths {
				if int(p.Client.Port()) == cport {
					s.tcp = p.Forward.ForwardedBytes
				}
			}
			samples = append(samples, s)
			select {
			case <-tick.C:
			case <-stopSampling:
				return
			}
		}
	}()
	start := time.Now()
	// sdrnet sends what half the bottleneck carries in the run, so it
	// stays about as long as iperf3 when the shares are even.
	rate := 1e9
	if r := cfg.Default.Forward.Rate; r > 0 {
		rate = r
	}
	size := int64(rate / 8 / 2 * float64(secs))
	sc := nsCommand(ctx, nsA, append([]string{sdrnet, "bench", "--connect", fmt.Sprintf("%s:%d", b, sdrPort),
		"--json", "--size", fmt.Sprint(size)}, sdrArgs...)...)
	var sdrOut []byte
	var sdrErr error
	var sdrEnd time.Time
	sdone := make(chan struct{})
	go func() {
		defer close(sdone)
		sdrOut, sdrErr = sc.Output()
		sdrEnd = time.Now()
	}()
	args := []string{"iperf3", "-c", b, "--cport", fmt.Sprint(cport),
		"-p", fmt.Sprint(port), "-C", cc, "-t", fmt.Sprint(secs), "-J"}
	if kernelQueue {
		args = append(args, "--get-server-output")
	}
	client := nsCommand(ctx, nsA, args...)
	out, err := client.Output()
	tcpEnd := time.Now()
	<-sdone
	close(stopSampling)
	<-sampled
	var rep iperfReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil || rep.Error != "" {
		return nil, fmt.Errorf("iperf3 client: %v (json: %v) %s: %s", err, jerr, rep.Error, truncate(out))
	}
	if got := rep.End.SenderTCPCongestion; got != "" && got != cc {
		return nil, fmt.Errorf("iperf3 ran %s, not %s", got, cc)
	}
	if sdrErr != nil {
		return nil, fmt.Errorf("sdrnet bench: %v: %s", sdrErr, truncate(sdrOut))
	}
	var sr struct {
		Bytes   int64              `json:"bytes"`
		Goodput float64            `json:"goodput_bps"`
		Retx    int64              `json:"retransmitted_bytes"`
		RTOs    int64              `json:"rtos"`
		Detail  map[string]float64 `json:"cc_detail"`
		// Intervals are cut every -i; a message's bytes count when it
		// completes.
		Intervals intervals `json:"intervals"`
	}
	if err := json.Unmarshal(sdrOut, &sr); err != nil {
		return nil, fmt.Errorf("sdrnet bench json: %v: %s", err, truncate(sdrOut))
	}
	from, to := start.Add(3*time.Second), sdrEnd
	if tcpEnd.Before(to) {
		to = tcpEnd
	}
	to = to.Add(-time.Second)
	tooBrief := fmt.Errorf("the flows overlapped too briefly to measure (sdrnet ended %v after the start, tcp %v)",
		sdrEnd.Sub(start).Round(time.Millisecond), tcpEnd.Sub(start).Round(time.Millisecond))
	var dt, tcpBps, sdrBps float64
	if kernelQueue {
		// The tbf counts no flows apart: each flow's goodput over the
		// whole intervals of the window, by the receiver's count (TCP)
		// and by completed messages (sdrnet). Each flow counts its
		// intervals from its own start, after its handshake: a few
		// round trips after ours, and not the same few (iperf3 gives its
		// start only to the second), so the two windows may stand up to
		// about 0.1 s apart: under 1% of a 20 s run's window.
		lo, hi := from.Sub(start).Seconds(), to.Sub(start).Seconds()
		var ok1, ok2 bool
		tcpBps, ok1 = rep.Server.Intervals.goodputIn(lo, hi)
		sdrBps, ok2 = sr.Intervals.goodputIn(lo, hi)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: tcp's receiver gave %d intervals, sdrnet %d", tooBrief, len(rep.Server.Intervals), len(sr.Intervals))
		}
		dt = hi - lo
	} else {
		var a, z *sample
		for i := range samples {
			if a == nil && !samples[i].at.Before(from) {
				a = &samples[i]
			}
			if !samples[i].at.After(to) {
				z = &samples[i]
			}
		}
		if a == nil || z == nil || !z.at.After(a.at) {
			return nil, tooBrief
		}
		dt = z.at.Sub(a.at).Seconds()
		tcpBps, sdrBps = float64(z.tcp-a.tcp)*8/dt, float64(z.all-z.tcp-(a.all-a.tcp))*8/dt
	}
	st := tun.Stats()
	res := &result{CC: cc, Spec: spec, Seconds: rep.End.SumReceived.Seconds,
		GoodputBps: rep.End.SumReceived.BitsPerSecond, SentBps: rep.End.SumSent.BitsPerSecond,
		Retransmits: rep.End.SumSent.Retransmits, ForwardPkts: st.Forward.Forwarded, sdrnetJSON: sdrOut,
		DroppedLoss: st.Forward.DroppedLoss, DroppedQ: st.Forward.DroppedQueue, Paths: len(st.Paths),
		Mix: &mix{SdrnetArgs: strings.Join(sdrArgs, " "), Seconds: dt, TCPBps: tcpBps, SdrnetBps: sdrBps,
			SdrnetGoodput: sr.Goodput, SdrnetRTOs: sr.RTOs, SdrnetCompete: int64(sr.Detail["competitive spells"])}}
	if err := kernelQueueCounts(tun, res); err != nil {
		return nil, err
	}
	if all := tcpBps + sdrBps; all > 0 {
		res.Mix.TCPShare, res.Mix.SdrnetShare = tcpBps/all, sdrBps/all
	}
	if sr.Bytes > 0 {
		res.Mix.SdrnetResentPct = 100 * float64(sr.Retx) / float64(sr.Bytes)
	}
	return res, nil
}

// keepJSON writes out to dir as NAME-N.json, N the first number not
// taken, so repeated runs keep every result.
func keepJSON(dir, name string, out []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for n := 1; ; n++ {
		f, err := os.OpenFile(fmt.Sprintf("%s/%s-%d.json", dir, name, n), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, os.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		if _, err := f.Write(out); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
}
