package sim

import (
	"cmp"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
	"github.com/sdrnet/sdrnet/sim/chakra"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/network"
	"github.com/sdrnet/sdrnet/sim/topology"
)

func compNode(id, micros uint64, deps ...uint64) chakra.Node {
	return chakra.Node{ID: id, Name: "gemm", Type: chakra.CompNode, DurationMicros: micros, DataDeps: deps}
}

func p2pNode(id uint64, typ chakra.NodeType, peer, size int64, deps ...uint64) chakra.Node {
	side := "comm_dst"
	if typ == chakra.CommRecvNode {
		side = "comm_src"
	}
	return chakra.Node{ID: id, Name: typ.String(), Type: typ, DataDeps: deps,
		Attrs: []chakra.Attr{chakra.IntAttr(side, peer), chakra.IntAttr("comm_tag", 1), chakra.IntAttr("comm_size", size)}}
}

func collNode(id uint64, typ chakra.CollectiveType, size int64, deps ...uint64) chakra.Node {
	return chakra.Node{ID: id, Name: typ.String(), Type: chakra.CommCollNode, DataDeps: deps,
		Attrs: []chakra.Attr{chakra.IntAttr("comm_type", int64(typ)), chakra.IntAttr("comm_size", size)}}
}

func replayNodes(t *testing.T, hosts int, ranks ...[]chakra.Node) TrainingResult {
	t.Helper()
	traces := make([]*chakra.Trace, len(ranks))
	for i, nodes := range ranks {
		traces[i] = &chakra.Trace{Nodes: nodes}
	}
	job, err := chakra.NewJob(traces)
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(1)
	res, err := RunTraining(ringTopology(eng, hosts, 0), TrainingConfig{Job: job, Scheme: reliability.SelectiveRepeat{NACK: true},
		Core: coreConfig(2 * monotime.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// replayGroups replays one trace per rank, with process groups and
// server links, on the two sites of ringTopology.
func replayGroups(t *testing.T, groups chakra.Groups, servers ServerLinks, ranks ...[]chakra.Node) TrainingResult {
	t.Helper()
	traces := make([]*chakra.Trace, len(ranks))
	for i, nodes := range ranks {
		traces[i] = &chakra.Trace{Nodes: nodes}
	}
	job, err := chakra.NewGroupJob(traces, groups)
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunTraining(ringTopology(engine.New(1), len(ranks), 0), TrainingConfig{Job: job, Servers: servers,
		Scheme: reliability.SelectiveRepeat{NACK: true}, Core: coreConfig(2 * monotime.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// megatronJob is m's job and its ranks' traces.
func megatronJob(t *testing.T, m chakra.Megatron) (*chakra.Job, []*chakra.Trace) {
	t.Helper()
	traces, groups, err := m.Traces()
	if err != nil {
		t.Fatal(err)
	}
	job, err := chakra.NewGroupJob(traces, groups)
	if err != nil {
		t.Fatal(err)
	}
	return job, traces
}

// TestTrainingCompute: compute nodes hold their rank's GPU one at a
// time for their traced durations, after their dependencies: the
// iteration is the longest rank's chain.
func TestTrainingCompute(t *testing.T) {
	us := monotime.Microsecond
	res := replayNodes(t, 2,
		[]chakra.Node{compNode(1, 100), compNode(2, 50, 1), compNode(3, 20)}, // 3 waits for the GPU
		[]chakra.Node{compNode(1, 30)})
	if res.Time != 170*us || res.Compute[0] != 170*us || res.Compute[1] != 30*us || res.Exposed[0] != 0 {
		t.Errorf("time %v, compute %v, exposed %v; want 170us, [170us 30us], 0", res.Time, res.Compute, res.Exposed)
	}
}

// TestTrainingSendRecv: a send after a compute node, received by a rank
// whose next compute node waits for it. The receive is posted at the
// start and its grant reaches the sender a one-way trip d later; the
// data leaves after both the compute node and the grant, takes its
// serialization and d to arrive, and the send finishes when the
// acknowledgement is back, d later: max(100us, d) + serialization + 2d.
// The receiving GPU waits through all but its own 10 us (exposed
// communication).
func TestTrainingSendRecv(t *testing.T) {
	us := monotime.Microsecond
	const size = 1 << 20
	res := replayNodes(t, 2,
		[]chakra.Node{compNode(1, 100), p2pNode(2, chakra.CommSendNode, 1, size, 1)},
		[]chakra.Node{p2pNode(1, chakra.CommRecvNode, 0, size), compNode(2, 10, 1)})
	d := network.DelayForDistance(200)
	ser := monotime.Duration(size/4096) * monotime.TransmitTime(4096+wire.MessageLen+network.DefaultOverhead, 100e9)
	want := max(100*us, d) + ser + 2*d
	if res.Time < want || res.Time > want*105/100 {
		t.Errorf("time %v, want within 5%% above %v", res.Time, want)
	}
	if arrival := max(100*us, d) + ser + d; res.Exposed[1] < arrival || res.Exposed[1] > res.Time {
		t.Errorf("rank 1's exposed communication %v, want at least the wait for the message (%v)", res.Exposed[1], arrival)
	}
}

// TestTrainingAllReduce: an all-reduce among four ranks replays as the
// ring RunAllReduce runs, within 10% of its lower bound (the
// 2(N-1) steps across the slowest hop), and a replay is deterministic.
func TestTrainingAllReduce(t *testing.T) {
	const n, size = 4, 8 << 20
	ranks := make([][]chakra.Node, n)
	for r := range ranks {
		ranks[r] = []chakra.Node{collNode(1, chakra.AllReduce, size)}
	}
	res := replayNodes(t, n, ranks...)
	perPacket := monotime.TransmitTime(4096+wire.MessageLen+network.DefaultOverhead, 100e9)
	bound := monotime.Duration(2*(n-1)*(size/n/4096))*perPacket + 3*network.DelayForDistance(200)
	if res.Time < bound || res.Time > bound*11/10 {
		t.Errorf("all-reduce took %v; the ring's lower bound is %v, want within 10%% of it", res.Time, bound)
	}
	if again := replayNodes(t, n, ranks...); !reflect.DeepEqual(res, again) {
		t.Errorf("a second replay differs: %+v, then %+v", res, again)
	}
}

// TestTrainingCollectives: a reduce-scatter and an all-gather take N-1
// ring steps each, so the pair takes about the all-reduce's 2(N-1); a
// rank whose GPU has nothing else to do waits through all of it; a
// collective the ring does not run is an error naming the node.
func TestTrainingCollectives(t *testing.T) {
	const n, size = 4, 8 << 20
	pair, ar := make([][]chakra.Node, n), make([][]chakra.Node, n)
	for r := range n {
		pair[r] = []chakra.Node{collNode(1, chakra.ReduceScatter, size), collNode(2, chakra.AllGather, size, 1)}
		ar[r] = []chakra.Node{collNode(1, chakra.AllReduce, size)}
	}
	p, a := replayNodes(t, n, pair...), replayNodes(t, n, ar...)
	if ratio := p.Time.Seconds() / a.Time.Seconds(); ratio < 0.95 || ratio > 1.3 {
		t.Errorf("reduce-scatter then all-gather %v, all-reduce %v: ratio %.2f, want 0.95..1.3", p.Time, a.Time, ratio)
	}
	for r, e := range a.Exposed {
		if e < a.Time*99/100 || e > a.Time {
			t.Errorf("rank %d exposed %v of the all-reduce's %v, want all of it", r, e, a.Time)
		}
	}

	job, err := chakra.NewJob([]*chakra.Trace{{Nodes: []chakra.Node{collNode(7, chakra.Broadcast, 1024)}}, {Nodes: []chakra.Node{collNode(7, chakra.Broadcast, 1024)}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = RunTraining(ringTopology(engine.New(1), 2, 0), TrainingConfig{Job: job, Scheme: reliability.SelectiveRepeat{NACK: true}, Core: coreConfig(2 * monotime.Millisecond)})
	if err == nil || !strings.Contains(err.Error(), `node 7 ("BROADCAST"): BROADCAST is not replayed yet`) {
		t.Errorf("a broadcast: %v, want an error naming node 7", err)
	}
}

// TestTrainingDataParallel: a generated data-parallel iteration (four
// ranks, four layers) replays; with overlap each layer's all-reduce
// starts after its own backward compute, not the whole pass's, so the
// iteration ends three backward layers sooner, as the graph says, and
// less of it is communication the GPU waits for.
func TestTrainingDataParallel(t *testing.T) {
	us := monotime.Microsecond
	run := func(overlap bool) TrainingResult {
		dp := chakra.DataParallel{Ranks: 4, Layers: 4, ForwardMicros: 100, BackwardMicros: 200, GradientBytes: 4 << 20, Overlap: overlap}
		traces, err := dp.Traces()
		if err != nil {
			t.Fatal(err)
		}
		nodes := make([][]chakra.Node, len(traces))
		for i, tr := range traces {
			nodes[i] = tr.Nodes
		}
		return replayNodes(t, 4, nodes...)
	}
	serial, overlapped := run(false), run(true)
	saved := serial.Time - overlapped.Time
	if saved < 3*200*us*95/100 || saved > 3*200*us*105/100 {
		t.Errorf("overlap saved %v (%v against %v), want three backward layers, 600us, within 5%%", saved, overlapped.Time, serial.Time)
	}
	if overlapped.Exposed[0] >= serial.Exposed[0] || serial.Compute[0] != 4*300*us {
		t.Errorf("exposed %v with overlap, %v without; compute %v (want 1.2ms)", overlapped.Exposed[0], serial.Exposed[0], serial.Compute[0])
	}
}

// TestTrainingTimeline: every node's run is a span, a compute node's from
// when it took the GPU, and the Chrome trace holds each of them on its
// rank's compute or communication thread.
func TestTrainingTimeline(t *testing.T) {
	us := monotime.Microsecond
	const size = 1 << 20
	res := replayNodes(t, 2,
		[]chakra.Node{compNode(1, 100), compNode(2, 20), p2pNode(3, chakra.CommSendNode, 1, size, 1)},
		[]chakra.Node{p2pNode(1, chakra.CommRecvNode, 0, size)})
	want := map[string][2]monotime.Duration{"gemm": {0, 100 * us}}
	got := map[string][2]monotime.Duration{}
	for _, s := range res.Spans {
		if s.Rank == 0 && s.Type == chakra.CompNode {
			if _, seen := got[s.Name]; !seen {
				got[s.Name] = [2]monotime.Duration{s.Start, s.End}
			}
		}
	}
	if !reflect.DeepEqual(got, want) || len(res.Spans) != 4 {
		t.Errorf("spans %+v, want 4 with rank 0's first compute node at [0, 100us]", res.Spans)
	}
	// The second compute node waited for the GPU: it ran 100-120 us.
	for _, s := range res.Spans {
		if s.Rank == 0 && s.Type == chakra.CompNode && s.Start != 0 && (s.Start != 100*us || s.End != 120*us) {
			t.Errorf("rank 0's second compute node ran %v-%v, want 100us-120us", s.Start, s.End)
		}
	}
	var b strings.Builder
	if err := res.WriteTimeline(&b); err != nil {
		t.Fatal(err)
	}
	var tr struct {
		TraceEvents []struct {
			Name, Ph string
			TS, Dur  float64
			PID, TID int
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal([]byte(b.String()), &tr); err != nil {
		t.Fatal(err)
	}
	spans := 0
	for _, e := range tr.TraceEvents {
		if e.Ph != "X" {
			continue
		}
		spans++
		if e.Name == "gemm" && e.PID == 0 && e.TID != 0 || e.Name != "gemm" && e.TID != 1 {
			t.Errorf("event %+v on the wrong thread", e)
		}
	}
	if spans != len(res.Spans) {
		t.Errorf("%d spans in the Chrome trace, want %d", spans, len(res.Spans))
	}
}

// TestTrainingIterations: a job run three times on the same connections
// takes three iterations of about the time of one, and they add up to
// the run; ranks placed across the trunk at every ring hop take longer
// than ranks placed two to a site; a placement that names a host twice
// is refused.
func TestTrainingIterations(t *testing.T) {
	dp := chakra.DataParallel{Ranks: 4, Layers: 2, ForwardMicros: 100, BackwardMicros: 200, GradientBytes: 4 << 20}
	traces, err := dp.Traces()
	if err != nil {
		t.Fatal(err)
	}
	job, err := chakra.NewJob(traces)
	if err != nil {
		t.Fatal(err)
	}
	run := func(hosts []int, iters int) (TrainingResult, error) {
		return RunTraining(ringTopology(engine.New(1), 4, 0), TrainingConfig{Job: job, Hosts: hosts, Iterations: iters,
			Scheme: reliability.SelectiveRepeat{NACK: true}, Core: coreConfig(2 * monotime.Millisecond)})
	}
	once, err := run(nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	thrice, err := run(nil, 3)
	if err != nil {
		t.Fatal(err)
	}
	var sum monotime.Duration
	for i, it := range thrice.Iterations {
		sum += it
		if it < once.Time*95/100 || it > once.Time*105/100 {
			t.Errorf("iteration %d took %v, want the %v of one run within 5%%", i, it, once.Time)
		}
	}
	if len(thrice.Iterations) != 3 || sum != thrice.Time || !slices.Equal(once.Iterations, []monotime.Duration{once.Time}) {
		t.Errorf("iterations %v add to %v, run %v; one run's %v, want [%v]", thrice.Iterations, sum, thrice.Time, once.Iterations, once.Time)
	}
	// The last iteration's nodes start once the one before has ended on
	// their rank: none before the second iteration's end less its last
	// all-reduce's spread over the ranks (a twentieth of an iteration).
	first := slices.MinFunc(thrice.Spans, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) }).Start
	if len(thrice.Spans) != len(once.Spans) || first < thrice.Iterations[0]+thrice.Iterations[1]-once.Time/20 {
		t.Errorf("timeline of %d spans from %v, want the last iteration's %d, from about %v", len(thrice.Spans), first, len(once.Spans),
			thrice.Iterations[0]+thrice.Iterations[1])
	}
	if thrice.Compute[0] != 3*once.Compute[0] {
		t.Errorf("compute %v in three iterations, %v in one", thrice.Compute[0], once.Compute[0])
	}
	// Hosts 0 and 1 are on one site, 2 and 3 on the other.
	across, err := run([]int{0, 2, 1, 3}, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("one iteration %v; three %v; ring across the trunk %v", once.Time, thrice.Iterations, across.Time)
	if across.Time <= once.Time {
		t.Errorf("every ring hop across the trunk: %v, two hops: %v", across.Time, once.Time)
	}
	if _, err := run([]int{0, 1, 1, 3}, 1); err == nil {
		t.Error("a host taken twice was accepted")
	}
}

// TestTrainingGroups: two process groups, one per site, all-reduce at
// once on links they do not share, each as fast as alone; an all-to-all
// among four ranks on two sites takes a trunk crossing after each rank's
// NIC has sent its three segments.
func TestTrainingGroups(t *testing.T) {
	const size = 8 << 20
	run := func(groups chakra.Groups, ranks ...[]chakra.Node) TrainingResult {
		return replayGroups(t, groups, ServerLinks{}, ranks...)
	}
	in := func(g string, n chakra.Node) []chakra.Node {
		n.Attrs = append(n.Attrs, chakra.TextAttr("pg_name", g))
		return []chakra.Node{n}
	}
	sites := chakra.Groups{"1": {0, 1}, "2": {2, 3}}
	both := run(sites, in("1", collNode(1, chakra.AllReduce, size)), in("1", collNode(1, chakra.AllReduce, size)),
		in("2", collNode(1, chakra.AllReduce, size)), in("2", collNode(1, chakra.AllReduce, size)))
	alone := run(sites, in("1", collNode(1, chakra.AllReduce, size)), in("1", collNode(1, chakra.AllReduce, size)), nil, nil)
	if both.Time < alone.Time*99/100 || both.Time > alone.Time*101/100 {
		t.Errorf("two groups at once %v, one alone %v", both.Time, alone.Time)
	}
	a2a := make([][]chakra.Node, 4)
	for r := range a2a {
		a2a[r] = []chakra.Node{collNode(1, chakra.AllToAll, size)}
	}
	got := run(nil, a2a...)
	seg := monotime.TransmitTime(size/4, 100e9)
	bound := 3*seg + network.DelayForDistance(200)
	t.Logf("all-reduce in a site's group: %v (both at once %v); all-to-all of 4: %v, bound %v", alone.Time, both.Time, got.Time, bound)
	if got.Time < bound || got.Time > bound*115/100 {
		t.Errorf("all-to-all took %v, want within 15%% above %v", got.Time, bound)
	}
}

// TestTrainingMegatronPipeline: a two-stage 1F1B pipeline of four
// micro-batches takes (micro-batches + stages - 1) forward-and-backward
// steps of a stage, the pipeline's bubble included, plus the activations'
// and gradients' trips on its critical path (within 3%).
func TestTrainingMegatronPipeline(t *testing.T) {
	m := chakra.Megatron{Layers: 4, Hidden: 4096, SeqLen: 2048, MicroBatch: 1, MicroBatches: 4, TP: 1, PP: 2, DP: 1, EP: 1, GPUFlops: 100e12}
	job, traces := megatronJob(t, m)
	top := topology.TwoSites(engine.New(1), topology.TwoSitesConfig{HostsPerSite: 1, HostRate: 100e9, HostDelay: monotime.Microsecond,
		TrunkRate: 400e9, TrunkDelay: monotime.Microsecond, TrunkLoss: func() network.LossModel { return network.Bernoulli{} }})
	res, err := RunTraining(top, TrainingConfig{Job: job, Scheme: reliability.SelectiveRepeat{NACK: true}, Core: core.Config{InitialRTT: 20 * monotime.Microsecond, Rate: 100e9}})
	if err != nil {
		t.Fatal(err)
	}
	var stage monotime.Duration // one micro-batch's forward and backward on a stage
	for _, n := range traces[0].Nodes {
		stage += monotime.Duration(n.DurationMicros) * monotime.Microsecond
	}
	stage /= monotime.Duration(m.MicroBatches)
	xfer := monotime.TransmitTime(1*2048*4096*2, 100e9)
	bound := monotime.Duration(m.MicroBatches+m.PP-1)*stage + 2*xfer
	t.Logf("iteration %v, bound %v (stage %v, transfer %v)", res.Time, bound, stage, xfer)
	if res.Time < bound || res.Time > bound*103/100 {
		t.Errorf("iteration %v, want within 3%% above %v", res.Time, bound)
	}
}

// TestTrainingServers: inside a server of two GPUs an all-reduce takes
// its two ring steps over the server's links and a send its one
// transfer, exactly; a group across servers sends over the network only
// between servers, as NCCL's rings and all-to-alls do.
func TestTrainingServers(t *testing.T) {
	servers := ServerLinks{GPUs: 2, Rate: 3600e9, Latency: 2 * monotime.Microsecond}
	run := func(groups chakra.Groups, ranks ...[]chakra.Node) TrainingResult {
		return replayGroups(t, groups, servers, ranks...)
	}
	const size = 8 << 20
	pair := chakra.Groups{"1": {0, 1}}
	ar := func(g string) []chakra.Node {
		n := collNode(1, chakra.AllReduce, size)
		n.Attrs = append(n.Attrs, chakra.TextAttr("pg_name", g))
		return []chakra.Node{n}
	}
	local := run(pair, ar("1"), ar("1"), nil, nil)
	if want := 2 * (monotime.TransmitTime(size/2, servers.Rate) + servers.Latency); local.Time != want {
		t.Errorf("all-reduce inside a server: %v, want %v", local.Time, want)
	}
	sent := run(nil, []chakra.Node{compNode(1, 10), p2pNode(2, chakra.CommSendNode, 1, 1<<20, 1)},
		[]chakra.Node{p2pNode(1, chakra.CommRecvNode, 0, 1<<20)}, nil, nil)
	if want := 10*monotime.Microsecond + monotime.TransmitTime(1<<20, servers.Rate) + servers.Latency; sent.Time != want {
		t.Errorf("a send inside a server: %v, want %v", sent.Time, want)
	}
	// Across the two servers the ring's hops 0-1 and 2-3 stay inside
	// them: half its bytes reach the network; an all-to-all's shares
	// between the two GPUs of a server, a third of them.
	across := run(nil, ar(""), ar(""), ar(""), ar(""))
	flat := replayGroups(t, nil, ServerLinks{}, ar(""), ar(""), ar(""), ar(""))
	a2a := make([][]chakra.Node, 4)
	for r := range a2a {
		a2a[r] = []chakra.Node{collNode(1, chakra.AllToAll, size)}
	}
	a2aServers, a2aFlat := run(nil, a2a...), replayGroups(t, nil, ServerLinks{}, a2a...)
	t.Logf("inside a server %v; send %v; all-reduce across servers %v, all in the network %v; all-to-all %v, all in the network %v",
		local.Time, sent.Time, across.Time, flat.Time, a2aServers.Time, a2aFlat.Time)
	if local.Stats.DataBytes != 0 || 2*across.Stats.DataBytes != flat.Stats.DataBytes || 3*a2aServers.Stats.DataBytes != 2*a2aFlat.Stats.DataBytes {
		t.Errorf("bytes through the network: all-reduce inside a server %d, across servers %d against %d, all-to-all %d against %d",
			local.Stats.DataBytes, across.Stats.DataBytes, flat.Stats.DataBytes, a2aServers.Stats.DataBytes, a2aFlat.Stats.DataBytes)
	}
	if across.Time >= flat.Time || a2aServers.Time > a2aFlat.Time {
		t.Errorf("with servers' links: all-reduce %v (without %v), all-to-all %v (without %v)", across.Time, flat.Time, a2aServers.Time, a2aFlat.Time)
	}
}

// TestDoubleBinaryTree: NCCL's trees, as its trees.cc draws them for 12
// and 13 ranks; for every group size both trees span the group from one
// root with at most two children a member, and at most one member
// forwards in both, so no member carries much more than its half twice.
func TestDoubleBinaryTree(t *testing.T) {
	parents := func(n, tree int) []int {
		ps := make([]int, n)
		for r := range n {
			ps[r], _ = dtree(n, r, tree)
		}
		return ps
	}
	for _, tc := range []struct {
		n, tree int
		want    []int
	}{
		{12, 0, []int{-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 8, 10}},
		{12, 1, []int{1, 3, 1, 11, 5, 7, 5, 3, 9, 7, 9, -1}},
		{13, 0, []int{-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8}},
		{13, 1, []int{9, -1, 3, 5, 3, 9, 7, 5, 7, 1, 11, 0, 11}},
	} {
		if got := parents(tc.n, tc.tree); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%d ranks, tree %d: parents %v, want %v", tc.n, tc.tree, got, tc.want)
		}
	}
	for n := 1; n <= 70; n++ {
		forwards := make([]int, n)
		for tree := range 2 {
			roots := 0
			for r := range n {
				up, kids := dtree(n, r, tree)
				if up < 0 {
					roots++
				}
				for _, k := range kids {
					if k < 0 {
						continue
					}
					forwards[r]++
					if p, _ := dtree(n, k, tree); p != r || k == r || k >= n {
						t.Fatalf("%d ranks, tree %d: %d has child %d, whose parent is %d", n, tree, r, k, p)
					}
				}
				for seen, x := 0, r; x >= 0; x, _ = dtree(n, x, tree) {
					if seen++; seen > n {
						t.Fatalf("%d ranks, tree %d: %d never reaches the root", n, tree, r)
					}
				}
			}
			if roots != 1 {
				t.Errorf("%d ranks, tree %d: %d roots", n, tree, roots)
			}
		}
		both := 0
		for r := range n {
			_, k0 := dtree(n, r, 0)
			_, k1 := dtree(n, r, 1)
			if max(k0[0], k0[1]) >= 0 && max(k1[0], k1[1]) >= 0 {
				both++
			}
		}
		if both > 1 {
			t.Errorf("%d ranks: %d members forward in both trees", n, both)
		}
	}
}

// TestTrainingTree: NCCL's tree all-reduce among 16 ranks on two sites
// whose host links take 100 us each way. For 64 KiB a chunk climbs the
// tree's four levels and comes down again, where the ring's 30 steps
// each take a hop; for 64 MiB the double tree moves as many bytes as the
// ring, each member sending about as much, so it takes about the ring's
// time where one binary tree would take half as long again.
func TestTrainingTree(t *testing.T) {
	const hostDelay = 100 * monotime.Microsecond
	run := func(tree bool, size int64) TrainingResult {
		ranks := make([]*chakra.Trace, 16)
		for r := range ranks {
			ranks[r] = &chakra.Trace{Nodes: []chakra.Node{collNode(1, chakra.AllReduce, size)}}
		}
		job, err := chakra.NewJob(ranks)
		if err != nil {
			t.Fatal(err)
		}
		top := topology.TwoSites(engine.New(1), topology.TwoSitesConfig{HostsPerSite: 8, HostRate: 100e9, HostDelay: hostDelay,
			TrunkRate: 400e9, TrunkDelay: monotime.Microsecond, TrunkLoss: func() network.LossModel { return network.Bernoulli{} }})
		res, err := RunTraining(top, TrainingConfig{Job: job, Tree: tree, Scheme: reliability.SelectiveRepeat{NACK: true},
			Core: coreConfig(2 * monotime.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	hop := 2 * hostDelay
	for _, size := range []int64{64 << 10, 64 << 20} {
		ring, tree := run(false, size), run(true, size)
		t.Logf("%d KiB: ring %v, tree %v", size>>10, ring.Time, tree.Time)
		if ring.Stats.DataBytes != tree.Stats.DataBytes {
			t.Errorf("%d bytes: the ring moved %d bytes, the tree %d", size, ring.Stats.DataBytes, tree.Stats.DataBytes)
		}
		switch {
		case size == 64<<10 && (tree.Time < 8*hop || tree.Time > 12*hop || ring.Time < 30*hop):
			t.Errorf("64 KiB: tree %v, ring %v; want the tree's 8 hops (%v) and the ring's 30", tree.Time, ring.Time, 8*hop)
		case size == 64<<20 && (tree.Time > ring.Time*11/10):
			t.Errorf("64 MiB: tree %v, ring %v; want the double tree within 10%% of the ring", tree.Time, ring.Time)
		}
	}
}

// TestTrainingMixedCollectives: all-reduces and all-to-alls in turn in
// one group of four GPUs in two servers, three iterations, so ring steps
// and all-to-all shares both cross the servers' links on the same
// members: every collective ends, and the bytes through the network are
// exactly those of the hops between servers.
func TestTrainingMixedCollectives(t *testing.T) {
	const size = 1 << 20
	ranks := make([]*chakra.Trace, 4)
	for r := range ranks {
		ranks[r] = &chakra.Trace{Nodes: []chakra.Node{collNode(1, chakra.AllReduce, size), collNode(2, chakra.AllToAll, size, 1),
			collNode(3, chakra.AllReduce, size, 2), collNode(4, chakra.AllToAll, size, 3)}}
	}
	job, err := chakra.NewJob(ranks)
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunTraining(ringTopology(engine.New(1), 4, 0), TrainingConfig{Job: job, Iterations: 3,
		Servers: ServerLinks{GPUs: 2, Rate: 3600e9, Latency: 2 * monotime.Microsecond},
		Scheme:  reliability.SelectiveRepeat{NACK: true}, Core: coreConfig(2 * monotime.Millisecond)})
	if err != nil {
		t.Fatal(err)
	}
	// Per iteration: two all-reduces, each 6 steps of a quarter on each
	// of the two hops between servers; two all-to-alls, each rank a
	// quarter to each of the two GPUs of the other server.
	want := uint64(3 * (2*2*6*size/4 + 2*4*2*size/4))
	if res.Stats.DataBytes != want || len(res.Iterations) != 3 {
		t.Errorf("%d bytes through the network in %d iterations, want %d in 3", res.Stats.DataBytes, len(res.Iterations), want)
	}
}

// TestTrainingChannels: a ring all-reduce among 8 ranks alternating
// between two leaves, so every hop crosses the 4 spines (NSCC, E-ECMP):
// on more channels it moves the same bytes on more connections, each
// with entropy of its own, which the switches spread over the spines,
// where one channel's 4 flows each way share them as their hashes fall.
func TestTrainingChannels(t *testing.T) {
	const size = 32 << 20
	run := func(channels int) TrainingResult {
		ranks := make([]*chakra.Trace, 8)
		for r := range ranks {
			ranks[r] = &chakra.Trace{Nodes: []chakra.Node{collNode(1, chakra.AllReduce, size)}}
		}
		job, err := chakra.NewJob(ranks)
		if err != nil {
			t.Fatal(err)
		}
		cfg := dcConfig(100e9, topology.EECMP)
		cfg.TierQueue = []int{256 << 10}
		cfg.ECN = []network.ECN{{Min: 32 << 10, Max: 128 << 10, PMax: 0.2}}
		f, err := topology.LeafSpine(engine.New(1), 2, 4, 4, cfg)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := cc.Parse("nscc")
		res, err := RunTraining(&f.Topology, TrainingConfig{Job: job, Hosts: []int{0, 4, 1, 5, 2, 6, 3, 7}, Channels: channels,
			Scheme: reliability.SelectiveRepeat{NACK: true}, Core: core.Config{InitialRTT: 20 * monotime.Microsecond,
				CC: a, LineRate: 100e9, BaseRTT: 8 * monotime.Microsecond}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	one, four, eight := run(1), run(4), run(8)
	bound := monotime.Duration(2*7) * monotime.TransmitTime(size/8, 100e9)
	t.Logf("1 channel %v, 4 channels %v, 8 channels %v; bound %v", one.Time, four.Time, eight.Time, bound)
	if one.Time < bound || !(eight.Time < four.Time && four.Time < one.Time*3/4) {
		t.Errorf("1, 4 and 8 channels took %v, %v and %v (bound %v): want each more channels sooner, 4 by a quarter", one.Time, four.Time, eight.Time, bound)
	}
	if one.Stats.DataBytes != four.Stats.DataBytes || one.Stats.DataBytes != eight.Stats.DataBytes {
		t.Errorf("bytes through the network: %d, %d and %d", one.Stats.DataBytes, four.Stats.DataBytes, eight.Stats.DataBytes)
	}
	if again := run(4); !reflect.DeepEqual(four, again) {
		t.Errorf("a second replay on 4 channels differs")
	}
}

// TestTrainingBackground: another job's flows beside a training job
// share its uplink, so its all-reduce takes longer; they run on their
// own hosts from when the job starts, and one on a host of the job is
// refused, naming both.
func TestTrainingBackground(t *testing.T) {
	ranks := make([]*chakra.Trace, 2)
	for r := range ranks {
		ranks[r] = &chakra.Trace{Nodes: []chakra.Node{collNode(1, chakra.AllReduce, 16<<20)}}
	}
	job, err := chakra.NewJob(ranks)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cc.Parse("nscc")
	ccfg := core.Config{InitialRTT: 20 * monotime.Microsecond, CC: a, LineRate: 100e9, BaseRTT: 8 * monotime.Microsecond}
	run := func(bg []Flow) (TrainingResult, error) {
		cfg := dcConfig(100e9, topology.EECMP)
		cfg.TierQueue = []int{256 << 10}
		cfg.ECN = []network.ECN{{Min: 32 << 10, Max: 128 << 10, PMax: 0.2}}
		f, err := topology.LeafSpine(engine.New(1), 2, 1, 4, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return RunTraining(&f.Topology, TrainingConfig{Job: job, Hosts: []int{0, 4}, Scheme: reliability.SelectiveRepeat{NACK: true},
			Core: ccfg, Background: bg, BackgroundConfig: FlowsConfig{Scheme: reliability.SelectiveRepeat{NACK: true}, Core: ccfg}})
	}
	alone, err := run(nil)
	if err != nil {
		t.Fatal(err)
	}
	bg := []Flow{{Src: 1, Dst: 5, Bytes: 64 << 20}, {Src: 2, Dst: 6, Bytes: 64 << 20}, {Src: 3, Dst: 7, Bytes: 64 << 10, At: 100 * monotime.Microsecond}}
	shared, err := run(bg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("alone %v; beside two long flows %v, background moved %d bytes", alone.Time, shared.Time, shared.Background.Stats.DataBytes)
	if shared.Time < alone.Time*3/2 {
		t.Errorf("the all-reduce took %v beside two flows on its uplink, %v alone: want at least 1.5x", shared.Time, alone.Time)
	}
	short := shared.Background.FCT(2)
	if shared.Background.Done[2] == 0 || short <= 0 || shared.Background.Stats.DataBytes == 0 {
		t.Errorf("background: the short flow took %v, %d bytes moved", short, shared.Background.Stats.DataBytes)
	}
	if _, err := run([]Flow{{Src: 1, Dst: 4, Bytes: 1 << 20}}); err == nil || !strings.Contains(err.Error(), "host 4, which runs rank 1") {
		t.Errorf("a background flow to a host of the job: %v", err)
	}
}
