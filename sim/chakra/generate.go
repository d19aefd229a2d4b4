package chakra

import (
	"fmt"
	"slices"
)

// DataParallel describes one data-parallel training iteration, the
// simplest of the jobs issue 50's generator builds: every rank runs the
// forward pass, layer by layer, then the backward pass in reverse layer
// order, and each layer's gradients are all-reduced across the ranks.
// With Overlap a layer's all-reduce waits only for that layer's backward
// compute, so it runs while the layers before it compute (as PyTorch
// DDP's gradient buckets do); without it every all-reduce waits for the
// whole backward pass.
type DataParallel struct {
	Ranks, Layers                 int
	ForwardMicros, BackwardMicros uint64 // per layer
	GradientBytes                 int64  // per layer
	Overlap                       bool
}

// Traces returns one trace per rank, the same graph on each.
func (d DataParallel) Traces() ([]*Trace, error) {
	if d.Ranks < 1 || d.Layers < 1 || d.GradientBytes < 1 {
		return nil, fmt.Errorf("chakra: a data-parallel job needs at least one rank, layer and gradient byte (%d, %d, %d)",
			d.Ranks, d.Layers, d.GradientBytes)
	}
	var nodes []Node
	id := uint64(0)
	add := func(n Node, deps ...uint64) uint64 {
		id++
		n.ID, n.DataDeps = id, deps
		nodes = append(nodes, n)
		return id
	}
	var prev []uint64
	for l := range d.Layers {
		prev = []uint64{add(Node{Name: fmt.Sprintf("forward %d", l), Type: CompNode, DurationMicros: d.ForwardMicros}, prev...)}
	}
	var backward []uint64
	for l := d.Layers - 1; l >= 0; l-- {
		prev = []uint64{add(Node{Name: fmt.Sprintf("backward %d", l), Type: CompNode, DurationMicros: d.BackwardMicros}, prev...)}
		backward = append(backward, prev[0])
	}
	for i, b := range backward {
		deps := []uint64{b}
		if !d.Overlap {
			deps = []uint64{backward[len(backward)-1]}
		}
		add(Node{Name: fmt.Sprintf("all-reduce %d", d.Layers-1-i), Type: CommCollNode,
			Attrs: []Attr{BoolAttr("is_cpu_op", false), IntAttr("comm_type", int64(AllReduce)), IntAttr("comm_size", d.GradientBytes)}}, deps...)
	}
	out := make([]*Trace, d.Ranks)
	for r := range out {
		out[r] = &Trace{Version: "1.0.0", Nodes: slices.Clone(nodes)}
	}
	return out, nil
}
