package sim

import (
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/sim/chakra"
)

// NCCL's tree all-reduce: the members form a binary tree by position
// (member p's children are 2p+1 and 2p+2), the buffer goes in chunks
// up the tree, each member sending chunk c to its parent once its
// children's chunk c is in (reduced with its own), and the root sends
// each chunk down as it completes, every member forwarding it to its
// children. Chunks pipeline, so a large buffer costs about twice its
// time on a link and a small one 2 log2(n) hops, where the ring takes
// 2(n-1) steps. Every tree edge goes through the network.

// treeChunk is the size of a tree all-reduce's pipelined chunks (the
// buffer is cut in at most maxTreeChunks).
const (
	treeChunk     = 512 << 10
	maxTreeChunks = 64
)

// treeLinks are a member's connections in its group's tree.
type treeLinks struct {
	up, down *core.Conn   // to and from the parent; nil at the root
	toKids   []*core.Conn // to each child
	fromKids []*core.Conn // from each child
}

// treeState is a tree all-reduce under way: which chunks came up from
// each child and down from the parent, and how many went up (or, at the
// root, were reduced) and down.
type treeState struct {
	upGot            [][]bool
	downGot          []bool
	upSent, downSent int
}

// openTree connects the group's members as a binary tree.
func (rp *replay) openTree(ms []*member) error {
	cfg := rp.holding(maxTreeChunks)
	for _, m := range ms {
		m.tree = &treeLinks{}
	}
	for p, m := range ms {
		for _, c := range []int{2*p + 1, 2*p + 2} {
			if c >= len(ms) {
				continue
			}
			kid := ms[c]
			up, upRx, err := rp.connect(kid.rk.id, m.rk.id, cfg)
			if err != nil {
				return err
			}
			down, downRx, err := rp.connect(m.rk.id, kid.rk.id, cfg)
			if err != nil {
				return err
			}
			kid.tree.up, kid.tree.down = up, downRx
			m.tree.toKids, m.tree.fromKids = append(m.tree.toKids, down), append(m.tree.fromKids, upRx)
			m.rk.rx[upRx], kid.rk.rx[downRx] = m, kid
		}
	}
	return nil
}

// treeChunks is how many chunks a tree all-reduce of size bytes takes.
func treeChunks(size int) int { return min(max((size+treeChunk-1)/treeChunk, 1), maxTreeChunks) }

// postTree posts a tree all-reduce's receives: its chunks from each
// child and from the parent.
func (m *member) postTree(pc *postedColl, size int) error {
	pc.steps = treeChunks(size)
	pc.seg = max((size+pc.steps-1)/pc.steps, 1)
	post := func(c *core.Conn) (uint32, error) {
		var base uint32
		for s := range pc.steps {
			h, err := c.PostRecvVirtual(pc.seg)
			if err != nil {
				return 0, err
			}
			if s == 0 {
				base = uint32(h)
			}
		}
		return base, nil
	}
	pc.bases = make([]uint32, len(m.tree.fromKids))
	for k, c := range m.tree.fromKids {
		b, err := post(c)
		if err != nil {
			return err
		}
		pc.bases[k] = b
	}
	if m.tree.down != nil {
		b, err := post(m.tree.down)
		if err != nil {
			return err
		}
		pc.base = b
	}
	return nil
}

// advanceTree takes the chunks that came in, sends on those they
// complete, and reports whether the member's part is done: at the root
// every chunk reduced and sent down, elsewhere every chunk come down and
// passed on.
func (m *member) advanceTree() bool {
	st, t, n := &m.treeRun, m.tree, m.cur.steps
	if st.upGot == nil {
		st.upGot = make([][]bool, len(t.fromKids))
		for k := range st.upGot {
			st.upGot[k] = make([]bool, n)
		}
		st.downGot = make([]bool, n)
	}
	take := func(a collArrival) bool {
		if m.arrived[a] {
			delete(m.arrived, a)
			return true
		}
		return false
	}
	for k, c := range t.fromKids {
		for s := range n {
			if !st.upGot[k][s] && take(collArrival{c: c, h: m.cur.bases[k] + uint32(s)}) {
				st.upGot[k][s] = true
			}
		}
	}
	if t.down != nil {
		for s := range n {
			if !st.downGot[s] && take(collArrival{c: t.down, h: m.cur.base + uint32(s)}) {
				st.downGot[s] = true
			}
		}
	}
	kidsHave := func(s int) bool {
		for k := range st.upGot {
			if !st.upGot[k][s] {
				return false
			}
		}
		return true
	}
	for st.upSent < n && kidsHave(st.upSent) {
		if t.up != nil {
			m.send(t.up)
		} else { // the root: the chunk is reduced; it goes down at once
			st.downGot[st.upSent] = true
		}
		st.upSent++
	}
	for st.downSent < n && st.downGot[st.downSent] {
		for _, c := range t.toKids {
			m.send(c)
		}
		st.downSent++
	}
	return st.downSent == n && st.upSent == n
}

// usesTree reports whether the member runs a collective of type typ by
// the tree.
func (m *member) usesTree(typ chakra.CollectiveType) bool {
	return m.tree != nil && typ == chakra.AllReduce
}
