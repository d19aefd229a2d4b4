package chakra

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// in is a collective node of process group g.
func in(g string, n Node) Node {
	n.Attrs = append(n.Attrs, TextAttr("pg_name", g))
	return n
}

// TestGroups: a tensor-parallel pair and a data-parallel pair each run
// their collectives among themselves; the groups read back as written;
// pg_name "0" is all ranks.
func TestGroups(t *testing.T) {
	groups := Groups{"1": {0, 1}, "2": {2, 3}, "3": {0, 2}, "4": {1, 3}}
	var b bytes.Buffer
	if err := groups.Write(&b); err != nil {
		t.Fatal(err)
	}
	if b.String() != `{"1":[0,1],"2":[2,3],"3":[0,2],"4":[1,3]}`+"\n" {
		t.Errorf("written as %q", b.String())
	}
	read, err := ReadGroups(&b)
	if err != nil || !reflect.DeepEqual(read, groups) {
		t.Fatalf("read back %v, %v", read, err)
	}
	tp := map[int]string{0: "1", 1: "1", 2: "2", 3: "2"}
	dp := map[int]string{0: "3", 1: "4", 2: "3", 3: "4"}
	var ranks []*Trace
	for r := range 4 {
		ranks = append(ranks, &Trace{Nodes: []Node{in(tp[r], coll(1, AllReduce, 1<<20)), in(dp[r], coll(2, AllReduce, 8<<20, 1)),
			in("0", coll(3, AllGather, 4096, 2))}})
	}
	j, err := NewGroupJob(ranks, read)
	if err != nil {
		t.Fatal(err)
	}
	if g := j.GroupOf(&ranks[3].Nodes[1]); g != "4" || !reflect.DeepEqual(j.Groups[g], []int{1, 3}) {
		t.Errorf("rank 3's data-parallel all-reduce runs in %q: %v", g, j.Groups[g])
	}
	if g := j.GroupOf(&ranks[0].Nodes[2]); g != AllRanks || len(j.Groups[g]) != 4 {
		t.Errorf(`pg_name "0" is group %q of %v`, g, j.Groups[g])
	}
}

func TestGroupErrors(t *testing.T) {
	two := func(a, b Node) []*Trace { return []*Trace{{Nodes: []Node{a}}, {Nodes: []Node{b}}} }
	ar := func(g string, size int64) Node { return in(g, coll(1, AllReduce, size)) }
	for _, tt := range []struct {
		name   string
		ranks  []*Trace
		groups Groups
		want   string
	}{
		{"an unknown group", two(ar("9", 1), ar("9", 1)), Groups{"1": {0, 1}},
			`rank 0: node 1 ("ALL_REDUCE"): pg_name "9" names no process group (known: ["1"])`},
		{"a rank outside its group", two(ar("1", 1), ar("1", 1)), Groups{"1": {0}},
			`rank 1: node 1 ("ALL_REDUCE"): rank 1 is not in process group "1" ([0])`},
		{"sizes that differ", two(ar("1", 1), ar("1", 2)), Groups{"1": {0, 1}},
			`process group "1": collective 0 is ALL_REDUCE of 1 bytes on rank 0 (node 1, "ALL_REDUCE") but ALL_REDUCE of 2 bytes on rank 1`},
		{"one rank short", []*Trace{{Nodes: []Node{ar("", 1)}}, {}}, nil,
			"process group of all ranks: rank 0 runs 1 collectives in it, rank 1 only 0"},
		{"a rank twice", two(ar("1", 1), ar("1", 1)), Groups{"1": {0, 0}}, `process group "1": rank 0 is not a rank of this job (0..1) or is listed twice`},
		{"a group named all", two(ar("", 1), ar("", 1)), Groups{"0": {0}}, `process group "0": the name means all ranks`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewGroupJob(tt.ranks, tt.groups)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := ReadGroups(strings.NewReader(`{"1": [0, "x"]}`)); err == nil || !strings.Contains(err.Error(), "want {") {
		t.Errorf("a malformed group file: %v", err)
	}
}
