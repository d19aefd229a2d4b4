package chakra

import (
	"slices"
	"testing"
)

// TestRepeat: the pipeline step of TestNewJob run three times still
// checks; each copy runs after the one before (its first nodes wait for
// the last ones of the copy before), a dependency on an absent id stays
// absent in every copy, and the original is left as it was.
func TestRepeat(t *testing.T) {
	r0 := &Trace{Nodes: []Node{coll(3, AllReduce, 1<<20, 2), comp(1, 100), send(2, 1, 7, 4096, 1)}}
	r1 := &Trace{Nodes: []Node{recv(1, 0, 7, 4096), comp(2, 100, 1), coll(3, AllReduce, 1<<20, 2, 99)}}
	reps, err := Repeat([]*Trace{r0, r1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	j, err := NewJob(reps)
	if err != nil {
		t.Fatal(err)
	}
	if j.MissingDeps != 3 {
		t.Errorf("%d dependencies on absent ids, want 3 (one per copy of rank 1)", j.MissingDeps)
	}
	for r, tr := range reps {
		n := len([]*Trace{r0, r1}[r].Nodes)
		if len(tr.Nodes) != 3*n {
			t.Fatalf("rank %d: %d nodes, want %d", r, len(tr.Nodes), 3*n)
		}
		// Every node of copy k runs before every node of copy k+1.
		for pos, i := range j.Order[r] {
			if i/n != pos/n {
				t.Errorf("rank %d: order %v mixes copies", r, j.Order[r])
				break
			}
		}
	}
	// Rank 0's second copy: its root (compute, id 1 moved by the span
	// of 4, ids 1-3 and the dependency on 99 counting on rank 1 only)
	// waits for the first copy's all-reduce, its only sink.
	root := reps[0].Nodes[4]
	if root.ID != 5 || !slices.Equal(root.CtrlDeps, []uint64{3}) {
		t.Errorf("rank 0, copy 1's compute: id %d, control deps %v; want 5, [3]", root.ID, root.CtrlDeps)
	}
	if len(r0.Nodes) != 3 || r0.Nodes[1].CtrlDeps != nil {
		t.Error("Repeat changed its input")
	}
	if one, _ := Repeat([]*Trace{r0}, 1); one[0] != r0 {
		t.Error("one repetition is not the trace itself")
	}
	for _, bad := range []struct {
		ranks []*Trace
		n     int
	}{{[]*Trace{r0}, 0}, {[]*Trace{nil}, 2}, {[]*Trace{{Nodes: []Node{comp(1<<63, 1)}}}, 2}} {
		if _, err := Repeat(bad.ranks, bad.n); err == nil {
			t.Errorf("Repeat(%d) of %v: no error", bad.n, bad.ranks)
		} else {
			t.Log(err)
		}
	}
}
