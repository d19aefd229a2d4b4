package chakra

import (
	"strings"
	"testing"
)

// TestMegatron: a job split four ways (TP 2, PP 2, DP 4 with EP 2)
// checks as a job; its groups are the tensor pairs, the data-parallel
// quads and the expert pairs; each rank computes its stage's layers,
// forward and twice backward, for every micro-batch.
func TestMegatron(t *testing.T) {
	m := Megatron{Layers: 4, Hidden: 1024, SeqLen: 512, MicroBatch: 2, MicroBatches: 4, TP: 2, PP: 2, DP: 4, EP: 2,
		GPUFlops: 100e12, Overlap: true}
	traces, groups, err := m.Traces()
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 16 || m.Ranks() != 16 {
		t.Fatalf("%d traces, want 16", len(traces))
	}
	if _, err := NewGroupJob(traces, groups); err != nil {
		t.Fatal(err)
	}
	sizes := map[int]int{}
	for _, ranks := range groups {
		sizes[len(ranks)]++
	}
	// TP: 2 stages x 4 data ranks pairs; DP: 2 stages x 2 tensor ranks
	// quads; EP: 2 x 2 x 2 pairs.
	if sizes[2] != 8+8 || sizes[4] != 4 || len(sizes) != 2 {
		t.Errorf("group sizes %v, want 16 pairs and 4 quads", sizes)
	}
	if g := groups["1"]; len(g) != 2 || g[0] != 0 || g[1] != 1 {
		t.Errorf("the first tensor group is %v, want ranks 0 and 1", g)
	}
	b, s, h := 2.0, 512.0, 1024.0
	attn := uint64((8*b*s*h*h+4*b*s*s*h)/2/100e12*1e6 + 0.5)
	mlp := uint64(16*b*s*h*h/2/100e12*1e6 + 0.5)
	want := 4 * 2 * 3 * (attn + mlp) // micro-batches x layers per stage x (forward + backward)
	for r, tr := range traces {
		var compute uint64
		var a2a, sends int
		for _, n := range tr.Nodes {
			compute += n.DurationMicros
			if c, _ := n.attrInt("comm_type"); n.Type == CommCollNode && CollectiveType(c) == AllToAll {
				a2a++
			}
			if n.Type == CommSendNode {
				sends++
			}
		}
		if compute != want || a2a != 4*2*4 || sends != 4 {
			t.Errorf("rank %d: %d us of compute (want %d), %d all-to-alls (want 32), %d sends (want 4)", r, compute, want, a2a, sends)
		}
	}
	for _, bad := range []Megatron{{Layers: 3, Hidden: 1, SeqLen: 1, MicroBatch: 1, MicroBatches: 1, TP: 1, PP: 2, DP: 1, EP: 1, GPUFlops: 1},
		{Layers: 2, Hidden: 1, SeqLen: 1, MicroBatch: 1, MicroBatches: 1, TP: 1, PP: 1, DP: 3, EP: 2, GPUFlops: 1},
		{Layers: 2, Hidden: 1, SeqLen: 1, MicroBatch: 1, MicroBatches: 1, TP: 1, PP: 1, DP: 1, EP: 1}} {
		if _, _, err := bad.Traces(); err == nil || !strings.Contains(err.Error(), "chakra:") {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}
