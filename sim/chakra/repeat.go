package chakra

import (
	"fmt"
	"math"
	"slices"
)

// Repeat returns each rank's trace run n times in a row, as a training
// job runs one iteration after another: copy k+1's nodes follow copy k's
// in the file, with their ids moved past every id copy k names, and each
// node of copy k+1 that waits for nothing waits (as a control
// dependency) for every node of copy k that nothing waits for. Nodes of
// copy k are at positions k*len(t.Nodes) onwards.
func Repeat(ranks []*Trace, n int) ([]*Trace, error) {
	if n < 1 {
		return nil, fmt.Errorf("chakra: %d repetitions, want at least 1", n)
	}
	out := make([]*Trace, len(ranks))
	for r, t := range ranks {
		if t == nil {
			return nil, fmt.Errorf("chakra: rank %d has no trace", r)
		}
		rep, err := t.repeat(n)
		if err != nil {
			return nil, fmt.Errorf("chakra: rank %d: %w", r, err)
		}
		out[r] = rep
	}
	return out, nil
}

func (t *Trace) repeat(n int) (*Trace, error) {
	if n == 1 {
		return t, nil
	}
	// span is past every id a node has or names, so a copy's ids, and
	// its dependencies on ids no node has, stay apart from every other
	// copy's.
	var span uint64
	present := make(map[uint64]bool, len(t.Nodes))
	waitedFor := map[uint64]bool{}
	for i := range t.Nodes {
		nd := &t.Nodes[i]
		present[nd.ID] = true
		span = max(span, nd.ID)
		for _, d := range slices.Concat(nd.DataDeps, nd.CtrlDeps) {
			span = max(span, d)
			waitedFor[d] = true
		}
	}
	if span >= math.MaxUint64/uint64(n) {
		return nil, fmt.Errorf("ids up to %d leave no room for %d copies", span, n)
	}
	span++
	var roots, sinks []int
	for i := range t.Nodes {
		nd := &t.Nodes[i]
		if !waitedFor[nd.ID] {
			sinks = append(sinks, i)
		}
		if !slices.ContainsFunc(slices.Concat(nd.DataDeps, nd.CtrlDeps), func(d uint64) bool { return present[d] }) {
			roots = append(roots, i)
		}
	}
	shift := func(ids []uint64, by uint64) []uint64 {
		if ids == nil {
			return nil
		}
		out := make([]uint64, len(ids))
		for i, d := range ids {
			out[i] = d + by
		}
		return out
	}
	rep := &Trace{Version: t.Version, Meta: t.Meta, Nodes: make([]Node, 0, n*len(t.Nodes))}
	for k := range n {
		by := uint64(k) * span
		first := len(rep.Nodes)
		for i := range t.Nodes {
			nd := t.Nodes[i]
			nd.ID += by
			nd.DataDeps, nd.CtrlDeps = shift(nd.DataDeps, by), shift(nd.CtrlDeps, by)
			rep.Nodes = append(rep.Nodes, nd)
		}
		if k == 0 {
			continue
		}
		for _, i := range roots {
			nd := &rep.Nodes[first+i]
			for _, s := range sinks {
				nd.CtrlDeps = append(nd.CtrlDeps, t.Nodes[s].ID+by-span)
			}
		}
	}
	return rep, nil
}
