package sim

import (
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/sim/chakra"
)

// NCCL's tree all-reduce runs on a double binary tree: two trees over
// the group's members, each carrying half the buffer, built so that a
// member that forwards in one is a leaf in the other, and no member
// sends much more than the ring would. In each tree the buffer goes up
// in chunks, a member sending chunk c to its parent once its children's
// chunk c is in (reduced with its own), and the root sends each chunk
// down as it completes, every member forwarding it to its children.
// Chunks pipeline, so a large buffer costs about its time on a link
// twice, and a small one 2 log2(n) hops, where the ring takes 2(n-1)
// steps. Every tree edge goes through the network.

// treeChunk is the size of a tree all-reduce's pipelined chunks (each
// tree's half is cut in at most maxTreeChunks).
const (
	treeChunk     = 512 << 10
	maxTreeChunks = 64
)

// btree is NCCL's binary tree over n members, for member r: its parent
// (-1 at the root, member 0) and its children (-1 where none). Odd
// members are leaves; an even member's children lie half its lowest
// set bit below and above it, so the tree is balanced for any n.
func btree(n, r int) (up int, kids [2]int) {
	bit := 1
	for bit < n && bit&r == 0 {
		bit <<= 1
	}
	if r == 0 {
		kids = [2]int{-1, -1}
		if n > 1 {
			kids[1] = bit >> 1
		}
		return -1, kids
	}
	up = r ^ bit | bit<<1
	if up >= n {
		up = r ^ bit
	}
	low := bit >> 1
	if low == 0 {
		return up, [2]int{-1, -1}
	}
	kids = [2]int{r - low, r + low}
	for kids[1] >= n {
		if low >>= 1; low == 0 {
			kids[1] = -1
		} else {
			kids[1] = r + low
		}
	}
	return up, kids
}

// dtree is tree t (0 or 1) of NCCL's double binary tree for member r:
// the first is btree; the second mirrors it (n even) or shifts it by one
// member (n odd), so that the members forwarding in one are leaves in
// the other.
func dtree(n, r, t int) (up int, kids [2]int) {
	if t == 0 {
		return btree(n, r)
	}
	to, from := func(x int) int { return n - 1 - x }, func(x int) int { return n - 1 - x }
	if n%2 == 1 {
		to, from = func(x int) int { return (x + n - 1) % n }, func(x int) int { return (x + 1) % n }
	}
	up, kids = btree(n, to(r))
	if up >= 0 {
		up = from(up)
	}
	for i, k := range kids {
		if k >= 0 {
			kids[i] = from(k)
		}
	}
	return up, kids
}

// treeLinks are a member's connections in one tree of its group's
// double tree.
type treeLinks struct {
	up, down *core.Conn   // to and from the parent; nil at the root
	toKids   []*core.Conn // to each child
	fromKids []*core.Conn // from each child
}

// treeRun is a tree all-reduce's half on one tree: its chunks (count
// and size), the handles of its receives from the parent (base) and
// from each child (bases), which chunks came up from each child and down
// from the parent, and how many went up (or, at the root, were reduced)
// and down.
type treeRun struct {
	steps, seg       int
	base             uint32
	bases            []uint32
	upGot            [][]bool
	downGot          []bool
	upSent, downSent int
}

// openTree connects the group's members, in ring order, as a double
// binary tree.
func (rp *replay) openTree(ms []*member) error {
	cfg := rp.holding(maxTreeChunks)
	for _, m := range ms {
		m.trees = &[2]treeLinks{}
	}
	for t := range 2 {
		for p, m := range ms {
			_, kids := dtree(len(ms), p, t)
			for _, c := range kids {
				if c < 0 {
					continue
				}
				kid := ms[c]
				up, upRx, err := rp.connect(kid.rk.id, m.rk.id, cfg, m.lane)
				if err != nil {
					return err
				}
				down, downRx, err := rp.connect(m.rk.id, kid.rk.id, cfg, m.lane)
				if err != nil {
					return err
				}
				kt, mt := &kid.trees[t], &m.trees[t]
				kt.up, kt.down = up, downRx
				mt.toKids, mt.fromKids = append(mt.toKids, down), append(mt.fromKids, upRx)
				m.rk.rx[upRx], kid.rk.rx[downRx] = m, kid
			}
		}
	}
	return nil
}

// treeChunks is how many chunks a tree's half of size bytes takes.
func treeChunks(size int) int { return min(max((size+treeChunk-1)/treeChunk, 1), maxTreeChunks) }

// postTree posts a tree all-reduce's receives of size bytes: on each
// tree, its half's chunks from each child and from the parent.
func (m *member) postTree(pc *postedColl, size int) error {
	post := func(c *core.Conn, tr *treeRun) (uint32, error) {
		var base uint32
		for s := range tr.steps {
			h, err := c.PostRecvVirtual(tr.seg)
			if err != nil {
				return 0, err
			}
			if s == 0 {
				base = uint32(h)
			}
		}
		return base, nil
	}
	half := (size + 1) / 2
	for t := range pc.trees {
		if t == 1 {
			half = size - half
		}
		links, tr := &m.trees[t], &pc.trees[t]
		tr.steps = treeChunks(half)
		tr.seg = max((half+tr.steps-1)/tr.steps, 1)
		tr.bases = make([]uint32, len(links.fromKids))
		for k, c := range links.fromKids {
			b, err := post(c, tr)
			if err != nil {
				return err
			}
			tr.bases[k] = b
		}
		if links.down != nil {
			b, err := post(links.down, tr)
			if err != nil {
				return err
			}
			tr.base = b
		}
	}
	return nil
}

// advanceTree takes the chunks that came in on both trees, sends on
// those they complete, and reports whether the member's part is done.
func (m *member) advanceTree() bool {
	done := true
	for t := range m.cur.trees {
		done = m.advanceOneTree(&m.trees[t], &m.cur.trees[t]) && done
	}
	return done
}

// advanceOneTree is advanceTree on one tree: the member's part there is
// done at the root once every chunk is reduced and sent down, elsewhere
// once every chunk has come down and been passed on.
func (m *member) advanceOneTree(links *treeLinks, tr *treeRun) bool {
	n := tr.steps
	if tr.upGot == nil {
		tr.upGot = make([][]bool, len(links.fromKids))
		for k := range tr.upGot {
			tr.upGot[k] = make([]bool, n)
		}
		tr.downGot = make([]bool, n)
	}
	take := func(a collArrival) bool {
		if m.arrived[a] {
			delete(m.arrived, a)
			return true
		}
		return false
	}
	for k, c := range links.fromKids {
		for s := range n {
			if !tr.upGot[k][s] && take(collArrival{c: c, h: tr.bases[k] + uint32(s)}) {
				tr.upGot[k][s] = true
			}
		}
	}
	if links.down != nil {
		for s := range n {
			if !tr.downGot[s] && take(collArrival{c: links.down, h: tr.base + uint32(s)}) {
				tr.downGot[s] = true
			}
		}
	}
	kidsHave := func(s int) bool {
		for k := range tr.upGot {
			if !tr.upGot[k][s] {
				return false
			}
		}
		return true
	}
	for tr.upSent < n && kidsHave(tr.upSent) {
		if links.up != nil {
			m.send(links.up, tr.seg)
		} else { // the root: the chunk is reduced; it goes down at once
			tr.downGot[tr.upSent] = true
		}
		tr.upSent++
	}
	for tr.downSent < n && tr.downGot[tr.downSent] {
		for _, c := range links.toKids {
			m.send(c, tr.seg)
		}
		tr.downSent++
	}
	return tr.downSent == n && tr.upSent == n
}

// usesTree reports whether the member runs a collective of type typ by
// the tree.
func (m *member) usesTree(typ chakra.CollectiveType) bool {
	return m.trees != nil && typ == chakra.AllReduce
}
