package main

import (
	"fmt"
	"os/exec"
	"reflect"
	"strings"

	"github.com/sdrnet/sdrnet/internal/linkem"
)

// The kernel bottleneck (-kernel-queue). On a two-vCPU machine the
// emulator cannot forward 1 Gbit/s beside two user-space hosts: at
// SCHED_FIFO it took one and a half of the two CPUs, the hosts' round
// trips grew by tens of milliseconds waiting for one, and that, not the
// controllers, decided who got the bottleneck (the old notebook docs/benchmarks.md, in git history, "A
// second machine"). So the data direction leaves the emulator: A reaches
// B's tunnel address over a veth pair whose A end has a tbf qdisc (the
// spec's forward rate, burst and drop-tail queue), which the kernel runs
// in the sender's own context, as it does a NIC's queue. The tunnel then
// carries only the reverse direction (ACKs), with the whole round trip's
// delay. Where the delay sits (before or after the queue) does not change
// the round trip either flow sees; this machine's kernel has no netem to
// delay the veth itself.

// kernelQueueDev is the veth pair's name in both namespaces.
const kernelQueueDev = "tq0"

// kernelQueueSplit moves cfg's forward bottleneck out of the tunnel: it
// returns the tunnel's config (no forward impairment, the forward delay
// added to the reverse) and the forward impairment the tbf takes. The
// forward direction may only have delay, rate, burst and queue: tbf has
// no loss, jitter or reordering.
func kernelQueueSplit(cfg linkem.Config) (linkem.Config, linkem.Impairment, error) {
	if len(cfg.Paths) > 0 || len(cfg.Ports) > 0 {
		return cfg, linkem.Impairment{}, fmt.Errorf("-kernel-queue takes one default path, not per-path or per-port impairments")
	}
	fwd := cfg.Default.Forward
	if fwd.Rate <= 0 {
		return cfg, linkem.Impairment{}, fmt.Errorf("-kernel-queue needs a rate in the spec (rate=1Gbps): the tbf is the bottleneck")
	}
	rest := fwd
	rest.Delay, rest.Rate, rest.Burst, rest.Queue = 0, 0, 0, 0
	if !reflect.DeepEqual(rest, linkem.Impairment{}) {
		return cfg, linkem.Impairment{}, fmt.Errorf("-kernel-queue: the forward direction takes only delay, rate, burst and queue (a tbf has no loss, jitter or reordering)")
	}
	out := cfg
	out.Default.Reverse.Delay += fwd.Delay
	out.Default.Forward = linkem.Impairment{}
	out.Shared = false // the reverse carries ACKs only; its queue is no bottleneck
	return out, fwd, nil
}

// addKernelQueue joins the tunnel's namespaces with the veth pair, puts
// fwd's token bucket and queue on A's end and routes A's packets to B's
// tunnel address through it. B keeps answering through the tunnel, so it
// must accept packets from A's tunnel address on the veth (rp_filter off).
func addKernelQueue(tun *linkem.Tunnel, fwd linkem.Impairment, mtu int) error {
	nsA, nsB := tun.Namespace(linkem.SideA), tun.Namespace(linkem.SideB)
	a, b := tun.Addr(linkem.SideA).String(), tun.Addr(linkem.SideB).String()
	queue := fwd.Queue
	if queue == 0 {
		queue = linkem.DefaultQueue
	}
	// A bucket of a few frames: the veth sends at memory speed, so the
	// bucket's depth is the only burst the bottleneck lets through (tbf
	// needs at least one frame; one would wake a timer per packet).
	burst := max(fwd.Burst, int64(4*mtu))
	cmds := [][]string{
		{"ip", "link", "add", kernelQueueDev, "netns", nsA, "mtu", fmt.Sprint(mtu), "type", "veth",
			"peer", "name", kernelQueueDev, "netns", nsB, "mtu", fmt.Sprint(mtu)},
		{"ip", "-n", nsA, "link", "set", kernelQueueDev, "up"},
		{"ip", "-n", nsB, "link", "set", kernelQueueDev, "up"},
		{"ip", "netns", "exec", nsB, "sysctl", "-q", "-w", "net.ipv4.conf.all.rp_filter=0",
			"net.ipv4.conf.default.rp_filter=0", "net.ipv4.conf." + kernelQueueDev + ".rp_filter=0"},
		// A's route to B now points at the veth while B's ACKs come in
		// on the tunnel: strict reverse-path filtering (a host's 1,
		// which new namespaces inherit) would drop them all.
		{"ip", "netns", "exec", nsA, "sysctl", "-q", "-w", "net.ipv4.conf.all.rp_filter=2"},
		{"ip", "netns", "exec", nsA, "tc", "qdisc", "replace", "dev", kernelQueueDev, "root", "tbf",
			"rate", fmt.Sprintf("%.0fbit", fwd.Rate), "burst", fmt.Sprint(burst), "limit", fmt.Sprint(queue)},
		{"ip", "-n", nsA, "route", "add", b + "/32", "dev", kernelQueueDev, "src", a},
	}
	for _, c := range cmds {
		if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", strings.Join(c, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// kernelQueueStats reads the tbf's counters: packets it sent on, and
// packets it dropped.
func kernelQueueStats(tun *linkem.Tunnel) (sent, dropped uint64, err error) {
	out, err := exec.Command("ip", "netns", "exec", tun.Namespace(linkem.SideA),
		"tc", "-s", "qdisc", "show", "dev", kernelQueueDev).CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("tc -s qdisc show: %v: %s", err, strings.TrimSpace(string(out)))
	}
	// " Sent 123 bytes 45 pkt (dropped 6, overlimits 7 requeues 0)"
	i := strings.Index(string(out), "Sent ")
	if i < 0 {
		return 0, 0, fmt.Errorf("tc -s qdisc show: no counters: %s", truncate(out))
	}
	var bytes uint64
	if _, err := fmt.Sscanf(string(out[i:]), "Sent %d bytes %d pkt (dropped %d,", &bytes, &sent, &dropped); err != nil {
		return 0, 0, fmt.Errorf("tc -s qdisc show: %v: %s", err, truncate(out))
	}
	return sent, dropped, nil
}

// kernelQueueCounts puts the tbf's counters in res as the forward
// direction's (-kernel-queue: the tunnel forwards no data then).
func kernelQueueCounts(tun *linkem.Tunnel, res *result) error {
	if !kernelQueue {
		return nil
	}
	sent, dropped, err := kernelQueueStats(tun)
	res.ForwardPkts, res.DroppedQ = sent, dropped
	return err
}
