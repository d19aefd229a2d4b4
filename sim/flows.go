package sim

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/hostmodel"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// Workloads as traffic matrices with dependencies: every transfer is a
// Flow, one message from Src to Dst that starts at At, once the flows it
// waits for have arrived. A ring AllReduce is 2(N-1) rounds of flows each
// waiting for the previous round's flow into its sender; a permutation is
// N independent flows. (REFERENCES.md: the general format htsim's users
// converge on.)

// Flow is one message.
type Flow struct {
	Src, Dst int
	Bytes    int
	At       monotime.Duration // earliest start, from the run's start
	// After is the flows that must have arrived first. Flows may share
	// one After slice (the same array and length): they then wait for it
	// as a group, which costs the run a count per part rather than one
	// per flow, as when an iteration waits for the whole previous one.
	After []int
	// Step, when positive, names the collective step the flow belongs to:
	// its receiver tags the receive with it (core's StepRecv), and the
	// workload tells the receiver when the step waits only on it, as a
	// collective library would (StepWaiting). A step is what a GPU waits
	// for as a whole: a round of a ring, an all-to-all.
	Step int
}

// FlowsConfig says how hosts move flows.
type FlowsConfig struct {
	Scheme reliability.Scheme
	Core   core.Config
	// QPs is the number of paths (entropies) of each connection: QP
	// scaling with E-ECMP, or spraying with a host-side selector.
	QPs    int
	Select path.Kind
	Limit  monotime.Duration
	// Admission, when positive, is receiver-driven admission (Meta's
	// answer to DCQCN): a host has at most this many receives posted at
	// once across all its connections, granted in flow order, so only
	// that many senders hold clear-to-send toward it. Zero: every
	// connection posts up to its own window.
	Admission int
	// Threads runs a topology split into parts (Topology.Group) on this
	// many threads; the run is the same on any number.
	Threads int
}

// FlowsResult is what a run of flows measured.
type FlowsResult struct {
	Start, Done []monotime.Time // per flow: when it could start, when it arrived
	End         monotime.Time   // when the last flow arrived
	Stats       TransferStats
	Reordering
}

// Reordering is what the receivers saw out of order: packets, and of the
// first transmissions among them (reordered by the network, not resent)
// how many, their summed and their largest distance in packets.
type Reordering struct {
	OutOfOrder                          uint64
	Reordered, ReorderDepth, MaxReorder uint64
}

// add counts a receiving connection's reordering.
func (r *Reordering) add(rx core.ConnStats) {
	r.OutOfOrder += rx.OutOfOrder
	r.Reordered += rx.Reordered
	r.ReorderDepth += rx.ReorderDepth
	r.MaxReorder = max(r.MaxReorder, rx.MaxReorder)
}

// FCT returns flow i's completion time.
func (r *FlowsResult) FCT(i int) monotime.Duration { return r.Done[i].Sub(r.Start[i]) }

// pairConn is the connection a host pair's flows share, in creation order.
type pairConn struct {
	tx, rx *core.Conn
	window int   // receives posted ahead: half the connection's slots
	flows  []int // flows on this connection, in order
	posted int   // receives posted so far
	// oldest is the first of flows whose receive has not completed:
	// messages may complete out of order, and a receive slot is free
	// only once the receive that held it completed, so the window runs
	// from here, not from the count completed.
	oldest int
	done   []bool // per flow of the connection: its receive completed
	sent   int    // flows sent so far
	// base is the first flow's receive handle: a connection numbers its
	// receives in turn, so flow k's is base+k.
	base uint32
}

// RunFlows moves flows over t's hosts (virtual payloads) and returns when
// every flow has arrived.
func RunFlows(t *topology.Topology, flows []Flow, cfg FlowsConfig) (FlowsResult, error) {
	r, err := newFlowRun(t, flows, cfg)
	if err != nil {
		return r.res, err
	}
	r.begin()
	limit := cfg.Limit
	if limit == 0 {
		limit = 3600 * monotime.Second
	}
	if g := t.Group; g != nil {
		g.Run(cfg.Threads, r.start.Add(limit))
	} else {
		t.Net.Eng.RunUntil(r.start.Add(limit))
	}
	return r.result(limit)
}

// flowRun is RunFlows' state: the flows, their connections (one per host
// pair), what has started and arrived.
type flowRun struct {
	t          *topology.Topology
	flows      []Flow
	cfg        FlowsConfig
	res        FlowsResult
	conns      []*pairConn // in creation order
	byTx, byRx map[*core.Conn]*pairConn
	connOf     []*pairConn
	waiting    []int          // per flow: dependencies not yet arrived (a shared wait counts one)
	dependents flowLists[int] // per flow: the flows waiting for it alone
	shared     []sharedWait
	waitOn     flowLists[waitRef] // per flow: the shared waits that name it (flows_wait.go)
	ready      []bool
	steps      *stepTracker
	arrived    atomic.Int64 // parts count arrivals at once
	failure    runFailure
	start      monotime.Time
	// Under admission, a host's incoming flows in flow order, the next
	// to grant and the grants outstanding. A connection's receives match
	// its messages in order, and a connection's flows are in flow order
	// among them, so granting in this order posts each connection's
	// receives in its own order.
	incoming           [][]int
	nextGrant, granted []int
	// background: the run goes on beside another workload, which stops
	// the engine; the last flow's arrival does not.
	background bool
}

// runFailure is a run's first failure. In parts, several may fail in the
// window that stops the run, on any thread first: the earliest, then the
// one from the lowest id (a host's, a rank's), is the one kept, so the
// report does not depend on the threads.
type runFailure struct {
	mu  sync.Mutex
	err error
	at  monotime.Time
	by  int
}

// record keeps err, met by id on eng, if it is the run's first, and stops
// the run.
func (f *runFailure) record(eng *engine.Engine, id int, err error) {
	now := eng.Now()
	f.mu.Lock()
	if f.err == nil || eng.Group() != nil && (now < f.at || now == f.at && id < f.by) {
		f.err, f.at, f.by = err, now, id
	}
	f.mu.Unlock()
	stopRun(eng)
}

// stopRun ends a run: a group's at the end of its window, else now.
func stopRun(eng *engine.Engine) {
	if g := eng.Group(); g != nil {
		g.Stop()
		return
	}
	eng.Stop()
}

// newFlowRun opens the flows' connections.
func newFlowRun(t *topology.Topology, flows []Flow, cfg FlowsConfig) (*flowRun, error) {
	r := &flowRun{t: t, flows: flows, cfg: cfg, byTx: map[*core.Conn]*pairConn{}, byRx: map[*core.Conn]*pairConn{},
		connOf: make([]*pairConn, len(flows)), waiting: make([]int, len(flows)),
		ready: make([]bool, len(flows)),
		res:   FlowsResult{Start: make([]monotime.Time, len(flows)), Done: make([]monotime.Time, len(flows))}}
	ccfg := cfg.Core
	ccfg.Scheme = cfg.Scheme
	ccfg.Paths = max(cfg.QPs, 1)
	ccfg.Select = cfg.Select
	if ccfg.MaxMsgs == 0 {
		ccfg.MaxMsgs = 64 // per connection; thousands of connections must fit in memory
	}
	slots := connSlots(t, flows, ccfg.MaxMsgs)
	conns := map[[2]int]*pairConn{}
	var nextID uint64
	for i, f := range flows {
		if f.Src == f.Dst || f.Src < 0 || f.Dst < 0 || f.Src >= len(t.Hosts) || f.Dst >= len(t.Hosts) || f.Bytes <= 0 {
			return r, fmt.Errorf("flow %d: %d bytes from host %d to %d: need two distinct hosts of %d and bytes > 0",
				i, f.Bytes, f.Src, f.Dst, len(t.Hosts))
		}
		key := [2]int{f.Src, f.Dst}
		pc := conns[key]
		if pc == nil {
			nextID++
			cfg := ccfg
			cfg.MaxMsgs = slots(f.Src, f.Dst)
			a, b, err := hostmodel.Connect(t.Hosts[f.Src], t.Hosts[f.Dst], nextID, cfg)
			if err != nil {
				return r, err
			}
			pc = &pairConn{tx: a, rx: b, window: cfg.MaxMsgs / 2}
			conns[key], r.byTx[a], r.byRx[b] = pc, pc, pc
			r.conns = append(r.conns, pc)
		}
		pc.flows = append(pc.flows, i)
		pc.done = append(pc.done, false)
		r.connOf[i] = pc
	}
	if err := r.addDependencies(); err != nil {
		return r, err
	}
	r.steps = newStepTracker(flows)
	if t.Group != nil {
		r.steps.inParts(t, flows)
	}
	r.incoming = make([][]int, len(t.Hosts))
	r.nextGrant = make([]int, len(t.Hosts))
	r.granted = make([]int, len(t.Hosts))
	if cfg.Admission > 0 {
		for i, f := range flows {
			r.incoming[f.Dst] = append(r.incoming[f.Dst], i)
		}
	}
	return r, nil
}

// fail records that the run failed at host and stops it.
func (r *flowRun) fail(host int, err error) { r.failure.record(r.eng(host), host, err) }

// eng returns the engine host's events run on.
func (r *flowRun) eng(host int) *engine.Engine { return r.t.Hosts[host].Engine() }

func (r *flowRun) postOne(pc *pairConn) {
	f := pc.flows[pc.posted]
	h, err := pc.rx.PostRecvVirtual(r.flows[f].Bytes)
	if err == nil && r.flows[f].Step > 0 {
		err = r.steps.tag(r.t.Hosts[r.flows[f].Dst].EP, pc.rx, h, r.flows[f])
	}
	if err != nil {
		r.fail(r.flows[f].Dst, fmt.Errorf("flow %d: post: %w", f, err))
	}
	if pc.posted == 0 {
		pc.base = uint32(h)
	} else if err == nil && uint32(h) != pc.base+uint32(pc.posted) {
		r.fail(r.flows[f].Dst, fmt.Errorf("flow %d: receive handle %d, want %d: handles out of turn", f, h, pc.base+uint32(pc.posted)))
	}
	pc.posted++
}

// post posts the receives connection pc's window (or, under admission,
// its host's grants) allows.
func (r *flowRun) post(pc *pairConn, host int) {
	if r.cfg.Admission <= 0 {
		for pc.posted < len(pc.flows) && pc.posted-pc.oldest < pc.window {
			r.postOne(pc)
		}
		return
	}
	for r.granted[host] < r.cfg.Admission && r.nextGrant[host] < len(r.incoming[host]) {
		next := r.connOf[r.incoming[host][r.nextGrant[host]]]
		if next.posted-next.oldest >= next.window {
			return // that connection's window is full: keep the order
		}
		r.postOne(next)
		r.nextGrant[host]++
		r.granted[host]++
	}
}

// send sends, in connection order, every flow of pc that is ready.
func (r *flowRun) send(pc *pairConn) {
	for pc.sent < len(pc.flows) && r.ready[pc.flows[pc.sent]] {
		f := pc.flows[pc.sent]
		if _, err := pc.tx.SendVirtual(r.flows[f].Bytes, nil); err != nil {
			if err != core.ErrTooManyMessages { // else retried when a send completes
				r.fail(r.flows[f].Src, fmt.Errorf("flow %d: send: %w", f, err))
			}
			return
		}
		pc.sent++
	}
}

func (r *flowRun) startFlow(f int) {
	r.ready[f] = true
	r.res.Start[f] = r.eng(r.flows[f].Src).Now()
	r.send(r.connOf[f])
	r.t.Hosts[r.flows[f].Src].Wake()
}

// startAt starts flow f now, or at its start time if that is later.
func (r *flowRun) startAt(f int) {
	eng := r.eng(r.flows[f].Src)
	if at := r.start.Add(r.flows[f].At); at > eng.Now() {
		eng.At(at, startFunc(func() { r.startFlow(f) }), 0)
		return
	}
	r.startFlow(f)
}

// handle takes a host's events for the flows' connections.
func (r *flowRun) handle(h *hostmodel.Host, ev core.Event) {
	switch ev.Kind {
	case core.EventRecvDone:
		pc := r.byRx[ev.Conn]
		k := int(ev.Msg - pc.base)
		if ev.Msg-pc.base >= uint32(pc.posted) || pc.done[k] {
			return
		}
		f := pc.flows[k]
		eng := h.Engine()
		r.res.Done[f] = eng.Now()
		_ = ev.Conn.Complete(core.RecvHandle(ev.Msg))
		pc.done[k] = true
		for pc.oldest < len(pc.flows) && pc.done[pc.oldest] {
			pc.oldest++
		}
		if r.cfg.Admission > 0 {
			r.granted[h.ID]--
		}
		r.post(pc, int(h.ID))
		r.steps.arrived(r.t, r.flows[f], f)
		r.arrivedFor(eng, f)
		if r.arrived.Add(1) == int64(len(r.flows)) && !r.background {
			stopRun(eng)
		}
	case core.EventSendDone:
		r.send(r.byTx[ev.Conn])
	case core.EventRecvFailed, core.EventSendFailed:
		r.fail(int(h.ID), fmt.Errorf("host %d: %v: %w", h.ID, ev.Kind, ev.Err))
	}
}

// begin takes the flows' hosts' events (every host's, unless in the
// background), posts the first receives and starts the flows that wait
// for none, now or at their start times.
func (r *flowRun) begin() {
	start := r.t.Net.Eng.Now()
	if g := r.t.Group; g != nil {
		start = g.Part(0).Now()
	}
	r.beginAt(start)
}

// beginAt is begin with the flows' start times counted from start.
func (r *flowRun) beginAt(start monotime.Time) {
	t := r.t
	r.start = start
	uses := r.hostsUsed()
	for i, h := range t.Hosts {
		if uses[i] {
			h.Handle = r.handle
		}
	}
	for _, pc := range r.conns {
		r.post(pc, r.flows[pc.flows[0]].Dst)
	}
	for i, h := range t.Hosts {
		if uses[i] {
			h.Wake()
		}
	}
	for i := range r.flows {
		if r.waiting[i] == 0 {
			r.startAt(i)
		}
	}
}

// hostsUsed says, per host, whether the run takes its events: every
// host, or in the background those that send or receive a flow.
func (r *flowRun) hostsUsed() []bool {
	uses := make([]bool, len(r.t.Hosts))
	for i := range uses {
		uses[i] = !r.background
	}
	for _, f := range r.flows {
		uses[f.Src], uses[f.Dst] = true, true
	}
	return uses
}

// result is what the run measured, or why not every flow arrived.
func (r *flowRun) result(limit monotime.Duration) (FlowsResult, error) {
	for _, pc := range r.conns {
		rx := pc.rx.Stats()
		r.res.Stats.add(pc.tx.Stats(), rx)
		r.res.Reordering.add(rx)
	}
	if n := r.arrived.Load(); n > 0 && n == int64(len(r.flows)) {
		r.res.End = slices.Max(r.res.Done)
	}
	if r.failure.err != nil {
		return r.res, r.failure.err
	}
	if n := r.arrived.Load(); n < int64(len(r.flows)) {
		return r.res, fmt.Errorf("only %d of %d flows arrived within %v", n, len(r.flows), limit)
	}
	return r.res, nil
}

// connSlots returns how many message slots (core's MaxMsgs) the
// connection from host a to host b gets: enough that the receiver can
// post every flow at once, up to most. An all-to-all's connections carry
// one message each, and at a thousand hosts there are a million of them,
// so their slots are most of the run's memory. A host whose peers share
// one datagram endpoint sizes it for its busiest peer (the endpoint's
// first peer sets it).
func connSlots(t *topology.Topology, flows []Flow, most int) func(a, b int) int {
	perPair := map[[2]int]int{}
	perHost := make([]int, len(t.Hosts))
	for _, f := range flows {
		if f.Src < 0 || f.Dst < 0 || f.Src >= len(t.Hosts) || f.Dst >= len(t.Hosts) {
			continue // RunFlows reports it
		}
		key := [2]int{f.Src, f.Dst}
		perPair[key]++
		perHost[f.Src] = max(perHost[f.Src], perPair[key])
		perHost[f.Dst] = max(perHost[f.Dst], perPair[key])
	}
	return func(a, b int) int {
		n := perPair[[2]int{a, b}]
		if t.Hosts[a].Datagram || t.Hosts[b].Datagram {
			n = max(perHost[a], perHost[b])
		}
		slots := 2
		for slots < 2*n && slots < most {
			slots *= 2
		}
		return min(slots, most)
	}
}

// Permutation returns one flow of bytes from every host to another, each
// host receiving exactly one (a random derangement of hosts).
func Permutation(e *engine.Engine, hosts []int, bytes int) []Flow {
	n := len(hosts)
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	for { // shuffle until no host sends to itself
		e.Rand().Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		ok := true
		for i, p := range perm {
			if i == p {
				ok = false
				break
			}
		}
		if ok || n < 2 {
			break
		}
	}
	flows := make([]Flow, n)
	for i := range flows {
		flows[i] = Flow{Src: hosts[i], Dst: hosts[perm[i]], Bytes: bytes}
	}
	return flows
}

// RingAllReduce returns the flows of a ring AllReduce of bytes per host
// among hosts, in order: 2(N-1) rounds, each moving bytes/N from every
// host to the next, a host sending round r once round r-1 reached it.
// Each round is a collective step.
func RingAllReduce(hosts []int, bytes int) []Flow {
	return RingAllReduceRounds(hosts, bytes, 2*(len(hosts)-1))
}

// RingAllReduceRounds returns the flows of a ring AllReduce's first
// rounds rounds (at most all 2(N-1)): what one step of a ring too large
// to hold as flows costs, at 16,384 hosts and more.
func RingAllReduceRounds(hosts []int, bytes, rounds int) []Flow {
	n := len(hosts)
	seg := (bytes + n - 1) / n
	rounds = min(rounds, 2*(n-1))
	flows := make([]Flow, 0, max(rounds, 0)*n)
	for r := range rounds {
		for i := range n {
			f := Flow{Src: hosts[i], Dst: hosts[(i+1)%n], Bytes: seg, Step: r + 1}
			if r > 0 { // wait for last round's flow into this host
				f.After = []int{(r-1)*n + (i-1+n)%n}
			}
			flows = append(flows, f)
		}
	}
	return flows
}

// AllToAll returns a flow of bytes/N from every host to every other, all
// one collective step.
func AllToAll(hosts []int, bytes int) []Flow {
	n := len(hosts)
	seg := max((bytes+n-1)/n, 1)
	var flows []Flow
	for i := range n {
		for k := 1; k < n; k++ { // staggered, so each round is a permutation
			flows = append(flows, Flow{Src: hosts[i], Dst: hosts[(i+k)%n], Bytes: seg, Step: 1})
		}
	}
	return flows
}

// Incast returns flows of bytes from every sender to one receiver.
func Incast(senders []int, receiver, bytes int) []Flow {
	flows := make([]Flow, len(senders))
	for i, s := range senders {
		flows[i] = Flow{Src: s, Dst: receiver, Bytes: bytes}
	}
	return flows
}

// OnOff returns background traffic: each of pairs sends bursts of bytes,
// a burst starting every period (plus jitter from the engine's random
// stream) until until.
func OnOff(e *engine.Engine, pairs [][2]int, bytes int, period, until monotime.Duration) []Flow {
	var flows []Flow
	for _, p := range pairs {
		for at := monotime.Duration(e.Rand().Int64N(int64(period))); at < until; at += period {
			flows = append(flows, Flow{Src: p[0], Dst: p[1], Bytes: bytes, At: at})
		}
	}
	return flows
}
