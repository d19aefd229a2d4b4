package sim

import (
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/chakra"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/hostmodel"
)

// replay is RunTraining's state: the ranks, the process groups' members,
// and the connections.
type replay struct {
	eng     *engine.Engine
	g       *engine.Group // the topology's parts; nil on one engine
	job     *chakra.Job
	cfg     core.Config
	ranks   []*rank
	members []*member // every rank's membership of every group it runs collectives in
	nextID  uint64    // the next connection id
	conns   [][2]*core.Conn
	p2p     map[p2pChannel][2]*core.Conn
	perIter []int // nodes per iteration, by rank
	start   monotime.Time
	failure runFailure
	// ranksDone counts the ranks that finished every node.
	ranksDone atomic.Int64
	tree      bool // all-reduce by NCCL's tree, not its ring
	channels  int  // NCCL's channels for a group across servers
	// Inside a server: the links and each rank's host.
	servers ServerLinks
	hosts   []int
	// parts holds what the ranks of each part of the topology keep
	// (one part on one engine): a server's ranks share a part.
	parts []replayPart
	// sealed: in parts, every connection is open and none may open as
	// the run goes (inParts).
	sealed bool
}

// inParts readies the replay for a topology in parts, where a rank may
// touch no other part's hosts: a server's ranks must share a part, and
// the connections a replay opens as it goes on one engine
// (point-to-point channels, all-to-all meshes) open now.
func (rp *replay) inParts() error {
	part := map[int]int{} // server -> its part
	for r, rk := range rp.ranks {
		if rp.servers.GPUs <= 1 {
			break
		}
		server := rp.hosts[r] / rp.servers.GPUs
		if p, ok := part[server]; ok && p != rk.eng().Part() {
			return fmt.Errorf("training: rank %d's server (hosts %d to %d) spans parts of the fabric, whose links no part may share: split the fabric keeping each server's %d GPUs together (Fabric.Split)",
				r, server*rp.servers.GPUs, (server+1)*rp.servers.GPUs-1, rp.servers.GPUs)
		}
		part[server] = rk.eng().Part()
	}
	for _, rk := range rp.ranks {
		for i := range rk.trace.Nodes {
			nd := &rk.trace.Nodes[i]
			switch nd.Type {
			case chakra.CommSendNode:
				ch := p2pChannel{rk.id, int(attrInt(nd, "comm_dst")), attrInt(nd, "comm_tag")}
				if ch.dst >= 0 && ch.dst < len(rp.ranks) && !rp.servers.same(rp.hosts[ch.src], rp.hosts[ch.dst]) {
					if _, err := rp.p2pConn(ch); err != nil {
						return fmt.Errorf("training: rank %d node %d (%q): %w", rk.id, nd.ID, nd.Name, err)
					}
				}
			case chakra.CommCollNode:
				m := rk.groups[rp.job.GroupOf(nd)]
				if m != nil && !m.local && len(m.ranks) > 1 && chakra.CollectiveType(attrInt(nd, "comm_type")) == chakra.AllToAll {
					if err := m.openAllToAll(); err != nil {
						return fmt.Errorf("training: rank %d node %d (%q): %w", rk.id, nd.ID, nd.Name, err)
					}
				}
			}
		}
	}
	rp.sealed = true
	return nil
}

// replayPart is what the ranks of one part keep: when each iteration's
// last node there ended, the last iteration's spans, the members of a
// group inside a server that have reached its k-th collective, and the
// sends and receives of each channel inside a server waiting for their
// other end.
type replayPart struct {
	iterEnd  []monotime.Time
	spans    []Span
	local    map[localKey][]*member
	localP2P map[p2pChannel]*localQueue
}

// localKey names a group's k-th collective.
type localKey struct {
	group string
	k     int
}

// localQueue is a channel's sends and receives inside a server, nodes
// by rank, waiting for their other end.
type localQueue struct{ sends, recvs []int }

// p2pChannel is where a send and its receive meet.
type p2pChannel struct {
	src, dst int
	tag      int64
}

// rank is one rank's replay state.
type rank struct {
	rp       *replay
	id       int
	host     *hostmodel.Host
	trace    *chakra.Trace
	waiting  []int   // per node: unfinished dependencies
	children [][]int // per node: the nodes waiting for it
	done     int
	// The GPU: compute nodes ready to run, whether one runs, and the
	// time spent on them.
	computeQ    []int
	busy        bool
	compute     monotime.Duration
	computeDone engine.Handler
	// groups is the rank's membership of each group, by name; rx the
	// member a collective's receiving connection belongs to.
	groups       map[string]*member
	rx           map[*core.Conn]*member
	collLeft     map[int]int   // per collective under way: channels still running it
	commOpen     int           // communication nodes under way
	idleSince    monotime.Time // when the GPU last went idle
	exposed      monotime.Duration
	sends, recvs map[*core.Conn]map[uint32]int // point to point: handle -> node
	finishedAt   monotime.Time
	began        []monotime.Time // per node: when it started
}

// fail records that rank failed and stops the run.
func (rp *replay) fail(rank int, err error) { rp.failure.record(rp.ranks[rank].eng(), rank, err) }

// eng is the engine the rank's events run on.
func (rk *rank) eng() *engine.Engine { return rk.host.Engine() }

// part is what the rank's part keeps.
func (rk *rank) part() *replayPart { return &rk.rp.parts[rk.eng().Part()] }

// connect opens a connection from rank a to rank b for channel lane,
// whose packets the switches see with entropy of its own.
func (rp *replay) connect(a, b int, cfg core.Config, lane int) (*core.Conn, *core.Conn, error) {
	ha, hb := rp.ranks[a].host, rp.ranks[b].host
	ca, cb, err := hostmodel.Connect(ha, hb, rp.nextID+1, cfg)
	rp.nextID++
	if err == nil {
		rp.conns = append(rp.conns, [2]*core.Conn{ca, cb})
		if lane > 0 {
			base := uint16(lane * max(cfg.Paths, 1))
			ha.SetEntropy(ca.ID(), base)
			hb.SetEntropy(cb.ID(), base)
		}
	}
	return ca, cb, err
}

// p2pConn is the connection of a point-to-point channel, opened on its
// first use.
func (rp *replay) p2pConn(ch p2pChannel) ([2]*core.Conn, error) {
	if c, ok := rp.p2p[ch]; ok {
		return c, nil
	}
	if rp.sealed {
		return [2]*core.Conn{}, fmt.Errorf("point-to-point channel %d to %d (tag %d) was not opened before the run", ch.src, ch.dst, ch.tag)
	}
	a, b, err := rp.connect(ch.src, ch.dst, rp.cfg, 0)
	if err != nil {
		return [2]*core.Conn{}, err
	}
	rp.p2p[ch] = [2]*core.Conn{a, b}
	return rp.p2p[ch], nil
}

// newRank is rank id of the job on host h.
func (rp *replay) newRank(id int, h *hostmodel.Host) *rank {
	tr := rp.job.Ranks[id]
	rk := &rank{rp: rp, id: id, host: h, trace: tr, waiting: slices.Clone(rp.job.Waits[id]), children: rp.job.Children[id],
		began: make([]monotime.Time, len(tr.Nodes)), groups: map[string]*member{}, rx: map[*core.Conn]*member{}, collLeft: map[int]int{},
		sends: map[*core.Conn]map[uint32]int{}, recvs: map[*core.Conn]map[uint32]int{}}
	rk.computeDone = engine.HandlerFunc(func(e *engine.Engine, arg uint64) {
		rk.busy = false
		rk.gpuIdle(e.Now())
		rk.finish(int(arg))
		rk.runCompute()
	})
	return rk
}

func attrInt(nd *chakra.Node, name string) int64 {
	a, _ := nd.Attr(name)
	v, _ := a.Int()
	return v
}

// dispatch starts node i, which has no unfinished dependency.
func (rk *rank) dispatch(i int) {
	rp := rk.rp
	nd := &rk.trace.Nodes[i]
	rk.began[i] = rk.eng().Now() // a compute node's and a collective's start come later
	switch nd.Type {
	case chakra.CompNode:
		rk.computeQ = append(rk.computeQ, i)
		rk.runCompute()
	case chakra.CommSendNode, chakra.CommRecvNode:
		rk.commStarted(rk.eng().Now())
		if rk.localP2P(i) {
			return
		}
		if err := rk.startP2P(i); err != nil {
			rp.fail(rk.id, fmt.Errorf("training: rank %d node %d (%q): %w", rk.id, nd.ID, nd.Name, err))
			return
		}
		rk.host.Wake()
	case chakra.CommCollNode:
		m := rk.groups[rp.job.GroupOf(nd)]
		chans := m.runners(chakra.CollectiveType(attrInt(nd, "comm_type")))
		rk.collLeft[i] = len(chans)
		rk.commStarted(rk.eng().Now())
		for _, c := range chans {
			c.ready[i] = true
			c.start()
		}
	default:
		rk.finish(i) // metadata and memory nodes take no time here
	}
}

// startP2P sends or posts the receive of point-to-point node i.
func (rk *rank) startP2P(i int) error {
	nd := &rk.trace.Nodes[i]
	size := int(attrInt(nd, "comm_size"))
	tag := attrInt(nd, "comm_tag")
	m := rk.sends
	var h uint32
	var c *core.Conn
	if nd.Type == chakra.CommSendNode {
		cs, err := rk.rp.p2pConn(p2pChannel{rk.id, int(attrInt(nd, "comm_dst")), tag})
		if err != nil {
			return err
		}
		c = cs[0]
		sh, err := c.SendVirtual(size, nil)
		if err != nil {
			return err
		}
		h = uint32(sh)
	} else {
		cs, err := rk.rp.p2pConn(p2pChannel{int(attrInt(nd, "comm_src")), rk.id, tag})
		if err != nil {
			return err
		}
		c, m = cs[1], rk.recvs
		rh, err := c.PostRecvVirtual(size)
		if err != nil {
			return err
		}
		h = uint32(rh)
	}
	if m[c] == nil {
		m[c] = map[uint32]int{}
	}
	m[c][h] = i
	return nil
}

// localP2P runs point-to-point node i over the server's links if its
// peer is in the rank's server: once the other end is there too, both
// finish when the bytes have crossed.
func (rk *rank) localP2P(i int) bool {
	rp := rk.rp
	nd := &rk.trace.Nodes[i]
	ch := p2pChannel{rk.id, int(attrInt(nd, "comm_dst")), attrInt(nd, "comm_tag")}
	if nd.Type == chakra.CommRecvNode {
		ch = p2pChannel{int(attrInt(nd, "comm_src")), rk.id, attrInt(nd, "comm_tag")}
	}
	if !rp.servers.same(rp.hosts[ch.src], rp.hosts[ch.dst]) {
		return false
	}
	part := rk.part()
	q := part.localP2P[ch]
	if q == nil {
		q = &localQueue{}
		part.localP2P[ch] = q
	}
	if nd.Type == chakra.CommSendNode {
		q.sends = append(q.sends, i)
	} else {
		q.recvs = append(q.recvs, i)
	}
	if len(q.sends) > 0 && len(q.recvs) > 0 {
		send, recv := q.sends[0], q.recvs[0]
		q.sends, q.recvs = q.sends[1:], q.recvs[1:]
		src, dst := rp.ranks[ch.src], rp.ranks[ch.dst]
		eng := rk.eng()
		eng.After(rp.servers.transfer(int(attrInt(nd, "comm_size")), 1), startFunc(func() {
			now := eng.Now()
			src.commEnded(now)
			src.finish(send)
			dst.commEnded(now)
			dst.finish(recv)
		}), 0)
	}
	return true
}

// finish ends node i and starts those that waited only for it.
func (rk *rank) finish(i int) {
	rp := rk.rp
	eng := rk.eng()
	now := eng.Now()
	rk.done++
	rk.finishedAt = now
	if rk.done == len(rk.trace.Nodes) {
		if rp.ranksDone.Add(1) == int64(len(rp.ranks)) {
			stopRun(eng)
		}
	}
	part := rk.part()
	k := 0 // the node's iteration
	if rp.perIter[rk.id] > 0 {
		k = i / rp.perIter[rk.id]
		part.iterEnd[k] = max(part.iterEnd[k], now)
	}
	if k == len(part.iterEnd)-1 { // the timeline is the last, warm, iteration's
		nd := &rk.trace.Nodes[i]
		part.spans = append(part.spans, Span{Rank: rk.id, Name: nd.Name, Type: nd.Type,
			Start: rk.began[i].Sub(rp.start), End: now.Sub(rp.start)})
	}
	for _, c := range rk.children[i] {
		if rk.waiting[c]--; rk.waiting[c] == 0 {
			rk.dispatch(c)
		}
	}
}

// runCompute gives the GPU to the next compute node, if it is free.
func (rk *rank) runCompute() {
	if rk.busy || len(rk.computeQ) == 0 {
		return
	}
	i := rk.computeQ[0]
	rk.computeQ = rk.computeQ[1:]
	rk.busy = true
	now := rk.eng().Now()
	rk.began[i] = now
	rk.gpuBusy(now)
	d := monotime.Duration(rk.trace.Nodes[i].DurationMicros) * monotime.Microsecond
	rk.compute += d
	rk.eng().After(d, rk.computeDone, uint64(i))
}

// handle takes the core's events for the rank's host.
func (rk *rank) handle(_ *hostmodel.Host, ev core.Event) {
	rp := rk.rp
	switch ev.Kind {
	case core.EventRecvDone:
		if err := ev.Conn.Complete(core.RecvHandle(ev.Msg)); err != nil {
			rp.fail(rk.id, err)
			return
		}
		if m := rk.rx[ev.Conn]; m != nil {
			m.arrive(ev.Conn, ev.Msg)
			return
		}
		if i, ok := rk.recvs[ev.Conn][ev.Msg]; ok {
			delete(rk.recvs[ev.Conn], ev.Msg)
			rk.commEnded(rk.eng().Now())
			rk.finish(i)
		}
	case core.EventSendDone:
		if i, ok := rk.sends[ev.Conn][ev.Msg]; ok {
			delete(rk.sends[ev.Conn], ev.Msg)
			rk.commEnded(rk.eng().Now())
			rk.finish(i)
		}
	case core.EventRecvFailed, core.EventSendFailed:
		rp.fail(rk.id, fmt.Errorf("training: rank %d: %v: %w", rk.id, ev.Kind, ev.Err))
	}
}

// The GPU's exposed communication: time it sits idle while a
// communication node of its rank is under way.
func (rk *rank) commStarted(now monotime.Time) {
	if rk.commOpen++; rk.commOpen == 1 && !rk.busy {
		rk.idleSince = now
	}
}

func (rk *rank) commEnded(now monotime.Time) {
	if rk.commOpen--; rk.commOpen == 0 && !rk.busy {
		rk.exposed += now.Sub(rk.idleSince)
	}
}

func (rk *rank) gpuBusy(now monotime.Time) {
	if rk.commOpen > 0 {
		rk.exposed += now.Sub(rk.idleSince)
	}
}

func (rk *rank) gpuIdle(now monotime.Time) { rk.idleSince = now }
