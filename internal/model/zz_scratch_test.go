package model

import (
	"fmt"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

func TestZZScratch(t *testing.T) {
	rtt := 2 * (12500*monotime.Microsecond + 2*monotime.Microsecond)
	for _, sz := range []int64{128 << 10, 16 << 20, 1 << 30} {
		for _, p := range []float64{1e-6, 1e-4, 1e-2} {
			line := fmt.Sprintf("%-7s %-6g", sizeName(sz), p)
			for _, r := range []RetryModel{RetryChunk, RetryPacket} {
				for _, s := range []Scheme{SRRTO, SRNACK, ECMDS, ECXOR} {
					st := time.Now()
					pr, err := Predict(Params{MessageBytes: sz, HeaderBytes: 98, RateBitsPerSec: 400e9, RTT: rtt, DropProb: p, Scheme: s, Decode: DecodeStripe, Retry: r})
					if err != nil {
						t.Fatal(err)
					}
					line += fmt.Sprintf(" %8.2f", pr.Mean.Seconds()*1e3)
					_ = st
					if s == ECXOR && r == RetryPacket {
						line += fmt.Sprintf(" [F=%d F'=%d pfb=%.3g %v]", pr.RepairChunks, pr.RepairPackets, pr.PFallback, time.Since(st))
					}
				}
				line += " |"
			}
			t.Log(line)
		}
	}
}
