package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/linkem"
)

func TestKernelQueueSplit(t *testing.T) {
	for _, tc := range []struct {
		spec string
		// want: the tunnel's reverse delay and the tbf's rate and queue,
		// or the start of the error.
		reverse time.Duration
		rate    float64
		queue   int64
		err     string
	}{
		{spec: "delay=10ms,rate=1Gbps,queue=256KiB,shared=1", reverse: 20 * time.Millisecond, rate: 1e9, queue: 256 << 10},
		{spec: "delay=25ms,rate=100Mbps", reverse: 50 * time.Millisecond, rate: 1e8},
		{spec: "delay=10ms", err: "-kernel-queue needs a rate"},
		{spec: "delay=10ms,rate=1Gbps,loss=1%", err: "-kernel-queue: the forward direction takes only"},
		{spec: "delay=10ms,rate=1Gbps,jitter=1ms", err: "-kernel-queue: the forward direction takes only"},
	} {
		cfg, err := linkem.ParseSpec(tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", tc.spec, err)
		}
		tunnel, fwd, err := kernelQueueSplit(cfg)
		if tc.err != "" {
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one starting %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.spec, err)
			continue
		}
		if got := tunnel.Default.Reverse.Delay; got != tc.reverse {
			t.Errorf("%s: tunnel's reverse delay %v, want the round trip's %v", tc.spec, got, tc.reverse)
		}
		if tunnel.Default.Forward.Delay != 0 || tunnel.Default.Forward.Rate != 0 || tunnel.Shared {
			t.Errorf("%s: tunnel still impairs the forward direction: %+v shared %v", tc.spec, tunnel.Default.Forward, tunnel.Shared)
		}
		if fwd.Rate != tc.rate || fwd.Queue != tc.queue {
			t.Errorf("%s: tbf rate %v queue %d, want %v and %d", tc.spec, fwd.Rate, fwd.Queue, tc.rate, tc.queue)
		}
	}
}

func TestGoodputIn(t *testing.T) {
	// As iperf3 -J and sdrnet bench --json print them.
	var iv intervals
	if err := json.Unmarshal([]byte(`[
		{"sum": {"start": 0, "end": 1, "bytes": 1000000}},
		{"sum": {"start": 1, "end": 2, "bytes": 2000000}},
		{"sum": {"start": 2, "end": 3, "bytes": 4000000}},
		{"sum": {"start": 3, "end": 3.5, "bytes": 1000000}}]`), &iv); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		from, to float64
		bps      float64
		ok       bool
	}{
		{0, 10, 8e6 * 8 / 3.5, true},
		{1, 3, 6e6 * 8 / 2, true},     // whole intervals only
		{0.5, 2.5, 2e6 * 8 / 1, true}, // the partial ones at both ends left out
		{3.6, 10, 0, false},
	} {
		bps, ok := iv.goodputIn(tc.from, tc.to)
		if ok != tc.ok || bps != tc.bps {
			t.Errorf("[%v, %v]: %v %v, want %v %v", tc.from, tc.to, bps, ok, tc.bps, tc.ok)
		}
	}
}
