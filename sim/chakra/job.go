package chakra

import (
	"cmp"
	"container/heap"
	"fmt"
	"maps"
	"slices"
	"sort"
)

// Job is a training job's traces, one per rank (rank r's file is
// conventionally NAME.r.et), checked for replay: every node has what its
// type needs, every send has its receive, and each rank's graph has an
// order that honours its dependencies.
type Job struct {
	Ranks []*Trace
	// Order is each rank's nodes (indices into its Nodes) in an order
	// that runs every node after its dependencies, file order where
	// they allow.
	Order [][]int
	// Waits and Children are each rank's dependency graph, by node
	// position: how many nodes of the rank a node waits for, and which
	// nodes wait for it.
	Waits    [][]int
	Children [][][]int
	// MissingDeps counts dependencies on ids no node of the rank has.
	// Traces converted from PyTorch carry them, and ASTRA-sim runs such
	// nodes as if the dependency were met; so does a replay.
	MissingDeps int
	// Groups are the job's process groups, all ranks under AllRanks.
	Groups Groups
}

// NewJob checks ranks for replay, every collective among all ranks. An
// error names the rank, the node and the problem.
func NewJob(ranks []*Trace) (*Job, error) { return NewGroupJob(ranks, nil) }

// NewGroupJob checks ranks for replay, with the process groups the
// collectives' pg_name attributes name.
func NewGroupJob(ranks []*Trace, groups Groups) (*Job, error) {
	j := &Job{Ranks: ranks, Order: make([][]int, len(ranks)), Waits: make([][]int, len(ranks)), Children: make([][][]int, len(ranks))}
	sends, recvs := map[channel][]int64{}, map[channel][]int64{}
	where := map[channel]string{}
	for r, tr := range ranks {
		if tr == nil {
			return nil, fmt.Errorf("chakra: rank %d has no trace", r)
		}
		order, waits, children, missing, err := tr.order()
		if err != nil {
			return nil, fmt.Errorf("chakra: rank %d: %w", r, err)
		}
		j.Order[r], j.Waits[r], j.Children[r], j.MissingDeps = order, waits, children, j.MissingDeps+missing
		for i := range tr.Nodes {
			n := &tr.Nodes[i]
			need := func(name string) (int64, error) {
				a, ok := n.Attr(name)
				v, isInt := a.Int()
				switch {
				case !ok:
					return 0, fmt.Errorf("chakra: rank %d: node %d (%q), a %v, has no %s", r, n.ID, n.Name, n.Type, name)
				case !isInt:
					return 0, fmt.Errorf("chakra: rank %d: node %d (%q): %s is not an integer", r, n.ID, n.Name, name)
				}
				return v, nil
			}
			peer := func(name string) (int, error) {
				v, err := need(name)
				if err == nil && (v < 0 || v >= int64(len(ranks))) {
					err = fmt.Errorf("chakra: rank %d: node %d (%q): %s %d is not a rank of this job (0..%d)", r, n.ID, n.Name, name, v, len(ranks)-1)
				}
				return int(v), err
			}
			switch n.Type {
			case CommCollNode:
				for _, name := range []string{"comm_type", "comm_size"} {
					if _, err := need(name); err != nil {
						return nil, err
					}
				}
			case CommSendNode, CommRecvNode:
				side := "comm_dst"
				if n.Type == CommRecvNode {
					side = "comm_src"
				}
				p, err := peer(side)
				if err != nil {
					return nil, err
				}
				size, err := need("comm_size")
				if err != nil {
					return nil, err
				}
				tag, err := need("comm_tag")
				if err != nil {
					return nil, err
				}
				ch, m := channel{src: r, dst: p, tag: tag}, sends
				if n.Type == CommRecvNode {
					ch, m = channel{src: p, dst: r, tag: tag}, recvs
				}
				m[ch] = append(m[ch], size)
				if _, ok := where[ch]; !ok {
					where[ch] = fmt.Sprintf("rank %d: node %d (%q)", r, n.ID, n.Name)
				}
			}
		}
	}
	for _, ch := range sortedChannels(sends, recvs) {
		s, v := sends[ch], recvs[ch]
		if !slices.Equal(s, v) {
			return nil, fmt.Errorf("chakra: %s: rank %d sends %v bytes to rank %d with tag %d, and rank %d receives %v",
				where[ch], ch.src, s, ch.dst, ch.tag, ch.dst, v)
		}
	}
	if err := j.checkGroups(groups); err != nil {
		return nil, err
	}
	return j, nil
}

// channel is where point-to-point messages go: from a rank to a rank
// under a tag.
type channel struct {
	src, dst int
	tag      int64
}

// sortedChannels returns the channels of both maps in a fixed order, so
// the first mismatch reported is the same every run.
func sortedChannels(sends, recvs map[channel][]int64) []channel {
	all := slices.Collect(maps.Keys(sends))
	for c := range recvs {
		if _, ok := sends[c]; !ok {
			all = append(all, c)
		}
	}
	slices.SortFunc(all, func(a, b channel) int {
		return cmp.Or(cmp.Compare(a.src, b.src), cmp.Compare(a.dst, b.dst), cmp.Compare(a.tag, b.tag))
	})
	return all
}

// order returns the nodes in an order that honours every dependency
// (Kahn's algorithm, the lowest file position first among the ready),
// the graph (how many nodes each waits for, which wait for it), and how
// many dependencies name no node. A duplicate id or a cycle is an error
// naming a node.
func (t *Trace) order() (order, waits []int, children [][]int, missing int, err error) {
	index := make(map[uint64]int, len(t.Nodes))
	for i := range t.Nodes {
		n := &t.Nodes[i]
		if j, dup := index[n.ID]; dup {
			return nil, nil, nil, 0, fmt.Errorf("node id %d is used twice (%q and %q)", n.ID, t.Nodes[j].Name, n.Name)
		}
		index[n.ID] = i
	}
	waits = make([]int, len(t.Nodes))
	children = make([][]int, len(t.Nodes))
	for i := range t.Nodes {
		n := &t.Nodes[i]
		seen := map[int]bool{}
		for _, d := range slices.Concat(n.DataDeps, n.CtrlDeps) {
			p, ok := index[d]
			switch {
			case !ok:
				missing++
			case p == i:
				return nil, nil, nil, 0, fmt.Errorf("node %d (%q) depends on itself", n.ID, n.Name)
			case !seen[p]:
				seen[p] = true
				waits[i]++
				children[p] = append(children[p], i)
			}
		}
	}
	waiting := slices.Clone(waits)
	ready := &readyHeap{}
	for i, w := range waiting {
		if w == 0 {
			ready.IntSlice = append(ready.IntSlice, i) // in order: already a heap
		}
	}
	order = make([]int, 0, len(t.Nodes))
	for ready.Len() > 0 {
		i := heap.Pop(ready).(int)
		order = append(order, i)
		for _, c := range children[i] {
			if waiting[c]--; waiting[c] == 0 {
				heap.Push(ready, c)
			}
		}
	}
	if len(order) < len(t.Nodes) {
		for i, w := range waiting {
			if w > 0 {
				n := &t.Nodes[i]
				return nil, nil, nil, 0, fmt.Errorf("node %d (%q) is on a dependency cycle, or waits for one (%d of the rank's %d nodes can never run)",
					n.ID, n.Name, len(t.Nodes)-len(order), len(t.Nodes))
			}
		}
	}
	return order, waits, children, missing, nil
}

// readyHeap is a min-heap of node positions (container/heap).
type readyHeap struct{ sort.IntSlice }

func (h *readyHeap) Push(x any) { h.IntSlice = append(h.IntSlice, x.(int)) }

func (h *readyHeap) Pop() any {
	last := h.IntSlice[len(h.IntSlice)-1]
	h.IntSlice = h.IntSlice[:len(h.IntSlice)-1]
	return last
}
