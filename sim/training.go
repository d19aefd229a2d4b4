package sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/sim/chakra"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// TrainingConfig replays a Chakra job (one trace per rank) on a
// topology: rank r runs on host r. A compute node holds its rank's GPU
// for its traced duration, one at a time; a send or receive moves its
// bytes through the core on a connection of its own per (source,
// destination, tag); a collective runs among the members of its process
// group (chakra.Job's Groups), all-reduce as NCCL's ring or tree,
// reduce-scatter and all-gather as its ring and all-to-all as a message
// to every other member, each member's collectives in a group one at a time in the
// order of chakra.Job's Order (a group's k-th is the same collective on
// every member; different groups' run at once). Every node starts once
// its dependencies have finished.
type TrainingConfig struct {
	Job *chakra.Job
	// Hosts places rank r on host Hosts[r] of the topology; nil: on
	// host r.
	Hosts []int
	// Iterations runs the job that many times in a row (chakra.Repeat),
	// on the same connections; 0 is once.
	Iterations int
	// Tree runs all-reduce by NCCL's tree algorithm (training_tree.go)
	// instead of its ring.
	Tree bool
	// Channels runs the collectives of a group across servers on that
	// many channels, as NCCL does: each with an equal part of every
	// buffer on rings (and trees) of its own connections; all-to-all on
	// the first. 0 is one.
	Channels int
	// Servers joins every Servers.GPUs consecutive hosts by NVLink-class
	// links; zero: none.
	Servers ServerLinks
	Scheme  reliability.Scheme
	Core    core.Config
	Limit   monotime.Duration // simulated time allowed; 0: an hour
	// Background is traffic beside the job among hosts it does not use
	// (another job's, as OnOff makes), moved as RunFlows moves flows
	// with BackgroundConfig from when the job starts; the job does not
	// wait for it.
	Background       []Flow
	BackgroundConfig FlowsConfig
	// Threads runs a topology in parts (Topology.Group) on this many
	// threads; the run is the same on any number.
	Threads int
}

// ServerLinks are the links among the GPUs of a server (NVLink and
// NVSwitch): a collective whose group is inside one server, and a
// transfer between two of its GPUs, take what their bytes need at Rate
// plus Latency per step, as ASTRA-sim's analytical network does for a
// scale-up domain, without packets: such traffic never meets the
// fabric, and at hundreds of GB/s it would cost most of the events. A
// group across servers takes its hops inside a server (ring neighbours,
// all-to-all pairs) the same way, and the network between servers.
// Concurrent transfers do not share a GPU's links. Host h is in server
// h / GPUs.
type ServerLinks struct {
	GPUs    int
	Rate    float64 // bits/s per GPU, each way
	Latency monotime.Duration
}

// same reports whether hosts a and b are in one server.
func (s ServerLinks) same(a, b int) bool { return s.GPUs > 1 && a/s.GPUs == b/s.GPUs }

// transfer is how long size bytes take, steps times in a row.
func (s ServerLinks) transfer(size, steps int) monotime.Duration {
	return monotime.Duration(steps) * (monotime.TransmitTime(size, s.Rate) + s.Latency)
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
	// Spans is every node's run in the last iteration (the first ones
	// warm the connections up), in the order they finished: the
	// iteration's timeline (WriteTimeline), from the run's start.
	Spans []Span
	Stats TransferStats
	Reordering
	// Background is what the background flows did while the job ran:
	// those unfinished when it ended have no Done time.
	Background FlowsResult
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

// RunTraining replays cfg.Job on t.
func RunTraining(t *topology.Topology, cfg TrainingConfig) (TrainingResult, error) {
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
			job, err = chakra.NewGroupJob(reps, job.Groups)
		}
		if err != nil {
			return TrainingResult{}, fmt.Errorf("training: %w", err)
		}
	}
	if cfg.Servers.GPUs > 1 && !(cfg.Servers.Rate > 0) {
		return TrainingResult{}, fmt.Errorf("training: servers of %d GPUs with links of %g bit/s", cfg.Servers.GPUs, cfg.Servers.Rate)
	}
	rp := &replay{eng: t.Net.Eng, g: t.Group, job: job, cfg: cfg.Core, perIter: perIter,
		p2p: map[p2pChannel][2]*core.Conn{}, servers: cfg.Servers, hosts: hosts, tree: cfg.Tree, channels: max(cfg.Channels, 1)}
	parts := 1
	if t.Group != nil {
		parts = t.Group.Parts()
	}
	rp.parts = make([]replayPart, parts)
	for i := range rp.parts {
		rp.parts[i] = replayPart{iterEnd: make([]monotime.Time, iters), local: map[localKey][]*member{}, localP2P: map[p2pChannel]*localQueue{}}
	}
	rp.cfg.Scheme = cfg.Scheme
	rp.ranks = make([]*rank, n)
	for r := range n {
		rp.ranks[r] = rp.newRank(r, t.Hosts[hosts[r]])
	}
	if err := rp.joinGroups(); err != nil {
		return TrainingResult{}, err
	}
	for _, rk := range rp.ranks {
		rk.host.Handle = rk.handle
		if len(rk.trace.Nodes) == 0 {
			rp.ranksDone.Add(1)
		}
	}
	if rp.g != nil {
		if err := rp.inParts(); err != nil {
			return TrainingResult{}, err
		}
	}
	var bg *flowRun
	if len(cfg.Background) > 0 {
		var err error
		if bg, err = rp.background(t, cfg.Background, cfg.BackgroundConfig); err != nil {
			return TrainingResult{}, err
		}
	}
	// The first collectives' receives are posted a one-way trip before
	// the iteration starts, so their grants have arrived by then.
	for _, m := range rp.members {
		m.post()
	}
	rp.start = rp.eng.Now()
	begin := func(rk *rank) {
		rk.idleSince = rp.start
		for _, i := range job.Order[rk.id] {
			if rk.waiting[i] == 0 {
				rk.dispatch(i)
			}
		}
	}
	limit := cfg.Limit
	if limit == 0 {
		limit = 3600 * monotime.Second
	}
	if g := rp.g; g != nil {
		// Each part starts its ranks at the iteration's start; the
		// background flows are readied now to start from then.
		rp.start = g.Part(0).Now().Add(t.OneWay + 4*monotime.Microsecond)
		if bg != nil {
			bg.beginAt(rp.start)
		}
		for _, rk := range rp.ranks {
			rk.eng().At(rp.start, startFunc(func() { begin(rk) }), 0)
		}
		if rp.ranksDone.Load() < int64(len(rp.ranks)) {
			g.Run(cfg.Threads, rp.start.Add(limit))
		}
	} else {
		rp.eng.After(t.OneWay+4*monotime.Microsecond, startFunc(func() {
			rp.start = rp.eng.Now()
			if bg != nil {
				bg.begin()
			}
			for _, rk := range rp.ranks {
				begin(rk)
			}
		}), 0)
		if rp.ranksDone.Load() < int64(len(rp.ranks)) {
			rp.eng.RunUntil(rp.eng.Now().Add(limit)) // finish stops it once every rank is done
		}
	}
	res, err := rp.result(limit)
	if bg != nil {
		_, _ = bg.result(limit) // flows unfinished when the job ended are expected
		res.Background = bg.res
		if bg.failure.err != nil && err == nil {
			err = fmt.Errorf("training: background traffic: %w", bg.failure.err)
		}
	}
	return res, err
}

// background readies flows beside the job, on hosts it does not use.
func (rp *replay) background(t *topology.Topology, flows []Flow, cfg FlowsConfig) (*flowRun, error) {
	rankOn := map[int]int{}
	for r, h := range rp.hosts {
		rankOn[h] = r
	}
	for i, f := range flows {
		for _, h := range []int{f.Src, f.Dst} {
			if r, ok := rankOn[h]; ok {
				return nil, fmt.Errorf("training: background flow %d uses host %d, which runs rank %d: background traffic needs hosts the job does not use", i, h, r)
			}
		}
	}
	bg, err := newFlowRun(t, flows, cfg)
	if err != nil {
		return nil, fmt.Errorf("training: background traffic: %w", err)
	}
	bg.background = true
	return bg, nil
}

// result is what the replay measured, or why it did not finish.
func (rp *replay) result(limit monotime.Duration) (TrainingResult, error) {
	n := len(rp.ranks)
	res := TrainingResult{Compute: make([]monotime.Duration, n), Exposed: make([]monotime.Duration, n)}
	iterEnd := rp.parts[0].iterEnd
	for _, p := range rp.parts {
		res.Spans = append(res.Spans, p.spans...)
		for k, end := range p.iterEnd {
			iterEnd[k] = max(iterEnd[k], end)
		}
	}
	if len(rp.parts) > 1 { // each part's in its own order: one order for all
		slices.SortStableFunc(res.Spans, func(a, b Span) int {
			return cmp.Or(cmp.Compare(a.End, b.End), cmp.Compare(a.Rank, b.Rank))
		})
	}
	failure := rp.failure.err
	for _, rk := range rp.ranks {
		if rk.done < len(rk.trace.Nodes) && failure == nil {
			failure = fmt.Errorf("training: rank %d finished %d of its %d nodes within %v", rk.id, rk.done, len(rk.trace.Nodes), limit)
		}
		res.Time = max(res.Time, rk.finishedAt.Sub(rp.start))
		res.Compute[rk.id], res.Exposed[rk.id] = rk.compute, rk.exposed
	}
	for _, c := range rp.conns {
		res.Stats.add(c[0].Stats(), c[1].Stats())
		res.Reordering.add(c[1].Stats())
	}
	if failure == nil {
		prev := rp.start
		for _, end := range iterEnd {
			res.Iterations = append(res.Iterations, end.Sub(prev))
			prev = max(prev, end)
		}
	}
	return res, failure
}

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
