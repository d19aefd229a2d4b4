package scenario

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/sim"
	"github.com/sdrnet/sdrnet/sim/chakra"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/hostmodel"
	"github.com/sdrnet/sdrnet/sim/network"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// Datacenter scenarios: a fabric (leaf-spine, fat-tree or Meta's zones),
// a collective or traffic pattern among a group of hosts, optional
// background traffic and link failures.

func isFabric(kind string) bool { return kind == "leafspine" || kind == "fattree" || kind == "meta" }

// buildFabric makes the point's fabric.
func buildFabric(eng *engine.Engine, v *values) (*topology.Fabric, error) {
	hostRate := v.float("topology.host_rate")
	kind := v.pt.Values["topology.kind"]
	fabricRate, err := uplinkRate(v, kind)
	if err != nil {
		return nil, err
	}
	delay := v.duration("topology.link_delay")
	coreRate, coreDelay := v.float("topology.core_rate"), v.duration("topology.core_delay")
	if coreRate == 0 {
		coreRate = fabricRate
	}
	if _, set := v.pt.Values["topology.core_delay"]; !set {
		coreDelay = delay
	}
	queue := v.int("topology.queue")
	ecn := network.ECN{Min: v.int("topology.ecn"), Max: max(v.int("topology.ecn"), v.int("topology.ecn_max")), PMax: v.float("topology.ecn_pmax")}
	if ecn.Max > ecn.Min && ecn.PMax == 0 {
		return nil, fmt.Errorf("topology.ecn_pmax is 0: RED between topology.ecn and topology.ecn_max would mark nothing; set it in (0, 1]")
	}
	bal, _ := v.get("routing.balancer").(topology.BalancerKind)
	cfg := topology.FabricConfig{HostRate: hostRate, HostDelay: delay,
		TierRate: []float64{fabricRate, coreRate}, TierDelay: []monotime.Duration{delay, coreDelay},
		ECN: []network.ECN{ecn}, BufferAlpha: v.float("topology.buffer_alpha"),
		ControlInLine: v.pt.Values["topology.control_priority"] == "off",
		Balancer:      topology.Balancer{Kind: bal, FlowletGap: v.duration("routing.flowlet_gap")}}
	// A switch's memory is either partitioned per port (queue) or shared
	// by its ports (buffer), the two ways switches are configured.
	if buf := v.int("topology.buffer"); buf > 0 {
		cfg.SwitchBuffer = []int{buf, max(buf, v.int("topology.deep_buffer"))}
	} else {
		cfg.TierQueue = []int{queue, max(queue, v.int("topology.deep_queue"))}
	}
	if v.pt.Values["topology.pfc"] == "on" {
		xoff := v.int("topology.pfc_xoff")
		xon := v.int("topology.pfc_xon")
		if xon == 0 {
			xon = xoff / 2
		}
		if xon > xoff {
			return nil, fmt.Errorf("topology.pfc_xon %d bytes is above topology.pfc_xoff %d: resume must be at or below pause", xon, xoff)
		}
		cfg.PFC = &network.PFC{XOff: xoff, XOn: xon, Headroom: v.int("topology.pfc_headroom"), Watchdog: v.duration("topology.pfc_watchdog")}
	}
	perLeaf := v.int("topology.hosts_per_leaf")
	switch kind {
	case "leafspine":
		return topology.LeafSpine(eng, v.int("topology.leaves"), v.int("topology.spines"), perLeaf, cfg)
	case "fattree":
		if v.pt.Values["topology.k"] == "auto" {
			return nil, fmt.Errorf("topology.k auto: no fat-tree up to k=64 holds workload.hosts %s; lower workload.hosts", v.pt.Values["workload.hosts"])
		}
		return topology.FatTree(eng, v.int("topology.k"), cfg)
	default:
		return topology.MetaClos(eng, v.int("topology.zones"), v.int("topology.leaves"), perLeaf,
			v.int("topology.spines"), v.int("topology.atsw"), cfg)
	}
}

// uplinkRate is the rate of the cables above the racks: fabric_rate, or
// what topology.oversubscription asks for (the hosts' bandwidth into a
// rack switch over its uplinks' bandwidth), or the host rate.
func uplinkRate(v *values, kind string) (float64, error) {
	hostRate, fabricRate := v.float("topology.host_rate"), v.float("topology.fabric_rate")
	over := v.float("topology.oversubscription")
	if over == 0 {
		if fabricRate == 0 {
			return hostRate, nil
		}
		return fabricRate, nil
	}
	if fabricRate != 0 {
		return 0, fmt.Errorf("topology.fabric_rate and topology.oversubscription both set: set one (the other follows)")
	}
	hosts, uplinks := v.int("topology.hosts_per_leaf"), v.int("topology.spines")
	if kind == "fattree" {
		hosts, uplinks = v.int("topology.k")/2, v.int("topology.k")/2
	}
	return float64(hosts) * hostRate / (float64(uplinks) * over), nil
}

// placeGroup picks the hosts of the job: the first n hosts (packed: whole
// racks, the ring mostly inside racks), or n hosts drawn at random from
// the whole fabric (fragmented: what a busy cluster's scheduler hands
// out), ordered rack by rack in turn so every hop of the ring crosses the
// fabric, as when a job's ranks are scattered. Where hosts are GPUs in
// servers of perServer (more than 1), a scheduler hands out whole
// servers: fragmented draws servers, and consecutive ranks fill each
// one's GPUs, so a tensor-parallel group stays on its server's links.
func placeGroup(rng *rand.Rand, f *topology.Fabric, n int, fragmented bool, perRack, perServer int) []int {
	hosts := len(f.Hosts)
	n = min(n, hosts)
	if !fragmented {
		group := make([]int, n)
		for i := range group {
			group[i] = i
		}
		return group
	}
	unit := max(perServer, 1)
	units := min((n+unit-1)/unit, hosts/unit) // fewer than the job needs: the caller says so
	chosen := rng.Perm(hosts / unit)[:units]
	slices.Sort(chosen)
	racks := map[int][]int{}
	var order []int
	for _, u := range chosen {
		r := u * unit / max(perRack, 1)
		if len(racks[r]) == 0 {
			order = append(order, r)
		}
		racks[r] = append(racks[r], u)
	}
	group := make([]int, 0, n)
	for left := units; left > 0 && len(group) < n; {
		for _, r := range order {
			if len(racks[r]) > 0 {
				for g := 0; g < unit && len(group) < n; g++ {
					group = append(group, racks[r][0]*unit+g)
				}
				racks[r] = racks[r][1:]
				left--
			}
		}
	}
	return group
}

// fabricFlows builds the point's traffic, iterations one after another.
func fabricFlows(eng *engine.Engine, v *values, f *topology.Fabric, group []int) ([]sim.Flow, []int, error) {
	size, count := v.int("workload.size"), max(v.int("workload.count"), 1)
	var all []sim.Flow
	var iterEnds []int // index past the last flow of each iteration
	prevLast := []int(nil)
	stepBase := 0
	for range count {
		var flows []sim.Flow
		switch kind := v.pt.Values["workload.kind"]; kind {
		case "allreduce":
			flows = sim.RingAllReduceRounds(group, size, ringRounds(v, len(group)))
		case "permutation":
			flows = sim.Permutation(eng, group, size)
		case "alltoall":
			flows = sim.AllToAll(group, size)
		case "incast":
			flows = sim.Incast(group[1:], group[0], size)
		default:
			return nil, nil, fmt.Errorf("workload.kind %q needs topology.kind longhaul or dumbbell", kind)
		}
		base, lastStep := len(all), stepBase
		// The flows nobody in this iteration waits for end it.
		waited := make([]bool, len(flows))
		for i := range flows {
			for j, d := range flows[i].After {
				if d >= 0 && d < len(flows) { // else RunFlows says which
					waited[d] = true
				}
				flows[i].After[j] += base
			}
			if flows[i].Step > 0 { // every iteration's steps are its own
				flows[i].Step += stepBase
				lastStep = max(lastStep, flows[i].Step)
			}
		}
		var last []int
		for i := range flows {
			if len(flows[i].After) == 0 { // a round-one flow waits for the previous iteration
				flows[i].After = prevLast // one slice: the flows wait as a group (sim.Flow)
			}
			if !waited[i] {
				last = append(last, base+i)
			}
		}
		prevLast = last
		if all == nil { // iterations are alike: one array for all
			all = make([]sim.Flow, 0, count*len(flows))
		}
		all = append(all, flows...)
		iterEnds = append(iterEnds, len(all))
		stepBase = lastStep
	}
	return all, iterEnds, nil
}

// ringRounds is how many rounds of a ring AllReduce of n hosts the point
// runs: workload.rounds, or all 2(n-1).
func ringRounds(v *values, n int) int {
	if r := v.int("workload.rounds"); r > 0 {
		return min(r, 2*(n-1))
	}
	return 2 * (n - 1)
}

// runFabricPoint simulates one datacenter grid point. Placement and which
// links fail come from the scenario's seed alone (or
// workload.placement_seed), so every cell of a grid compares routing and
// transport on the same job and the same failures; a list of placement
// seeds repeats the comparison on other placements.
//
// threads > 0 runs it split by racks (topology.Fabric.Split) on that many
// threads; ThreadsAuto on one, where the fabric is large (AutoSplitHosts).
func runFabricPoint(eng *engine.Engine, v *values, cell *Cell, scenarioSeed uint64, threads int, job *chakra.Job) (sim.TransferStats, []monotime.Duration, error) {
	placement := scenarioSeed
	if ps := uint64(v.int("workload.placement_seed")); ps != 0 {
		placement = ps
	}
	rng := rand.New(rand.NewPCG(placement, 0xfab))
	f, err := buildFabric(eng, v)
	if err == nil {
		f.Net.Overhead += v.authBytes()
	}
	if err != nil {
		return sim.TransferStats{}, nil, err
	}
	perRack := v.int("topology.hosts_per_leaf")
	if v.pt.Values["topology.kind"] == "fattree" {
		perRack = v.int("topology.k") / 2
	}
	ranks := v.int("workload.hosts")
	if job != nil {
		ranks = len(job.Ranks)
	}
	perServer := 1
	if job != nil {
		perServer = v.int("topology.gpus_per_server")
	}
	fragmented := v.pt.Values["workload.placement"] == "fragmented"
	group := placeGroup(rng, f, ranks, fragmented, perRack, perServer)
	if len(group) < 2 || len(group) < ranks {
		what := fmt.Sprintf("workload.hosts %d", ranks)
		if job != nil {
			what = fmt.Sprintf("the training job's %d ranks", ranks)
		}
		if fragmented && perServer > 1 && ranks <= len(f.Hosts) {
			return sim.TransferStats{}, nil, fmt.Errorf("%s on a fabric of %d hosts: a fragmented placement hands out whole servers of %d GPUs (topology.gpus_per_server), and the fabric holds %d of them, %d GPUs; use a larger fabric or packed placement",
				what, len(f.Hosts), perServer, len(f.Hosts)/perServer, len(f.Hosts)/perServer*perServer)
		}
		return sim.TransferStats{}, nil, fmt.Errorf("%s on a fabric of %d hosts: the job needs at least 2 hosts, and no more than the fabric has", what, len(f.Hosts))
	}
	var flows []sim.Flow
	var iterEnds []int
	if job == nil {
		if flows, iterEnds, err = fabricFlows(eng, v, f, group); err != nil {
			return sim.TransferStats{}, nil, err
		}
	}
	jobFlows := len(flows)
	flows = append(flows, background(eng, v, f, group)...)
	scheme, chooser := v.scheme()
	sel, _ := v.get("transport.select").(path.Kind)
	rtt := 12 * v.duration("topology.link_delay") // up and down a three-tier fabric
	fc := sim.FlowsConfig{Scheme: scheme, QPs: v.int("transport.qps"), Select: sel, Limit: v.duration("workload.limit"),
		Admission: v.int("transport.admission"),
		Core: core.Config{MTU: v.int("transport.mtu"), ChunkSize: v.int("transport.chunk"), InitialRTT: max(rtt, 10*monotime.Microsecond),
			MaxMsgs: 16, MaxBytesInFlight: int64(v.int("transport.window")), Rate: v.float("topology.host_rate"),
			CC: v.congestion(), BaseRTT: rtt, Chooser: chooser,
			SelectTuning: path.Tuning{DWRRWindowRTTs: v.int("transport.dwrr_window")}}}
	if bal, _ := v.get("routing.balancer").(topology.BalancerKind); bal == topology.TE {
		f.Engineer(demands(flows, max(fc.QPs, 1)))
	}
	if threads == ThreadsAuto && len(f.Hosts) >= AutoSplitHosts {
		threads = 1
	}
	if threads > 0 {
		if err := splitFabric(eng, f, threads, perServer, &fc); err != nil {
			return sim.TransferStats{}, nil, err
		}
	}
	if err := scheduleFailures(eng, rng, v, f, flows, fc); err != nil {
		return sim.TransferStats{}, nil, err
	}
	attachHostMemory(f.Hosts, hostMemory(v))
	ud, _ := scheme.(interface{ Datagram() bool })
	for _, h := range f.Hosts {
		h.Datagram = ud != nil && ud.Datagram()
		if n := v.int("nic.qp_cache"); n > 0 {
			h.Contexts = hostmodel.NewContextCache(n, v.duration("nic.qp_miss"))
		}
	}
	var sampler *topology.QueueSampler
	if every := v.duration("metrics.queue_sample"); every > 0 {
		sampler = topology.SampleQueues(eng, f, every)
	}
	if job != nil {
		if fc.Admission > 0 {
			return sim.TransferStats{}, nil, fmt.Errorf("transport.admission %d: a training job runs without admission for now; set 0", fc.Admission)
		}
		fc.Core.Paths, fc.Core.Select = max(fc.QPs, 1), sel // as RunFlows spreads a connection
		res, err := runTraining(&f.Topology, v, job, group, fc.Core, flows, fc, cell)
		if err != nil {
			return res.Stats, nil, err
		}
		now, events := runEnd(eng, f)
		fabricMetrics(f, sampler, res.Reordering, now, cell)
		cell.Events, cell.SimTime = events, monotime.Duration(now).Seconds()
		return res.Stats, res.Iterations, nil
	}
	res, err := sim.RunFlows(&f.Topology, flows, fc)
	if err != nil {
		return res.Stats, nil, err
	}
	// Per iteration of the job: from its first flow's start to its last
	// flow's arrival.
	var times []monotime.Duration
	from := 0
	for _, end := range iterEnds {
		first, last := res.Start[from], res.Done[from]
		for i := from; i < end; i++ {
			first, last = min(first, res.Start[i]), max(last, res.Done[i])
		}
		times = append(times, last.Sub(first))
		from = end
	}
	if k := v.pt.Values["workload.kind"]; k == "allreduce" || k == "alltoall" {
		fcts := make([]float64, jobFlows)
		for i := range jobFlows {
			fcts[i] = res.FCT(i).Seconds()
		}
		slices.Sort(fcts)
		cell.FCTP50, cell.FCTP99 = Percentile(fcts, 0.5), Percentile(fcts, 0.99)
	}
	if k := v.pt.Values["workload.kind"]; k == "permutation" || k == "incast" {
		times = times[:0] // per flow completion
		for i := range jobFlows {
			times = append(times, res.FCT(i))
		}
	}
	now, events := runEnd(eng, f)
	fabricMetrics(f, sampler, res.Reordering, now, cell)
	cell.Events, cell.SimTime = events, monotime.Duration(now).Seconds()
	if v.pt.Values["workload.kind"] == "allreduce" && len(times) > 0 {
		var sum monotime.Duration
		for _, d := range times {
			sum += d
		}
		n := float64(len(group))
		mean := (sum / monotime.Duration(len(times))).Seconds()
		// NCCL's bus bandwidth, size/time x 2(N-1)/N, is the bytes each
		// host sent over time: a share per round.
		cell.BusBWBps = float64(v.int("workload.size")) * 8 / mean * float64(ringRounds(v, len(group))) / n
	}
	return res.Stats, times, nil
}

// splitFabric splits f by racks to run on threads threads, once the
// fabric's routes are in place; a training job's servers of together GPUs
// each keep to one part.
func splitFabric(eng *engine.Engine, f *topology.Fabric, threads, together int, fc *sim.FlowsConfig) error {
	if _, err := f.Split(eng.Rand().Uint64(), together); err != nil {
		return fmt.Errorf("threads %d: %w; set threads to 0", threads, err)
	}
	fc.Threads = threads
	return nil
}

// runEnd is where the run stopped and the events it ran: in parts, the
// latest part's clock and every part's events, their counters gathered.
func runEnd(eng *engine.Engine, f *topology.Fabric) (monotime.Time, uint64) {
	g := f.Group
	if g == nil {
		return eng.Now(), eng.Processed()
	}
	f.Gather()
	now := monotime.Time(0)
	for i := range g.Parts() {
		now = max(now, g.Part(i).Now())
	}
	return now, g.Processed()
}

// background adds on/off traffic between hosts outside the job.
func background(eng *engine.Engine, v *values, f *topology.Fabric, group []int) []sim.Flow {
	frac := v.float("workload.background")
	if frac <= 0 {
		return nil
	}
	in := map[int]bool{}
	for _, h := range group {
		in[h] = true
	}
	var others []int
	for h := range f.Hosts {
		if !in[h] {
			others = append(others, h)
		}
	}
	if len(others) < 2 {
		others = group // no spare hosts: the job's hosts carry it too
	}
	n := max(int(frac*float64(len(others))), 1)
	var pairs [][2]int
	for i := range n {
		pairs = append(pairs, [2]int{others[i%len(others)], others[(i+len(others)/2+1)%len(others)]})
	}
	return sim.OnOff(eng, pairs, v.int("workload.bg_size"), v.duration("workload.bg_period"), v.duration("workload.bg_until"))
}

func demands(flows []sim.Flow, qps int) []topology.Demand {
	var d []topology.Demand
	for _, fl := range flows {
		for q := range qps {
			d = append(d, topology.Demand{Src: int32(fl.Src), Dst: int32(fl.Dst), Entropy: uint16(q), Bytes: int64(fl.Bytes / qps)})
		}
	}
	return d
}

// scheduleFailures cuts failure.links cables of the fabric's upper tiers
// and fails failure.switches switches above the racks (every cable of
// theirs) at failure.at; routing reconverges after failure.detect, and TE
// re-places the flows. With failure.recover they come back that long
// after failing, and routing converges again after the same delay.
func scheduleFailures(eng *engine.Engine, rng *rand.Rand, v *values, f *topology.Fabric, flows []sim.Flow, fc sim.FlowsConfig) error {
	nLinks, nSwitches := v.int("failure.links"), v.int("failure.switches")
	if nLinks <= 0 && nSwitches <= 0 {
		return nil
	}
	var cables [][2]int32
	for _, p := range f.Ports {
		if p.Tier >= 1 && p.From < p.To {
			cables = append(cables, [2]int32{p.From, p.To})
		}
	}
	rng.Shuffle(len(cables), func(i, j int) { cables[i], cables[j] = cables[j], cables[i] })
	cut := cables[:min(nLinks, len(cables))]
	var upper []int
	for i, s := range f.FSwitch {
		if s.Level >= 1 {
			upper = append(upper, i)
		}
	}
	if nSwitches > len(upper) {
		return fmt.Errorf("failure.switches %d: the fabric has %d switches above its racks", nSwitches, len(upper))
	}
	rng.Shuffle(len(upper), func(i, j int) { upper[i], upper[j] = upper[j], upper[i] })
	for _, i := range upper[:nSwitches] {
		for _, p := range f.Ports {
			if p.From == f.SwitchNode(i) {
				cut = append(cut, [2]int32{p.From, p.To})
			}
		}
	}
	at, detect, recover := v.duration("failure.at"), v.duration("failure.detect"), v.duration("failure.recover")
	bal, _ := v.get("routing.balancer").(topology.BalancerKind)
	// A failure changes the whole fabric at once: an event on one engine,
	// a change between windows in parts.
	whole := func(t monotime.Time, fn func(t monotime.Time)) {
		if g := f.Group; g != nil {
			g.AtAll(t, fn)
			return
		}
		eng.At(t, engine.HandlerFunc(func(e *engine.Engine, _ uint64) { fn(e.Now()) }), 0)
	}
	converge := func(monotime.Time) {
		f.Reroute()
		if bal == topology.TE {
			f.Engineer(demands(flows, max(fc.QPs, 1)))
		}
	}
	set := func(up bool) func(monotime.Time) {
		return func(t monotime.Time) {
			for _, c := range cut {
				_ = f.SetCable(c[0], c[1], up)
			}
			whole(t.Add(detect), converge)
		}
	}
	start := eng.Now()
	whole(start.Add(at), set(false))
	if recover > 0 {
		whole(start.Add(at+recover), set(true))
	}
	return nil
}

// fabricMetrics fills the cell's fabric-wide figures: queue depths of
// switch ports, link utilization of the fabric tier, drops, ECN marks,
// PFC pauses, reordering at the receivers, and the same broken down by
// tier, with queue depths over time where sampled. A tier's pauses are
// those of the ports sending into it (host NICs in the host tier).
func fabricMetrics(f *topology.Fabric, sampler *topology.QueueSampler, res sim.Reordering, now monotime.Time, cell *Cell) {
	var maxes, utils []float64
	tierUtils := make([][]float64, len(f.Tiers))
	cell.Tiers = make([]TierMetrics, len(f.Tiers))
	for i, name := range f.Tiers {
		cell.Tiers[i].Name = name
	}
	for _, p := range f.Ports {
		if p.Tier >= len(f.Tiers) {
			continue
		}
		tm := &cell.Tiers[p.Tier]
		pause := p.Pause(now)
		tm.Pauses += pause.Pauses
		tm.WatchdogTrips += pause.WatchdogTrips
		tm.PausedSec += pause.Paused.Seconds()
		if p.In != nil {
			tm.HeadroomDrops += p.In.Drops
		}
		if int(p.From) < len(f.Hosts) {
			continue // a NIC: it queues what its host has not paced out yet
		}
		q := p.E
		tm.Ports++
		tm.PeakBytes = max(tm.PeakBytes, q.Stats.MaxBytes)
		tm.Drops += q.Stats.Dropped
		tm.Marked += q.Stats.Marked
		util := 0.0
		if now > 0 {
			util = float64(q.Stats.SentBytes) * 8 / (q.Rate * monotime.Duration(now).Seconds())
		}
		tierUtils[p.Tier] = append(tierUtils[p.Tier], util)
		if p.Tier < 1 {
			continue
		}
		maxes = append(maxes, float64(q.Stats.MaxBytes))
		if now > 0 {
			utils = append(utils, util)
			cell.QueueMeanBytes += q.Stats.ByteTime / float64(now)
		}
	}
	for i := range cell.Tiers {
		tm, u := &cell.Tiers[i], tierUtils[i]
		cell.Drops += tm.Drops + tm.HeadroomDrops
		cell.Marked += tm.Marked
		cell.Pauses += tm.Pauses
		cell.WatchdogTrips += tm.WatchdogTrips
		slices.Sort(u)
		if len(u) > 0 {
			tm.UtilP10, tm.UtilP50, tm.UtilP90 = Percentile(u, 0.1), Percentile(u, 0.5), Percentile(u, 0.9)
			tm.UtilP99, tm.UtilMax = Percentile(u, 0.99), u[len(u)-1]
		}
		if sampler == nil {
			continue
		}
		deepest, width := sampler.Series(i)
		tm.QueueSeries, tm.QueueSeriesBinSec = slices.Clone(deepest), width.Seconds()
		if h := sampler.Tier(i); h != nil && h.Count() > 0 {
			tm.QueueP50Bytes, tm.QueueP99Bytes, tm.QueueMaxBytes = float64(h.Quantile(0.5)), float64(h.Quantile(0.99)), float64(h.Quantile(1))
		}
	}
	slices.Sort(maxes)
	slices.Sort(utils)
	if len(maxes) > 0 {
		cell.QueueMaxBytes = int(maxes[len(maxes)-1])
		cell.QueueP99Bytes = Percentile(maxes, 0.99)
		cell.QueueMeanBytes /= float64(len(maxes))
	}
	if len(utils) > 0 {
		cell.UtilP10, cell.UtilP50, cell.UtilP90 = Percentile(utils, 0.1), Percentile(utils, 0.5), Percentile(utils, 0.9)
		cell.UtilP99, cell.UtilMax = Percentile(utils, 0.99), utils[len(utils)-1]
	}
	cell.OutOfOrder = res.OutOfOrder
	if res.Reordered > 0 {
		cell.ReorderMean = float64(res.ReorderDepth) / float64(res.Reordered)
	}
	cell.ReorderMax = res.MaxReorder
	if w := &f.Net.ControlWait; w.Count() > 0 {
		secs := func(q float64) float64 { return monotime.Duration(w.Quantile(q)).Seconds() }
		cell.CtrlWaitP50, cell.CtrlWaitP90, cell.CtrlWaitP99 = secs(0.5), secs(0.9), secs(0.99)
	}
	cell.Unroutable = f.Unroutable()
	cell.Hops = f.Net.Hops
	var uses, misses uint64
	for _, h := range f.Hosts {
		if c := h.Contexts; c != nil {
			uses, misses = uses+c.Hits+c.Misses, misses+c.Misses
			cell.NICStallSec += c.Stall.Seconds()
		}
	}
	if uses > 0 {
		cell.QPCacheMissRate = float64(misses) / float64(uses)
	}
	hostMemoryMetrics(f.Hosts, cell)
}
