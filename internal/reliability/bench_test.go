package reliability

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The default code at the default MTU: one stripe is what the receiver
// decodes per packet row of a sub-message.
const (
	benchK     = DefaultK
	benchM     = DefaultM
	benchShard = 4096
)

func BenchmarkMDSEncode(b *testing.B) { benchEncode(b, must(NewMDS(benchK, benchM))) }
func BenchmarkXOREncode(b *testing.B) { benchEncode(b, must(NewXOR(benchK, benchM))) }

func BenchmarkMDSReconstruct(b *testing.B) { benchReconstruct(b, must(NewMDS(benchK, benchM))) }
func BenchmarkXORReconstruct(b *testing.B) { benchReconstruct(b, must(NewXOR(benchK, benchM))) }

func benchStripe(b *testing.B, c Codec) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	shards := randomShards(rng, c.K(), c.M(), benchShard)
	if err := c.Encode(shards); err != nil {
		b.Fatal(err)
	}
	return shards
}

func benchEncode(b *testing.B, c Codec) {
	shards := benchStripe(b, c)
	// Throughput counts payload, not parity, to compare with line rate.
	b.SetBytes(int64(benchK * benchShard))
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Encode(shards); err != nil {
			b.Fatal(err)
		}
	}
}

func benchReconstruct(b *testing.B, c Codec) {
	// Data shards 0..M-1 fall in distinct XOR groups, so losing all of them
	// is the most either code can repair: the worst case.
	for _, lost := range []int{1, benchM} {
		b.Run(fmt.Sprintf("missing=%d", lost), func(b *testing.B) {
			shards := benchStripe(b, c)
			present := allPresent(benchK+benchM) &^ allPresent(lost)
			b.SetBytes(int64(benchK * benchShard))
			b.ReportAllocs()
			for b.Loop() {
				for i := range lost {
					shards[i] = shards[i][:0]
				}
				if err := c.Reconstruct(shards, present); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkMDSEncodeSubMessage codes what the sender codes at once: a
// (32,8) sub-message of 64 KiB chunks (16 packets of 4 KiB), on the
// caller's goroutine ("inline") and as a job on a worker, started and
// waited for at once ("worker"): what handing a job over costs.
func BenchmarkMDSEncodeSubMessage(b *testing.B) {
	code := must(NewMDS(benchK, benchM))
	shards := randomShards(rand.New(rand.NewPCG(1, 2)), benchK, benchM, 64<<10)
	b.Run("inline", func(b *testing.B) {
		b.SetBytes(int64(benchK * len(shards[0])))
		b.ReportAllocs()
		for b.Loop() {
			if err := code.Encode(shards); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("worker", func(b *testing.B) {
		w := NewWorkers(1)
		defer w.Close()
		var j Job
		b.SetBytes(int64(benchK * len(shards[0])))
		b.ReportAllocs()
		for b.Loop() {
			w.Start(&j, code, shards)
			if err := j.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
