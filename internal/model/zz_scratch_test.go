package model

import (
	"fmt"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

func TestScratch(t *testing.T) {
	for _, sz := range []int64{128 << 10, 16 << 20, 1 << 30} {
		for _, p := range []float64{1e-6, 1e-4, 1e-2, 1e-1} {
			line := fmt.Sprintf("%6d KiB p=%g:", sz>>10, p)
			for _, s := range []Scheme{SRRTO, SRNACK, ECMDS, ECXOR} {
				for _, d := range []DecodeModel{DecodeChunk, DecodeStripe} {
					if s < ECMDS && d == DecodeStripe {
						continue
					}
					pr, err := Predict(Params{MessageBytes: sz, RateBitsPerSec: 400e9, RTT: 25 * monotime.Millisecond, DropProb: p, Scheme: s, Decode: d})
					if err != nil {
						line += " " + err.Error()
						continue
					}
					line += fmt.Sprintf(" %s/%d %.2f (p999 %.1f pf %.3g F %d)", s, d, pr.Mean.Seconds()*1e3, pr.P999.Seconds()*1e3, pr.PFallback, pr.RepairChunks)
				}
			}
			t.Log(line)
		}
	}
}
