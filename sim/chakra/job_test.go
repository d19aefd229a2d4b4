package chakra

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func send(id uint64, dst, tag, size int64, deps ...uint64) Node {
	return Node{ID: id, Name: "send", Type: CommSendNode, DataDeps: deps,
		Attrs: []Attr{IntAttr("comm_dst", dst), IntAttr("comm_tag", tag), IntAttr("comm_size", size)}}
}

func recv(id uint64, src, tag, size int64, deps ...uint64) Node {
	return Node{ID: id, Name: "recv", Type: CommRecvNode, DataDeps: deps,
		Attrs: []Attr{IntAttr("comm_src", src), IntAttr("comm_tag", tag), IntAttr("comm_size", size)}}
}

func comp(id uint64, micros uint64, deps ...uint64) Node {
	return Node{ID: id, Name: "gemm", Type: CompNode, DurationMicros: micros, DataDeps: deps}
}

func coll(id uint64, typ CollectiveType, size int64, deps ...uint64) Node {
	return Node{ID: id, Name: typ.String(), Type: CommCollNode, DataDeps: deps,
		Attrs: []Attr{BoolAttr("is_cpu_op", false), IntAttr("comm_type", int64(typ)), IntAttr("comm_size", size)}}
}

// TestNewJob: a two-rank pipeline step (compute, send, receive, compute,
// then an all-reduce on both) checks, and each rank's order runs a node
// after its dependencies even where the file lists it first.
func TestNewJob(t *testing.T) {
	r0 := &Trace{Nodes: []Node{coll(3, AllReduce, 1<<20, 2), comp(1, 100), send(2, 1, 7, 4096, 1)}}
	r1 := &Trace{Nodes: []Node{recv(1, 0, 7, 4096), comp(2, 100, 1), coll(3, AllReduce, 1<<20, 2, 99)}}
	j, err := NewJob([]*Trace{r0, r1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(j.Order[0], []int{1, 2, 0}) || !slices.Equal(j.Order[1], []int{0, 1, 2}) {
		t.Errorf("orders %v, want [[1 2 0] [0 1 2]]", j.Order)
	}
	if !reflect.DeepEqual(j.Waits, [][]int{{1, 0, 1}, {0, 1, 1}}) || !reflect.DeepEqual(j.Children[0], [][]int{nil, {2}, {0}}) {
		t.Errorf("waits %v, rank 0's children %v; want [[1 0 1] [0 1 1]] and [[] [2] [0]]", j.Waits, j.Children[0])
	}
	if j.MissingDeps != 1 {
		t.Errorf("%d missing dependencies, want 1 (rank 1's node 3 on 99)", j.MissingDeps)
	}
}

// TestNewJobErrors: what a replay could not run is an error naming the
// rank, the node and the problem.
func TestNewJobErrors(t *testing.T) {
	ok := func() *Trace { return &Trace{Nodes: []Node{recv(1, 0, 7, 4096)}} }
	for _, tt := range []struct {
		name  string
		ranks []*Trace
		want  string
	}{
		{"a send no one receives", []*Trace{{Nodes: []Node{send(5, 1, 7, 4096)}}, {}},
			`rank 0: node 5 ("send"): rank 0 sends [4096] bytes to rank 1 with tag 7, and rank 1 receives []`},
		{"sizes that differ", []*Trace{{Nodes: []Node{send(5, 1, 7, 8192)}}, ok()},
			"sends [8192] bytes to rank 1 with tag 7, and rank 1 receives [4096]"},
		{"a peer outside the job", []*Trace{{Nodes: []Node{send(5, 2, 7, 4096)}}, ok()},
			`rank 0: node 5 ("send"): comm_dst 2 is not a rank of this job (0..1)`},
		{"a send without a tag", []*Trace{{Nodes: []Node{{ID: 5, Name: "s", Type: CommSendNode,
			Attrs: []Attr{IntAttr("comm_dst", 1), IntAttr("comm_size", 1)}}}}, ok()},
			`rank 0: node 5 ("s"), a COMM_SEND_NODE, has no comm_tag`},
		{"a collective without a size", []*Trace{{Nodes: []Node{{ID: 4, Name: "ar", Type: CommCollNode,
			Attrs: []Attr{IntAttr("comm_type", 0)}}}}},
			`node 4 ("ar"), a COMM_COLL_NODE, has no comm_size`},
		{"a size that is text", []*Trace{{Nodes: []Node{{ID: 4, Name: "ar", Type: CommCollNode,
			Attrs: []Attr{IntAttr("comm_type", 0), TextAttr("comm_size", "1MB")}}}}},
			"comm_size is not an integer"},
		{"a cycle", []*Trace{{Nodes: []Node{comp(1, 1, 3), comp(2, 1, 1), comp(3, 1, 2), comp(4, 1)}}},
			`rank 0: node 1 ("gemm") is on a dependency cycle, or waits for one (3 of the rank's 4 nodes can never run)`},
		{"a node on itself", []*Trace{{Nodes: []Node{comp(1, 1, 1)}}}, `node 1 ("gemm") depends on itself`},
		{"an id twice", []*Trace{{Nodes: []Node{comp(1, 1), comp(1, 2)}}}, "node id 1 is used twice"},
		{"a rank without a trace", []*Trace{nil}, "rank 0 has no trace"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewJob(tt.ranks)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%v, want an error saying %q", err, tt.want)
			}
		})
	}
}

// TestWriteReadJob: a job built with the attribute constructors writes
// and reads back the same, rank by rank.
func TestWriteReadJob(t *testing.T) {
	n := coll(3, ReduceScatter, 1<<20, 1, 2)
	n.Attrs = append(n.Attrs, TextAttr("pg_name", "1"), BoolsAttr("involved_dim", true, false))
	in := &Trace{Version: "1.0.0", Meta: []Attr{IntAttr("npus", 2)}, Nodes: []Node{comp(1, 100), send(2, 1, 7, 4096, 1), n}}
	var b strings.Builder
	if err := Write(&b, in); err != nil {
		t.Fatal(err)
	}
	out, err := Read(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("wrote %+v\nread  %+v", in, out)
	}
	if dims, _ := out.Nodes[2].Attr("involved_dim"); !slices.Equal(must(dims.Bools()), []bool{true, false}) {
		t.Errorf("involved_dim %v", must(dims.Bools()))
	}
}

func must[T any](v T, _ bool) T { return v }

// TestDataParallel: the generated job checks, has a forward and a
// backward node and an all-reduce per layer on every rank, orders each
// all-reduce after its layer's backward node (with overlap) or after the
// whole pass (without), and survives Write and Read.
func TestDataParallel(t *testing.T) {
	for _, overlap := range []bool{false, true} {
		traces, err := DataParallel{Ranks: 3, Layers: 2, ForwardMicros: 1, BackwardMicros: 2, GradientBytes: 1 << 20, Overlap: overlap}.Traces()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := NewJob(traces); err != nil {
			t.Fatal(err)
		}
		nodes := traces[0].Nodes
		if len(traces) != 3 || len(nodes) != 6 {
			t.Fatalf("%d ranks of %d nodes, want 3 of 6", len(traces), len(nodes))
		}
		// forward 0, forward 1, backward 1 (id 3), backward 0 (id 4), then
		// the all-reduces of layers 1 and 0.
		want := [][]uint64{{3}, {4}}
		if !overlap {
			want = [][]uint64{{4}, {4}}
		}
		if got := [][]uint64{nodes[4].DataDeps, nodes[5].DataDeps}; !reflect.DeepEqual(got, want) {
			t.Errorf("overlap %v: all-reduces depend on %v, want %v", overlap, got, want)
		}
		var b strings.Builder
		if err := Write(&b, traces[1]); err != nil {
			t.Fatal(err)
		}
		if back, err := Read(strings.NewReader(b.String())); err != nil || !reflect.DeepEqual(back, traces[1]) {
			t.Errorf("overlap %v: written and read back: %v, %v", overlap, err, back)
		}
	}
	if _, err := (DataParallel{Layers: 1, GradientBytes: 1}).Traces(); err == nil {
		t.Error("no ranks: no error")
	}
}
