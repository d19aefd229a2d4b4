package reliability

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestWorkers checks that parity coded on the workers is the codec's own,
// for several jobs in flight at once and for a nil Workers, which codes at
// Start.
func TestWorkers(t *testing.T) {
	codes := []struct {
		name string
		code Codec
	}{
		{"mds", must(NewMDS(32, 8))},
		{"mds-short", must(NewMDS(32, 8)).Short(5)},
		{"xor", must(NewXOR(32, 8))},
	}
	for _, n := range []int{0, 1, 2} {
		var w *Workers
		if n > 0 {
			w = NewWorkers(n)
			defer w.Close()
		}
		for _, tc := range codes {
			t.Run(fmt.Sprintf("%s/workers=%d", tc.name, n), func(t *testing.T) {
				k, m := tc.code.K(), tc.code.M()
				jobs := make([]Job, 3)
				want := make([][][]byte, len(jobs))
				got := make([][][]byte, len(jobs))
				for round := range 2 { // jobs are reused
					for i := range jobs {
						rng := rand.New(rand.NewPCG(uint64(i), uint64(round)))
						want[i] = randomShards(rng, k, m, 5000)
						got[i] = make([][]byte, k+m)
						for s := range got[i] {
							got[i][s] = bytes.Clone(want[i][s]) // stale parity, overwritten
						}
						if err := tc.code.Encode(want[i]); err != nil {
							t.Fatal(err)
						}
						w.Start(&jobs[i], tc.code, got[i])
					}
					for i := range jobs {
						if err := jobs[i].Wait(); err != nil {
							t.Fatal(err)
						}
						if jobs[i].Busy() {
							t.Fatal("busy after Wait")
						}
						for s := k; s < k+m; s++ {
							if !bytes.Equal(got[i][s], want[i][s]) {
								t.Fatalf("job %d: parity shard %d differs from the codec's own", i, s)
							}
						}
					}
				}
			})
		}
	}
}

// TestWorkersError checks that an Encode's error comes back through Wait.
func TestWorkersError(t *testing.T) {
	w := NewWorkers(1)
	defer w.Close()
	var j Job
	w.Start(&j, must(NewMDS(4, 2)), make([][]byte, 3)) // too few shards
	if err := j.Wait(); err == nil {
		t.Fatal("Encode of 3 shards for a (4,2) code succeeded")
	}
	if err := j.Wait(); err != nil {
		t.Fatalf("second Wait = %v, want nil", err)
	}
}

// TestWorkersAllocs checks that a job allocates nothing of its own once
// made (XOR, which allocates nothing itself).
func TestWorkersAllocs(t *testing.T) {
	w := NewWorkers(1)
	defer w.Close()
	code := must(NewXOR(32, 8))
	shards := randomShards(rand.New(rand.NewPCG(3, 3)), 32, 8, 64<<10)
	var j Job
	w.Start(&j, code, shards)
	if n := testing.AllocsPerRun(100, func() {
		w.Start(&j, code, shards)
		if err := j.Wait(); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("a job allocates %v times", n)
	}
}
