package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The emulator is the bottleneck switch, and a switch does not share its
// CPU with the hosts. On a two-vCPU machine running it beside two iperf3
// ends and two sdrnet ends, it stalled for milliseconds at a time, and a
// stall's arrivals, read at once, overflowed the 256 KiB queue that the
// link would have drained meanwhile: drops no real bottleneck makes
// (2,000-3,700 per 20 s run). Kernel CUBIC, which regrows by about 15
// Mbit/s per second at 20 ms on this path, never recovered from them, and
// its share beside sdrnet was bimodal, 0.05-0.51 (the old notebook docs/benchmarks.md, in git history,
// "The lone connection, round 4"). So the emulator runs at a real-time
// priority and the ends it starts at the normal one.

// rtChildPrefix is what starts a child at the normal scheduling policy
// when the emulator runs at a real-time one (chrt resets it, then execs).
var rtChildPrefix []string

// raisePriority puts every thread of this process under SCHED_FIFO at
// prio (threads the runtime starts later inherit it) and makes nsCommand
// start children under SCHED_OTHER. It needs root (CAP_SYS_NICE) and
// chrt; without them it says so and leaves the scheduling alone.
func raisePriority(prio int) {
	chrt, err := exec.LookPath("chrt")
	if err != nil {
		fmt.Fprintf(os.Stderr, "tuntcp: the emulator keeps the normal priority: no chrt: %v\n", err)
		return
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		fmt.Fprintf(os.Stderr, "tuntcp: the emulator keeps the normal priority: %v\n", err)
		return
	}
	attr := unix.SchedAttr{Size: uint32(unsafe.Sizeof(unix.SchedAttr{})), Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := unix.SchedSetAttr(tid, &attr, 0); err != nil {
			fmt.Fprintf(os.Stderr, "tuntcp: the emulator keeps the normal priority: %v\n", err)
			return
		}
	}
	rtChildPrefix = []string{chrt, "--other", "0"}
}

// nsCommand runs args in network namespace ns, at the normal scheduling
// policy.
func nsCommand(ctx context.Context, ns string, args ...string) *exec.Cmd {
	argv := append(append(rtChildPrefix[:len(rtChildPrefix):len(rtChildPrefix)], "ip", "netns", "exec", ns), args...)
	return exec.CommandContext(ctx, argv[0], argv[1:]...)
}
