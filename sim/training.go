package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/sim/chakra"
	"github.com/sdrnet/sdrnet/sim/engine"
)

// TrainingConfig replays a Chakra job (one trace per rank) on a
// topology: rank r runs on host r. A compute node holds its rank's GPU
// for its traced duration, one at a time; a send or receive moves its
// bytes through the core on a connection of its own per (source,
// destination, tag); a collective runs as NCCL's ring among all ranks,
// each rank's collectives one at a time in the order of chakra.Job's
// Order, so the k-th of every rank is the same collective. Every node
// starts once its dependencies have finished.
type TrainingConfig struct {
	Job *chakra.Job
	// Hosts places rank r on host Hosts[r] of the topology; nil: on
	// host r.
	Hosts []int
	// Iterations runs the job that many times in a row (chakra.Repeat),
	// on the same connections; 0 is once.
	Iterations int
	Scheme     reliability.Scheme
	Core       core.Config
	Limit      monotime.Duration // simulated time allowed; 0: an hour
}

// TrainingResult is what a replay measured.
type TrainingResult struct {
	// Time is when the last node of any rank finished: the iteration,
	// or all of them.
	Time monotime.Duration
	// Iterations is each iteration's time, from when the one before
	// ended (its last node on any rank finished) to when it ended.
	Iterations []monotime.Duration
	// Compute is each rank's GPU time on compute nodes; Exposed the part
	// of Time its GPU spent waiting with a communication node unfinished.
	Compute, Exposed []monotime.Duration
	// Spans is every node's run, in the order they finished: the
	// iteration's timeline (WriteTimeline).
	Spans []Span
	Stats TransferStats
	Reordering
}

// Span is one node's run on its rank, from when it started (a compute
// node: when it took the GPU; a collective: when its ring began) to
// when it finished, from the iteration's start.
type Span struct {
	Rank       int
	Name       string
	Type       chakra.NodeType
	Start, End monotime.Duration
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

// postedColl is a collective's receives, posted ahead: the first's
// handle, how many, and of what size.
type postedColl struct {
	base       uint32
	steps, seg int
}

// rank is one rank's replay state.
type rank struct {
	id       int
	host     *Host
	trace    *chakra.Trace
	waiting  []int   // per node: unfinished dependencies
	children [][]int // per node: the nodes waiting for it
	done     int
	// The GPU: compute nodes ready to run, whether one runs, and the
	// time spent on them.
	computeQ []int
	busy     bool
	compute  monotime.Duration
	// Collectives: the rank's in Order, how many have started, which
	// are ready, the one running (-1: none), its segment size, steps,
	// receive base and progress.
	collSeq    []int
	collK      int
	collReady  map[int]bool
	coll       int
	seg, steps int
	base       uint32
	// posted is the collectives whose receives are posted ahead, oldest
	// first, and postK how many of collSeq have been.
	posted       []postedColl
	postK        int
	got          []bool
	arrived      map[uint32]bool // ring receives done, not yet taken by a collective
	gotN, sent   int
	next, prev   *core.Conn
	commOpen     int           // communication nodes under way
	idleSince    monotime.Time // when the GPU last went idle
	exposed      monotime.Duration
	sends, recvs map[*core.Conn]map[uint32]int // handle -> node
	finishedAt   monotime.Time
	began        []monotime.Time // per node: when it started
}

// RunTraining replays cfg.Job on t.
func RunTraining(t *Topology, cfg TrainingConfig) (TrainingResult, error) {
	job := cfg.Job
	n := len(job.Ranks)
	if n < 1 || n > len(t.Hosts) {
		return TrainingResult{}, fmt.Errorf("training: %d ranks on a topology of %d hosts", n, len(t.Hosts))
	}
	hosts := cfg.Hosts
	if hosts == nil {
		hosts = make([]int, n)
		for r := range hosts {
			hosts[r] = r
		}
	}
	if len(hosts) != n {
		return TrainingResult{}, fmt.Errorf("training: %d ranks placed on %d hosts", n, len(hosts))
	}
	for r, h := range hosts {
		if h < 0 || h >= len(t.Hosts) || slices.Index(hosts, h) != r {
			return TrainingResult{}, fmt.Errorf("training: rank %d on host %d: not a host of the topology's %d, or taken", r, h, len(t.Hosts))
		}
	}
	iters := max(cfg.Iterations, 1)
	perIter := make([]int, n) // nodes per iteration, by rank
	for r, tr := range job.Ranks {
		perIter[r] = len(tr.Nodes)
	}
	if iters > 1 {
		reps, err := chakra.Repeat(job.Ranks, iters)
		if err == nil {
			job, err = chakra.NewJob(reps)
		}
		if err != nil {
			return TrainingResult{}, fmt.Errorf("training: %w", err)
		}
	}
	iterEnd := make([]monotime.Time, iters)
	eng := t.Net.Eng
	ccfg := cfg.Core
	ccfg.Scheme = cfg.Scheme
	var failure error
	fail := func(err error) {
		if failure == nil {
			failure = err
		}
		eng.Stop()
	}
	ranks := make([]*rank, n)
	for r := range n {
		ranks[r] = newRank(r, t.Hosts[hosts[r]], job)
	}
	nextID := uint64(1)
	connect := func(a, b int, cfg core.Config) (*core.Conn, *core.Conn, error) {
		ca, cb, err := Connect(ranks[a].host, ranks[b].host, nextID, cfg)
		nextID++
		return ca, cb, err
	}
	// A ring connection holds the receives of two collectives at once:
	// the one under way and the next, posted ahead.
	ringCfg := ccfg
	if ringCfg.MaxMsgs == 0 {
		ringCfg.MaxMsgs = core.DefaultMaxMsgs
	}
	for ringCfg.MaxMsgs < 2*ringSteps(chakra.AllReduce, n) {
		ringCfg.MaxMsgs *= 2
	}
	if n > 1 {
		for r := range n {
			a, b, err := connect(r, (r+1)%n, ringCfg)
			if err != nil {
				return TrainingResult{}, err
			}
			ranks[r].next, ranks[(r+1)%n].prev = a, b
		}
	}
	type channel struct {
		src, dst int
		tag      int64
	}
	p2p := map[channel][2]*core.Conn{}
	p2pConn := func(src, dst int, tag int64) ([2]*core.Conn, error) {
		ch := channel{src, dst, tag}
		if c, ok := p2p[ch]; ok {
			return c, nil
		}
		a, b, err := connect(src, dst, ccfg)
		if err != nil {
			return [2]*core.Conn{}, err
		}
		p2p[ch] = [2]*core.Conn{a, b}
		return p2p[ch], nil
	}
	attr := func(nd *chakra.Node, name string) int64 {
		a, _ := nd.Attr(name)
		v, _ := a.Int()
		return v
	}

	var start monotime.Time
	var spans []Span
	var finish func(rk *rank, i int)
	var runCompute func(rk *rank)
	var startColl, advanceRing func(rk *rank)
	// postColl posts rk's receives of its next collective not yet
	// posted: the first before the iteration starts, each next one when
	// the one before starts, as NCCL's buffers are in place before a
	// collective begins, so no step waits for the receiver's
	// clear-to-send.
	postColl := func(rk *rank) {
		if n == 1 || rk.postK >= len(rk.collSeq) {
			return
		}
		nd := &rk.trace.Nodes[rk.collSeq[rk.postK]]
		rk.postK++
		typ := chakra.CollectiveType(attr(nd, "comm_type"))
		steps := ringSteps(typ, n)
		if steps == 0 {
			fail(fmt.Errorf("training: rank %d node %d (%q): %v is not replayed yet (all-reduce, reduce-scatter and all-gather are)", rk.id, nd.ID, nd.Name, typ))
			return
		}
		pc := postedColl{steps: steps, seg: max((int(attr(nd, "comm_size"))+n-1)/n, 1)}
		for s := range steps {
			h, err := rk.prev.PostRecvVirtual(pc.seg)
			if err != nil {
				fail(fmt.Errorf("training: rank %d: a collective's receive: %w", rk.id, err))
				return
			}
			if s == 0 {
				pc.base = uint32(h)
			}
		}
		rk.posted = append(rk.posted, pc)
		rk.host.Wake()
	}
	// dispatch starts node i of rk, which has no unfinished dependency.
	dispatch := func(rk *rank, i int) {
		nd := &rk.trace.Nodes[i]
		rk.began[i] = eng.Now() // a compute node's and a collective's start come later
		switch nd.Type {
		case chakra.CompNode:
			rk.computeQ = append(rk.computeQ, i)
			runCompute(rk)
		case chakra.CommSendNode, chakra.CommRecvNode:
			size := int(attr(nd, "comm_size"))
			var err error
			var h uint32
			var c *core.Conn
			if nd.Type == chakra.CommSendNode {
				cs, e := p2pConn(rk.id, int(attr(nd, "comm_dst")), attr(nd, "comm_tag"))
				if err = e; err == nil {
					c = cs[0]
					var sh core.SendHandle
					sh, err = c.SendVirtual(size, nil)
					h = uint32(sh)
				}
			} else {
				cs, e := p2pConn(int(attr(nd, "comm_src")), rk.id, attr(nd, "comm_tag"))
				if err = e; err == nil {
					c = cs[1]
					var rh core.RecvHandle
					rh, err = c.PostRecvVirtual(size)
					h = uint32(rh)
				}
			}
			if err != nil {
				fail(fmt.Errorf("training: rank %d node %d (%q): %w", rk.id, nd.ID, nd.Name, err))
				return
			}
			m := rk.sends
			if nd.Type == chakra.CommRecvNode {
				m = rk.recvs
			}
			if m[c] == nil {
				m[c] = map[uint32]int{}
			}
			m[c][h] = i
			rk.commStarted(eng.Now())
			rk.host.Wake()
		case chakra.CommCollNode:
			rk.collReady[i] = true
			rk.commStarted(eng.Now())
			startColl(rk)
		default:
			finish(rk, i) // metadata and memory nodes take no time here
		}
	}
	finish = func(rk *rank, i int) {
		rk.done++
		rk.finishedAt = eng.Now()
		if perIter[rk.id] > 0 {
			k := i / perIter[rk.id]
			iterEnd[k] = max(iterEnd[k], eng.Now())
		}
		nd := &rk.trace.Nodes[i]
		spans = append(spans, Span{Rank: rk.id, Name: nd.Name, Type: nd.Type,
			Start: rk.began[i].Sub(start), End: eng.Now().Sub(start)})
		for _, c := range rk.children[i] {
			if rk.waiting[c]--; rk.waiting[c] == 0 {
				dispatch(rk, c)
			}
		}
	}
	computeDone := map[*rank]engine.Handler{}
	runCompute = func(rk *rank) {
		if rk.busy || len(rk.computeQ) == 0 {
			return
		}
		i := rk.computeQ[0]
		rk.computeQ = rk.computeQ[1:]
		rk.busy = true
		rk.began[i] = eng.Now()
		rk.gpuBusy(eng.Now())
		d := monotime.Duration(rk.trace.Nodes[i].DurationMicros) * monotime.Microsecond
		rk.compute += d
		eng.After(d, computeDone[rk], uint64(i))
	}
	for _, rk := range ranks {
		computeDone[rk] = engine.HandlerFunc(func(_ *engine.Engine, arg uint64) {
			rk.busy = false
			rk.gpuIdle(eng.Now())
			finish(rk, int(arg))
			runCompute(rk)
		})
	}
	// A collective's ring: rk posts its receives and sends step 0 when it
	// starts; it forwards step s once it holds step s-1, and is done once
	// it holds every step.
	sendStep := func(rk *rank) {
		rk.sent++
		if _, err := rk.next.SendVirtual(rk.seg, nil); err != nil {
			fail(fmt.Errorf("training: rank %d: a collective's send: %w", rk.id, err))
		}
		rk.host.Wake()
	}
	startColl = func(rk *rank) {
		if rk.coll >= 0 || rk.collK >= len(rk.collSeq) || !rk.collReady[rk.collSeq[rk.collK]] {
			return
		}
		i := rk.collSeq[rk.collK]
		rk.collK++
		rk.began[i] = eng.Now()
		if n == 1 {
			rk.commEnded(eng.Now())
			finish(rk, i)
			startColl(rk)
			return
		}
		// Its receives are posted (postColl); the next one's go up now,
		// so they are in place when it starts.
		if len(rk.posted) == 0 {
			return // postColl failed: the run is stopping
		}
		pc := rk.posted[0]
		rk.posted = rk.posted[1:]
		rk.coll, rk.base, rk.steps, rk.seg = i, pc.base, pc.steps, pc.seg
		rk.got, rk.gotN, rk.sent = make([]bool, rk.steps), 0, 0
		postColl(rk)
		sendStep(rk)
		advanceRing(rk)
	}
	// advanceRing takes the steps of rk's collective that have arrived (a
	// neighbour a collective ahead may send before rk starts it), forwards
	// what they free, and finishes the collective once every step is in.
	advanceRing = func(rk *rank) {
		if rk.coll < 0 {
			return
		}
		for s := range rk.steps {
			if h := rk.base + uint32(s); rk.arrived[h] {
				delete(rk.arrived, h)
				rk.got[s] = true
				rk.gotN++
			}
		}
		for rk.sent < rk.steps && rk.got[rk.sent-1] {
			sendStep(rk)
		}
		if rk.gotN == rk.steps {
			i := rk.coll
			rk.coll = -1
			rk.commEnded(eng.Now())
			finish(rk, i)
			startColl(rk)
		}
	}
	for _, rk := range ranks {
		rk.host.Handle = func(h *Host, ev core.Event) {
			switch ev.Kind {
			case core.EventRecvDone:
				if ev.Conn == rk.prev {
					if err := ev.Conn.Complete(core.RecvHandle(ev.Msg)); err != nil {
						fail(err)
						return
					}
					rk.arrived[ev.Msg] = true
					advanceRing(rk)
					return
				}
				if i, ok := rk.recvs[ev.Conn][ev.Msg]; ok {
					delete(rk.recvs[ev.Conn], ev.Msg)
					if err := ev.Conn.Complete(core.RecvHandle(ev.Msg)); err != nil {
						fail(err)
						return
					}
					rk.commEnded(eng.Now())
					finish(rk, i)
				}
			case core.EventSendDone:
				if i, ok := rk.sends[ev.Conn][ev.Msg]; ok {
					delete(rk.sends[ev.Conn], ev.Msg)
					rk.commEnded(eng.Now())
					finish(rk, i)
				}
			case core.EventRecvFailed, core.EventSendFailed:
				fail(fmt.Errorf("training: rank %d: %v: %w", rk.id, ev.Kind, ev.Err))
			}
		}
	}
	// The first collectives' receives are posted a one-way trip before
	// the iteration starts, so their grants have arrived by then.
	for _, rk := range ranks {
		postColl(rk)
	}
	start = eng.Now()
	eng.After(t.OneWay+4*monotime.Microsecond, startFunc(func() {
		start = eng.Now()
		for _, rk := range ranks {
			rk.idleSince = start
			for _, i := range job.Order[rk.id] {
				if rk.waiting[i] == 0 {
					dispatch(rk, i)
				}
			}
		}
	}), 0)
	limit := cfg.Limit
	if limit == 0 {
		limit = 3600 * monotime.Second
	}
	// Stop once every rank is done.
	eng.OnProgress(1024, func(e *engine.Engine) {
		for _, rk := range ranks {
			if rk.done < len(rk.trace.Nodes) {
				return
			}
		}
		e.Stop()
	})
	eng.RunUntil(eng.Now().Add(limit))
	res := TrainingResult{Compute: make([]monotime.Duration, n), Exposed: make([]monotime.Duration, n), Spans: spans}
	for _, rk := range ranks {
		if rk.done < len(rk.trace.Nodes) && failure == nil {
			failure = fmt.Errorf("training: rank %d finished %d of its %d nodes within %v", rk.id, rk.done, len(rk.trace.Nodes), limit)
		}
		res.Time = max(res.Time, rk.finishedAt.Sub(start))
		res.Compute[rk.id], res.Exposed[rk.id] = rk.compute, rk.exposed
		if rk.next != nil {
			res.Stats.add(rk.next.Stats(), rk.prev.Stats())
			res.Reordering.add(rk.prev.Stats())
		}
	}
	for _, c := range p2p {
		res.Stats.add(c[0].Stats(), c[1].Stats())
		res.Reordering.add(c[1].Stats())
	}
	if failure == nil {
		prev := start
		for _, end := range iterEnd {
			res.Iterations = append(res.Iterations, end.Sub(prev))
			prev = max(prev, end)
		}
	}
	return res, failure
}

// newRank is rank id of job on host h, its graph the job's.
func newRank(id int, h *Host, job *chakra.Job) *rank {
	tr := job.Ranks[id]
	rk := &rank{id: id, host: h, trace: tr, coll: -1, waiting: slices.Clone(job.Waits[id]), children: job.Children[id],
		began: make([]monotime.Time, len(tr.Nodes)), collReady: map[int]bool{}, arrived: map[uint32]bool{},
		sends: map[*core.Conn]map[uint32]int{}, recvs: map[*core.Conn]map[uint32]int{}}
	for _, i := range job.Order[id] {
		if tr.Nodes[i].Type == chakra.CommCollNode {
			rk.collSeq = append(rk.collSeq, i)
		}
	}
	return rk
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

// WriteTimeline writes the iteration's spans as a Chrome trace (JSON
// trace events, which chrome://tracing and Perfetto open): a process per
// rank, a thread for its GPU's compute and one for its communication.
func (r TrainingResult) WriteTimeline(w io.Writer) error {
	type event struct {
		Name string         `json:"name"`
		Cat  string         `json:"cat,omitempty"`
		Ph   string         `json:"ph"`
		TS   float64        `json:"ts"`
		Dur  float64        `json:"dur,omitempty"`
		PID  int            `json:"pid"`
		TID  int            `json:"tid"`
		Args map[string]any `json:"args,omitempty"`
	}
	us := func(d monotime.Duration) float64 { return d.Seconds() * 1e6 }
	var events []event
	ranks := 0
	for _, s := range r.Spans {
		ranks = max(ranks, s.Rank+1)
	}
	for rank := range ranks {
		events = append(events,
			event{Name: "process_name", Ph: "M", PID: rank, Args: map[string]any{"name": fmt.Sprintf("rank %d", rank)}},
			event{Name: "thread_name", Ph: "M", PID: rank, TID: 0, Args: map[string]any{"name": "GPU compute"}},
			event{Name: "thread_name", Ph: "M", PID: rank, TID: 1, Args: map[string]any{"name": "communication"}})
	}
	for _, s := range r.Spans {
		tid := 1
		if s.Type == chakra.CompNode {
			tid = 0
		}
		events = append(events, event{Name: s.Name, Cat: s.Type.String(), Ph: "X", TS: us(s.Start), Dur: us(s.End - s.Start), PID: s.Rank, TID: tid})
	}
	enc := json.NewEncoder(w)
	return enc.Encode(map[string]any{"traceEvents": events, "displayTimeUnit": "ns"})
}
