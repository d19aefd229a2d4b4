package main

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// TestBenchAfterOmit: the goodput past --omit counts the messages that
// completed after the first completion at or past it, over the time from
// that completion, whatever their size (the last may be short).
func TestBenchAfterOmit(t *testing.T) {
	// Four 100-byte messages and a last of 50, completing at 0.5, 1.0,
	// 1.2, 1.6 and 2.0 s; the transfer ends at 2.0 s.
	r := benchResult{MsgBytes: 100, Bytes: 450, Seconds: 2.0,
		posted: []float64{0, 0.1, 0.2, 0.3, 0.4}, took: []float64{0.5, 0.9, 1.0, 1.3, 1.6}}
	for _, tt := range []struct {
		omit         time.Duration
		bytes        int64
		seconds, bps float64
	}{
		{0, 0, 0, 0},
		{time.Second, 100 + 100 + 50, 1.0, 250 * 8 / 1.0},       // from the 1.0 s completion
		{1100 * time.Millisecond, 100 + 50, 0.8, 150 * 8 / 0.8}, // from 1.2 s
		{2 * time.Second, 0, 0, 0},                              // only the last completes there
		{3 * time.Second, 0, 0, 0},
	} {
		got := r
		got.afterOmit(tt.omit)
		if got.OmitBytes != tt.bytes || math.Abs(got.OmitSeconds-tt.seconds) > 1e-9 || math.Abs(got.OmitGoodput-tt.bps) > 1e-6 {
			t.Errorf("omit %v: %d bytes in %g s at %g bit/s; want %d, %g, %g", tt.omit, got.OmitBytes, got.OmitSeconds,
				got.OmitGoodput, tt.bytes, tt.seconds, tt.bps)
		}
	}

	// Through the command: JSON carries the fields.
	var out bytes.Buffer
	if err := execute([]string{"bench", "--size", "64MiB", "--msg", "1MiB", "--rate", "1Gbps", "-i", "0", "-O", "100ms", "--json"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var res benchResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatal(err)
	}
	if res.Omit != 0.1 || res.OmitGoodput <= 0 || res.OmitBytes <= 0 || res.OmitBytes >= res.Bytes || res.OmitSeconds >= res.Seconds {
		t.Errorf("-O 100ms: omit %g s, %g bit/s, %d of %d bytes in %g of %g s", res.Omit, res.OmitGoodput, res.OmitBytes,
			res.Bytes, res.OmitSeconds, res.Seconds)
	}
}
