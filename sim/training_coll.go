package sim

import (
	"fmt"
	"maps"
	"slices"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/chakra"
)

// member is one rank's part in a process group on one channel: its
// collectives there, one at a time, over the channel's connections.
// All-reduce, reduce-scatter and all-gather run as NCCL's ring: a step's
// segment goes to the next member once the previous step's has come in
// from the one before. All-to-all sends every other member its share at
// once. As NCCL does, a group across servers may run its rings and
// trees on several channels, each with a part of every buffer on
// connections of its own (so on paths of its own where the fabric
// hashes flows); all-to-all runs on the first.
type member struct {
	rk    *rank
	group string
	local bool  // the group is inside one server
	pos   int   // place in the group's ring
	ranks []int // the group, in ring order
	seq   []int // the rank's collectives in the group, node indices, in Order
	ready map[int]bool
	// lane is the member's channel of lanes; channels, on the first,
	// is every channel's member (nil where there is one).
	lane, lanes int
	channels    []*member
	// startK and postK count the collectives of seq started and whose
	// receives are posted; posted holds those posted, not started.
	startK, postK int
	posted        []postedColl
	next, prev    *core.Conn // the ring: to the next member, from the one before
	// A ring hop inside a server goes over its links: nextLocal is the
	// next member when it is in this one's server (next is nil), and
	// prevLocal says the one before is (prev is nil). Such a hop's
	// messages are numbered in order, as a connection's handles are:
	// localSent counts those sent, localPosted those expected.
	nextLocal              *member
	prevLocal              bool
	localSent, localPosted uint32
	to, from               []*core.Conn // all-to-all: to and from each member, by position (nil for itself and its server)
	peers                  []*member    // all-to-all: every member, by position
	a2aK, a2aN             uint32       // the all-to-all under way: which of the member's; how many it has started
	// trees is the member's place in its group's double tree (NCCL's
	// tree all-reduce), nil where all-reduce runs as a ring.
	trees *[2]treeLinks
	// The collective under way: its node (-1: none), its receives, which
	// have come in, and the ring steps sent.
	coll       int
	cur        postedColl
	got        []bool
	gotN, sent int
	arrived    map[collArrival]bool // receives done, not yet taken by a collective
}

// postedColl is a collective's receives, posted ahead: for the ring
// steps messages of seg bytes from the member before, the first at
// handle base; for all-to-all one from each member, at bases[position];
// for the tree each tree's (and, once it runs, its progress).
type postedColl struct {
	typ        chakra.CollectiveType
	steps, seg int
	base       uint32
	bases      []uint32
	trees      [2]treeRun
}

// collArrival is a receive a member took: on connection c (nil: over
// the server's links) with handle h. A share of an all-to-all inside a
// server is numbered apart (share), so it never reads as a ring step.
type collArrival struct {
	c     *core.Conn
	h     uint32
	share bool
}

// ringSteps is how many ring steps a collective takes among n ranks,
// each moving a segment of a rank's share of its size; 0 when the ring
// does not run it.
func ringSteps(c chakra.CollectiveType, n int) int {
	switch c {
	case chakra.AllReduce:
		return 2 * (n - 1)
	case chakra.ReduceScatter, chakra.AllGather:
		return n - 1
	}
	return 0
}

// joinGroups makes each rank a member of the groups it runs collectives
// in, and opens each group's ring. Groups come in name order, all ranks
// first, so connection ids do not depend on map order.
func (rp *replay) joinGroups() error {
	byGroup := map[string][]*member{}
	for _, rk := range rp.ranks {
		for _, i := range rp.job.Order[rk.id] {
			nd := &rk.trace.Nodes[i]
			if nd.Type != chakra.CommCollNode {
				continue
			}
			g := rp.job.GroupOf(nd)
			typ := chakra.CollectiveType(attrInt(nd, "comm_type"))
			if ringSteps(typ, 2) == 0 && typ != chakra.AllToAll {
				return fmt.Errorf("training: rank %d node %d (%q): %v is not replayed yet (all-reduce, reduce-scatter, all-gather and all-to-all are)", rk.id, nd.ID, nd.Name, typ)
			}
			m := rk.groups[g]
			if m == nil {
				m = rp.newMember(rk, g, 0, 1)
				rk.groups[g] = m
				byGroup[g] = append(byGroup[g], m)
			}
			m.seq = append(m.seq, i)
		}
	}
	for _, g := range slices.Sorted(maps.Keys(byGroup)) {
		ms := byGroup[g]
		rp.members = append(rp.members, ms...)
		n := len(ms)
		local := true
		for _, m := range ms {
			local = local && rp.servers.same(rp.hosts[m.rk.id], rp.hosts[ms[0].rk.id])
		}
		if n == 1 || local {
			for _, m := range ms {
				m.local = n > 1
			}
			continue
		}
		slices.SortFunc(ms, func(a, b *member) int { return a.pos - b.pos })
		rp.addChannels(ms)
		for l := range ms[0].lanes {
			lane := make([]*member, n)
			for i, m := range ms {
				lane[i] = m.channel(l)
			}
			if l > 0 {
				rp.members = append(rp.members, lane...)
			}
			if err := rp.openRing(lane); err != nil {
				return err
			}
		}
	}
	return nil
}

func (rp *replay) newMember(rk *rank, g string, lane, lanes int) *member {
	ranks := rp.job.Groups[g]
	return &member{rk: rk, group: g, pos: slices.Index(ranks, rk.id), ranks: ranks, ready: map[int]bool{}, coll: -1,
		arrived: map[collArrival]bool{}, lane: lane, lanes: lanes}
}

// addChannels gives each member of a group across servers its other
// channels, where the replay runs several and the group has collectives
// other than all-to-all.
func (rp *replay) addChannels(ms []*member) {
	if rp.channels <= 1 {
		return
	}
	for _, m := range ms {
		seq := slices.DeleteFunc(slices.Clone(m.seq), func(i int) bool {
			return chakra.CollectiveType(attrInt(&m.rk.trace.Nodes[i], "comm_type")) == chakra.AllToAll
		})
		if len(seq) == 0 {
			return // the same on every member: the group runs only all-to-alls
		}
		m.lanes, m.channels = rp.channels, []*member{m}
		for l := 1; l < rp.channels; l++ {
			c := rp.newMember(m.rk, m.group, l, rp.channels)
			c.seq = seq
			m.channels = append(m.channels, c)
		}
	}
}

// channel is the member's channel l.
func (m *member) channel(l int) *member {
	if m.channels == nil {
		return m
	}
	return m.channels[l]
}

// openRing connects one channel of a group's members, in ring order,
// as its tree (where all-reduce runs so) and its ring.
func (rp *replay) openRing(ms []*member) error {
	n := len(ms)
	if rp.tree {
		if err := rp.openTree(ms); err != nil {
			return err
		}
	}
	cfg := rp.holding(ringSteps(chakra.AllReduce, n))
	for i, m := range ms {
		nx := ms[(i+1)%n]
		if rp.servers.same(rp.hosts[m.rk.id], rp.hosts[nx.rk.id]) {
			m.nextLocal, nx.prevLocal = nx, true // this hop stays in the server
			continue
		}
		a, b, err := rp.connect(m.rk.id, nx.rk.id, cfg, m.lane)
		if err != nil {
			return err
		}
		m.next, nx.prev = a, b
		nx.rk.rx[b] = nx
	}
	return nil
}

// runners are the member's channels that run a collective of type typ.
func (m *member) runners(typ chakra.CollectiveType) []*member {
	if m.channels == nil || typ == chakra.AllToAll {
		return []*member{m}
	}
	return m.channels
}

// part is the member's channel's part of a collective of size bytes:
// all of an all-to-all, else an equal share, the first channels taking
// a byte more where it does not divide.
func (m *member) part(typ chakra.CollectiveType, size int) int {
	if typ == chakra.AllToAll {
		return size
	}
	p := size / m.lanes
	if m.lane < size%m.lanes {
		p++
	}
	return p
}

// holding is the connection configuration for collectives of up to
// msgs receives each: slots for two of them at once, the one under way
// and the next, posted ahead.
func (rp *replay) holding(msgs int) core.Config {
	cfg := rp.cfg
	if cfg.MaxMsgs == 0 {
		cfg.MaxMsgs = core.DefaultMaxMsgs
	}
	for cfg.MaxMsgs < 2*msgs {
		cfg.MaxMsgs *= 2
	}
	return cfg
}

// openAllToAll opens the connections between every two members of m's
// group, on the first all-to-all of any of them.
func (m *member) openAllToAll() error {
	if m.to != nil {
		return nil
	}
	rp := m.rk.rp
	ms := make([]*member, len(m.ranks))
	for i, r := range m.ranks {
		ms[i] = rp.ranks[r].groups[m.group]
		ms[i].to, ms[i].from = make([]*core.Conn, len(m.ranks)), make([]*core.Conn, len(m.ranks))
	}
	for i, a := range ms {
		a.peers = ms
		for j, b := range ms {
			if i == j || rp.servers.same(rp.hosts[a.rk.id], rp.hosts[b.rk.id]) {
				continue // a pair inside a server sends over its links
			}
			ca, cb, err := rp.connect(a.rk.id, b.rk.id, rp.cfg, 0)
			if err != nil {
				return err
			}
			a.to[j], b.from[i] = ca, cb
			b.rk.rx[cb] = b
		}
	}
	return nil
}

// post posts the receives of the next collective not yet posted: the
// first before the iteration starts, each next one when the one before
// starts, as NCCL's buffers are in place before a collective begins, so
// no step waits for the receiver's clear-to-send.
func (m *member) post() {
	n := len(m.ranks)
	if n == 1 || m.local || m.postK >= len(m.seq) {
		return
	}
	rp := m.rk.rp
	nd := &m.rk.trace.Nodes[m.seq[m.postK]]
	m.postK++
	typ := chakra.CollectiveType(attrInt(nd, "comm_type"))
	size := m.part(typ, int(attrInt(nd, "comm_size")))
	pc := postedColl{typ: typ, seg: max((size+n-1)/n, 1)}
	fail := func(err error) {
		rp.fail(m.rk.id, fmt.Errorf("training: rank %d: node %d (%q): a collective's receive: %w", m.rk.id, nd.ID, nd.Name, err))
	}
	if pc.typ == chakra.AllToAll {
		if err := m.openAllToAll(); err != nil {
			fail(err)
			return
		}
		pc.steps, pc.bases = n-1, make([]uint32, n)
		for j, c := range m.from {
			if c == nil {
				continue // itself, or a peer in its server
			}
			h, err := c.PostRecvVirtual(pc.seg)
			if err != nil {
				fail(err)
				return
			}
			pc.bases[j] = uint32(h)
		}
	} else if m.usesTree(pc.typ) {
		if err := m.postTree(&pc, size); err != nil {
			fail(err)
			return
		}
	} else if m.prevLocal {
		pc.steps = ringSteps(pc.typ, n)
		pc.base = m.localPosted
		m.localPosted += uint32(pc.steps)
	} else {
		pc.steps = ringSteps(pc.typ, n)
		for s := range pc.steps {
			h, err := m.prev.PostRecvVirtual(pc.seg)
			if err != nil {
				fail(err)
				return
			}
			if s == 0 {
				pc.base = uint32(h)
			}
		}
	}
	m.posted = append(m.posted, pc)
	m.rk.host.Wake()
}

// start begins the member's next collective if it is ready and none is
// under way.
func (m *member) start() {
	if m.coll >= 0 || m.startK >= len(m.seq) || !m.ready[m.seq[m.startK]] {
		return
	}
	i := m.seq[m.startK]
	m.startK++
	rk := m.rk
	if m.lane == 0 {
		rk.began[i] = rk.eng().Now()
	}
	if len(m.ranks) == 1 {
		m.coll = i
		m.complete(rk.eng().Now())
		return
	}
	if m.local {
		m.coll = i
		m.startLocal()
		return
	}
	if len(m.posted) == 0 {
		return // post failed: the run is stopping
	}
	m.cur, m.posted = m.posted[0], m.posted[1:]
	m.coll, m.got, m.gotN, m.sent = i, make([]bool, m.cur.steps), 0, 0
	m.post()
	switch {
	case m.usesTree(m.cur.typ): // advance sends what the children have given
	case m.cur.typ == chakra.AllToAll:
		m.a2aK, m.a2aN = m.a2aN, m.a2aN+1
		rp := m.rk.rp
		for j, c := range m.to {
			switch {
			case c != nil:
				m.send(c, m.cur.seg)
			case j != m.pos:
				m.sent++
				peer, key := m.peers[j], localShare(m.a2aK, m.pos)
				m.rk.eng().After(rp.servers.transfer(m.cur.seg, 1), startFunc(func() { peer.arrived[key] = true; peer.advance() }), 0)
			}
		}
	default:
		m.sendStep()
	}
	m.advance()
}

// localShare is the share member from sends in its k-th all-to-all to
// a member of its server.
func localShare(k uint32, from int) collArrival {
	return collArrival{h: k<<16 | uint32(from), share: true}
}

// sendStep sends the ring's next step to the next member: over the
// server's links when it shares this one's server.
func (m *member) sendStep() {
	nx := m.nextLocal
	if nx == nil {
		m.send(m.next, m.cur.seg)
		return
	}
	m.sent++
	h := m.localSent
	m.localSent++
	rp := m.rk.rp
	m.rk.eng().After(rp.servers.transfer(m.cur.seg, 1), startFunc(func() { nx.arrive(nil, h) }), 0)
}

// send sends size bytes of the collective under way on c.
func (m *member) send(c *core.Conn, size int) {
	m.sent++
	if _, err := c.SendVirtual(size, nil); err != nil {
		m.rk.rp.fail(m.rk.id, fmt.Errorf("training: rank %d: a collective's send: %w", m.rk.id, err))
	}
	m.rk.host.Wake()
}

// arrive takes a collective's receive, done on connection c; a member a
// collective ahead may send before this one starts it.
func (m *member) arrive(c *core.Conn, h uint32) {
	m.arrived[collArrival{c: c, h: h}] = true
	m.advance()
}

// advance takes the receives of the collective under way that have come
// in, forwards the ring steps they free, and finishes the collective
// once every receive is in.
func (m *member) advance() {
	if m.coll < 0 {
		return
	}
	take := func(s int, a collArrival) {
		if m.arrived[a] {
			delete(m.arrived, a)
			m.got[s] = true
			m.gotN++
		}
	}
	done := false
	switch {
	case m.usesTree(m.cur.typ):
		done = m.advanceTree()
	case m.cur.typ == chakra.AllToAll:
		s := 0
		for j, c := range m.from {
			switch {
			case c != nil:
				take(s, collArrival{c: c, h: m.cur.bases[j]})
			case j != m.pos:
				take(s, localShare(m.a2aK, j))
			default:
				continue
			}
			s++
		}
		done = m.gotN == m.cur.steps
	default:
		// The arrivals waiting are few (this collective's newest, the
		// next one's early steps): look at them, not at every step.
		for a := range m.arrived {
			if s := a.h - m.cur.base; a.c == m.prev && !a.share && s < uint32(m.cur.steps) {
				take(int(s), a)
			}
		}
		for m.sent < m.cur.steps && m.got[m.sent-1] {
			m.sendStep()
		}
		done = m.gotN == m.cur.steps
	}
	if done {
		m.complete(m.rk.eng().Now())
	}
}

// complete ends the collective under way on the member's channel, and
// the node once every channel running it has, and starts the channel's
// next.
func (m *member) complete(now monotime.Time) {
	i := m.coll
	m.coll = -1
	rk := m.rk
	if rk.collLeft[i]--; rk.collLeft[i] == 0 {
		delete(rk.collLeft, i)
		rk.commEnded(now)
		rk.finish(i)
	}
	m.start()
}

// startLocal counts m in its group's collective inside a server; with
// the last member there, all of them finish when the server's links
// have moved it: the ring's steps one after another, an all-to-all's
// shares at once through the GPU's links.
func (m *member) startLocal() {
	rp, part := m.rk.rp, m.rk.part()
	key := localKey{m.group, m.startK - 1}
	part.local[key] = append(part.local[key], m)
	ms := part.local[key]
	if len(ms) < len(m.ranks) {
		return
	}
	delete(part.local, key)
	nd := &m.rk.trace.Nodes[m.coll]
	n := len(m.ranks)
	typ := chakra.CollectiveType(attrInt(nd, "comm_type"))
	seg := max((int(attrInt(nd, "comm_size"))+n-1)/n, 1)
	d := rp.servers.transfer(seg, ringSteps(typ, n))
	if typ == chakra.AllToAll {
		d = rp.servers.transfer(seg*(n-1), 1)
	}
	eng := m.rk.eng()
	eng.After(d, startFunc(func() {
		for _, x := range ms {
			x.complete(eng.Now())
		}
	}), 0)
}
