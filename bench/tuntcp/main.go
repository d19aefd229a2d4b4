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
	MeanRTTms   float64 `json:"mean_rtt_ms"`
	MaxRTTms    float64 `json:"max_rtt_ms"`
	ForwardPkts uint64  `json:"tunnel_forwarded"`
	DroppedLoss uint64  `json:"tunnel_dropped_loss"`
	DroppedQ    uint64  `json:"tunnel_dropped_queue"`
	Paths       int     `json:"tunnel_paths"`
}

func main() {
	spec := flag.String("spec", "delay=25ms,rate=1Gbps,loss=1%", "linkem impairments, as sdrnet linkem --spec takes them")
	ccs := flag.String("cc", "bbr,cubic", "comma-separated TCP congestion controls to run")
	secs := flag.Int("t", 20, "seconds per iperf3 run")
	port := flag.Int("port", 5201, "iperf3 port inside namespace B")
	tcpMem := flag.Int("tcp-mem", 32<<20, "max TCP send/receive buffer (bytes) set in both namespaces; 0 keeps the host's")
	asJSON := flag.Bool("json", false, "print one JSON object per run instead of a text line")
	flag.Parse()

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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	failed := false
	for _, cc := range strings.Split(*ccs, ",") {
		if ctx.Err() != nil {
			break
		}
		// A fresh tunnel per run: no state (paths, queues, TCP metrics
		// cache) carries over from one congestion control to the next.
		res, err := runOne(ctx, cfg, *spec, cc, *secs, *port, *tcpMem)
		if errors.Is(err, errSkip) {
			fmt.Printf("tuntcp: skip: %v\n", err)
			return
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "tuntcp: %s: %v\n", cc, err)
			failed = true
			continue
		}
		if *asJSON {
			b, _ := json.Marshal(res)
			fmt.Println(string(b))
		} else {
			fmt.Printf("tcp %-6s goodput %7.1f Mbit/s  (sent %7.1f Mbit/s, %d retransmits, rtt mean %.1f ms max %.1f ms; tunnel lost %d, queue-dropped %d)\n",
				res.CC, res.GoodputBps/1e6, res.SentBps/1e6, res.Retransmits, res.MeanRTTms, res.MaxRTTms,
				res.DroppedLoss, res.DroppedQ)
		}
	}
	if failed {
		os.Exit(1)
	}
}

var errSkip = errors.New("tunnel unavailable")

func runOne(ctx context.Context, cfg linkem.Config, spec, cc string, secs, port, tcpMem int) (*result, error) {
	tun, err := linkem.NewTunnel(cfg)
	if err != nil {
		// e.g. a container that may not create namespaces
		return nil, fmt.Errorf("%w: %v", errSkip, err)
	}
	defer tun.Close()
	nsA, nsB := tun.Namespace(linkem.SideA), tun.Namespace(linkem.SideB)
	if tcpMem > 0 {
		for _, ns := range []string{nsA, nsB} {
			out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-q", "-w",
				fmt.Sprintf("net.ipv4.tcp_rmem=4096 131072 %d", tcpMem),
				fmt.Sprintf("net.ipv4.tcp_wmem=4096 16384 %d", tcpMem)).CombinedOutput()
			if err != nil {
				return nil, fmt.Errorf("sysctl in %s: %v: %s", ns, err, strings.TrimSpace(string(out)))
			}
		}
	}

	// The server: one client, then it exits. It stays a child of ours (no
	// -D) so it can be killed if anything goes wrong.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := exec.CommandContext(sctx, "ip", "netns", "exec", nsB, "iperf3", "-s", "-1",
		"-B", tun.Addr(linkem.SideB).String(), "-p", fmt.Sprint(port))
	srv.Stdout, srv.Stderr = nil, nil
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("iperf3 server: %w", err)
	}
	defer func() { cancel(); _ = srv.Wait() }()
	if err := waitListening(ctx, nsB, port); err != nil {
		return nil, err
	}

	client := exec.CommandContext(ctx, "ip", "netns", "exec", nsA, "iperf3", "-c", tun.Addr(linkem.SideB).String(),
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
		DroppedLoss: st.Forward.DroppedLoss, DroppedQ: st.Forward.DroppedQueue, Paths: len(st.Paths)}
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
		out, err := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "ss", "-Hltn", fmt.Sprintf("sport = :%d", port)).Output()
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
	} `json:"end"`
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
