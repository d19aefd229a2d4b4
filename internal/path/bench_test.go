package path

import (
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// BenchmarkSelect measures one packet's worth of selector work at MaxPaths
// paths: Select, OnSent and OnAcked with an RTT sample (RTTs differ by
// path, so BestRTT has a ranking to keep).
func BenchmarkSelect(b *testing.B) {
	for _, kind := range allKinds {
		b.Run(kind.String(), func(b *testing.B) {
			s, err := New(kind, MaxPaths, 1)
			if err != nil {
				b.Fatal(err)
			}
			var rtt [MaxPaths]monotime.Duration
			for i := range rtt {
				rtt[i] = 10*us + monotime.Duration(i%7)*us
			}
			now := monotime.Time(0)
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(100 * monotime.Nanosecond)
				p := s.Select(now)
				s.OnSent(now, p, pkt)
				s.OnAcked(now, p, pkt, rtt[p])
			}
		})
	}
}
