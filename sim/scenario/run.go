package scenario

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/sdrnet/sdrnet/internal/autoscheme"
	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/lossmodel"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
	"github.com/sdrnet/sdrnet/sim"
	"github.com/sdrnet/sdrnet/sim/chakra"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/network"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// Cell is the result of one grid point.
type Cell struct {
	Index  int               `json:"index"`
	Label  string            `json:"label"`
	Params map[string]string `json:"params"`
	Seed   uint64            `json:"seed"`

	Runs int `json:"runs"`
	// Completion time statistics: per message at the receiver (messages
	// workload) or per collective (allreduce).
	Timing
	// GoodputBps is the bits moved per second of mean completion time.
	GoodputBps float64 `json:"goodput_bps"`
	// BusBWBps is NCCL's bus bandwidth for collectives, bit/s.
	BusBWBps float64 `json:"busbw_bps"`

	DataBytes   uint64 `json:"data_bytes"`
	RetxBytes   uint64 `json:"retx_bytes"`
	ParityBytes uint64 `json:"parity_bytes"`
	Recovered   uint64 `json:"recovered_packets"`
	Fallbacks   uint64 `json:"fallbacks"`
	RTOs        uint64 `json:"rtos"`

	TrunkLost      uint64  `json:"trunk_lost"`
	QueueMaxBytes  int     `json:"queue_max_bytes"`
	QueueMeanBytes float64 `json:"queue_mean_bytes"`
	// Fabric scenarios: the p99 over switch ports of each port's deepest
	// queue; link utilization of the fabric tier (p50, p99, max over
	// ports); drops at every switch (buffers and PFC headroom); ECN marks;
	// PFC pauses and watchdog trips; packets that arrived out of order,
	// and of the first transmissions among them the mean and largest
	// distance in packets (the out-of-order degree); packets with no
	// route while routing converged.
	QueueP99Bytes float64 `json:"queue_p99_bytes"`
	UtilP10       float64 `json:"util_p10"`
	UtilP50       float64 `json:"util_p50"`
	UtilP90       float64 `json:"util_p90"`
	UtilP99       float64 `json:"util_p99"`
	UtilMax       float64 `json:"util_max"`
	Drops         uint64  `json:"drops"`
	Marked        uint64  `json:"ecn_marked"`
	Pauses        uint64  `json:"pfc_pauses"`
	WatchdogTrips uint64  `json:"pfc_watchdog_trips"`
	OutOfOrder    uint64  `json:"out_of_order"`
	ReorderMean   float64 `json:"reorder_mean_pkts"`
	ReorderMax    uint64  `json:"reorder_max_pkts"`
	// Time control packets (CTS, ACK, NACK) waited in switch queues on
	// their way, percentiles over all of them, seconds.
	CtrlWaitP50 float64 `json:"ctrl_wait_p50_s"`
	CtrlWaitP90 float64 `json:"ctrl_wait_p90_s"`
	CtrlWaitP99 float64 `json:"ctrl_wait_p99_s"`
	Unroutable  uint64  `json:"unroutable"`
	// With nic.qp_cache: the share of packets whose connection context
	// missed the NIC's cache, and the time NICs stalled fetching
	// contexts, summed over hosts, seconds.
	QPCacheMissRate float64 `json:"qp_cache_miss_rate"`
	NICStallSec     float64 `json:"nic_stall_s"`
	// Fabric collectives (allreduce, alltoall): the p50 and p99 of the
	// job's flow completion times, each flow from when it could start to
	// when its receiver had every byte, seconds.
	FCTP50 float64 `json:"fct_p50_s"`
	FCTP99 float64 `json:"fct_p99_s"`
	// With the host memory path (host.translation, host.pinning): the
	// container's start-up time, seconds; the share of GPU-memory
	// translations that missed the NIC's ATC; the time during which a DMA
	// direction's next completion waited for a translation or a pin,
	// summed over directions and hosts, seconds; the
	// first-touch pins; and, for the messages workload, the goodput of
	// the first message (a pass over cold memory) and of the others
	// (warm), bit/s.
	StartupSec     float64 `json:"startup_s"`
	ATCMissRate    float64 `json:"atc_miss_rate"`
	DMAStallSec    float64 `json:"dma_stall_s"`
	PinFaults      uint64  `json:"pin_faults"`
	ColdGoodputBps float64 `json:"cold_goodput_bps"`
	WarmGoodputBps float64 `json:"warm_goodput_bps"`
	// Tiers breaks the fabric's switch ports down by tier, with queue
	// depths sampled over time (metrics.queue_sample).
	Tiers []TierMetrics `json:"tiers"`

	Events  uint64  `json:"events"`
	Hops    uint64  `json:"hops"`
	SimTime float64 `json:"sim_time_s"`
	// WallSec is real time spent; kept out of the output files, which
	// must be identical for the same scenario and seed.
	WallSec float64 `json:"-"`

	// AtSender times each message as the SDR-RDMA paper does, until the
	// sender hears the last ACK (section 4.2.1); the statistics above
	// time it at the receiver, when every byte is in place. Messages
	// workloads only.
	AtSender *Timing `json:"at_sender"`

	// Training is a training job's figures; nil for other workloads.
	Training *TrainingMetrics `json:"training"`

	// Model is the analytic prediction for the cell, where one applies.
	Model *Prediction `json:"model"`
}

// Timing summarizes completion times, in seconds.
type Timing struct {
	Mean        float64   `json:"mean_s"`
	P50         float64   `json:"p50_s"`
	P99         float64   `json:"p99_s"`
	P999        float64   `json:"p999_s"`
	Min         float64   `json:"min_s"`
	Max         float64   `json:"max_s"`
	StdErr      float64   `json:"stderr_s"` // of Mean: sample deviation / sqrt(runs)
	Completions []float64 `json:"completions_s"`
}

// TierMetrics describes one tier of a fabric's switch ports (tier 0 is
// the switches' ports toward hosts). Queue depths are samples of every
// port at every sampling instant, so p50 and p99 say how deep the queues
// stay, not only how deep the worst one got once (PeakBytes).
type TierMetrics struct {
	Name          string  `json:"name"`
	Ports         int     `json:"ports"`
	QueueP50Bytes float64 `json:"queue_p50_bytes"`
	QueueP99Bytes float64 `json:"queue_p99_bytes"`
	QueueMaxBytes float64 `json:"queue_max_bytes"` // deepest sample
	PeakBytes     int     `json:"peak_bytes"`      // deepest ever, exact
	UtilP10       float64 `json:"util_p10"`
	UtilP50       float64 `json:"util_p50"`
	UtilP90       float64 `json:"util_p90"`
	UtilP99       float64 `json:"util_p99"`
	UtilMax       float64 `json:"util_max"`
	Drops         uint64  `json:"drops"`
	Marked        uint64  `json:"ecn_marked"`
	HeadroomDrops uint64  `json:"pfc_headroom_drops"`
	Pauses        uint64  `json:"pfc_pauses"`
	PausedSec     float64 `json:"pfc_paused_s"` // summed over the tier's ports
	WatchdogTrips uint64  `json:"pfc_watchdog_trips"`
	// QueueSeries is the tier's deepest port over time, bin by bin of
	// QueueSeriesBinSec seconds from the start.
	QueueSeries       []int64 `json:"queue_series_bytes"`
	QueueSeriesBinSec float64 `json:"queue_series_bin_s"`
}

// Prediction is the analytic model's view of a cell. Where the cell has
// AtSender timings, the model times messages the same way (the paper's);
// else at the receiver.
type Prediction struct {
	AtSender bool    `json:"at_sender"`
	Mean     float64 `json:"mean_s,omitempty"` // absent where the model does not apply (Note says why)
	P999     float64 `json:"p999_s,omitempty"`
	Error    float64 `json:"rel_error,omitempty"` // (simulated - model) / model
	// StdErr, where the simulated mean strays beyond the tolerance and
	// beyond 3 of its own standard errors, is the standard error the
	// model predicts for a mean over the cell's runs: its Monte Carlo's
	// standard deviation over sqrt(runs). Rare losses leave a sample too
	// few costly events to measure its own spread; the model knows it.
	StdErr float64 `json:"stderr_s"`
	Note   string  `json:"note"`
	// Sampling: outside Tolerance, but within 3 standard errors (the
	// sample's or the model's), which sampling explains.
	Sampling bool `json:"-"`
	// Paper is the paper's own model (section 4.2: whole-chunk losses
	// and retries, one codeword per sub-message), beside ours, which
	// models what the implementation does.
	Paper *PaperPrediction `json:"paper"`
}

// PaperPrediction is the paper's model of a cell.
type PaperPrediction struct {
	Mean  float64 `json:"mean_s"`
	P999  float64 `json:"p999_s"`
	Error float64 `json:"rel_error"` // (simulated - paper model) / paper model
}

// Options control a run.
type Options struct {
	Full    bool // the whole grid, ignoring the quick overrides
	Workers int  // parallel grid points; zero: one per CPU
	// Progress, when set, is called after each finished cell.
	Progress func(done, total int)
}

// Run simulates every point of the grid, in parallel across points. Each
// point has its own engine and seed, so results do not depend on the
// number of workers.
func Run(s *Scenario, opt Options) ([]Cell, error) {
	points := s.Grid(opt.Full)
	cells := make([]Cell, len(points))
	errs := make([]error, len(points))
	done := 0
	RunEach(s, points, opt.Workers, func(i int, c Cell, err error) {
		cells[i], errs[i] = c, err
		done++
		if opt.Progress != nil {
			opt.Progress(done, len(points))
		}
	})
	for i, err := range errs {
		if err != nil {
			return cells, fmt.Errorf("cell %d (%s): %w", points[i].Index, points[i].Label(), err)
		}
	}
	return cells, nil
}

// RunEach simulates points on workers goroutines (zero: one per CPU) and
// calls done with each one's place in points and its result as it
// finishes, one call at a time.
func RunEach(s *Scenario, points []Point, workers int, done func(i int, c Cell, err error)) {
	if workers <= 0 {
		workers = runtime.NumCPU()
	}
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range min(workers, len(points)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := RunPoint(s, points[i])
				mu.Lock()
				done(i, c, err)
				mu.Unlock()
			}
		}()
	}
	for i := range points {
		next <- i
	}
	close(next)
	wg.Wait()
}

// CellSeed is the seed of pt's own random streams: the scenario's seed
// and the point's place in the grid.
func (s *Scenario) CellSeed(pt Point) uint64 { return s.Seed*1_000_003 + uint64(pt.Index) }

// values reads a point's parameters into typed values, keeping the first
// error.
type values struct {
	pt  Point
	err error
}

func (v *values) get(path string) any {
	raw, ok := v.pt.Values[path]
	if !ok {
		return nil
	}
	out, err := schema[path].parse(raw)
	if err != nil && v.err == nil {
		v.err = fmt.Errorf("%s: %q: %w", path, raw, err)
	}
	return out
}

func (v *values) int(path string) int {
	switch x := v.get(path).(type) {
	case int:
		return x
	case int64:
		return int(x)
	}
	return 0
}

func (v *values) float(path string) float64 {
	switch x := v.get(path).(type) {
	case float64:
		return x
	case bitRate:
		return float64(x)
	case kilometres:
		return float64(x)
	}
	return 0
}

// authBytes is what packet protection (transport.auth) adds to every
// packet on the wire: the simulator models the trailer's bytes, not the
// cryptography's CPU.
func (v *values) authBytes() int {
	if v.pt.Values["transport.auth"] == "none" || v.pt.Values["transport.auth"] == "" {
		return 0
	}
	return wire.TrailerLen
}

// scheme returns the cell's fixed scheme, or for "auto" a new chooser.
func (v *values) scheme() (reliability.Scheme, reliability.Chooser) {
	if _, ok := v.get("transport.scheme").(autoScheme); ok {
		return nil, autoscheme.New()
	}
	s, _ := v.get("transport.scheme").(reliability.Scheme)
	if sr, ok := s.(reliability.SelectiveRepeat); ok {
		sr.A = v.float("transport.rto_factor")
		s = sr
	}
	return s, nil
}

func (v *values) congestion() cc.Algorithm { x, _ := v.get("transport.cc").(cc.Algorithm); return x }

func (v *values) duration(path string) monotime.Duration {
	x, _ := v.get(path).(monotime.Duration)
	return x
}

// trunkDelay is the one-way delay between the sites: given directly, or
// from the distance, or by the kind of topology: a long-haul link is the
// SDR-RDMA paper's (12.5 ms, its 3750 km at 25 ms RTT), a dumbbell's
// bottleneck is 1 us.
func (v *values) trunkDelay() monotime.Duration {
	if _, ok := v.pt.Values["topology.trunk_delay"]; ok {
		return v.duration("topology.trunk_delay")
	}
	if _, ok := v.pt.Values["topology.distance"]; ok {
		return network.DelayForDistance(v.float("topology.distance"))
	}
	if v.pt.Values["topology.kind"] == "dumbbell" {
		return monotime.Microsecond
	}
	return 12500 * monotime.Microsecond
}

// rtt is the unloaded round trip between hosts at different sites.
func (v *values) rtt() monotime.Duration {
	return 2 * (v.trunkDelay() + 2*v.duration("topology.host_delay"))
}

// Predict evaluates the analytic model for every point of the grid,
// without simulating.
func Predict(s *Scenario, full bool) []Cell {
	points := s.Grid(full)
	cells := make([]Cell, len(points))
	for i, pt := range points {
		v := &values{pt: pt}
		cells[i] = Cell{Index: pt.Index, Label: pt.Label(), Params: pt.Values, Model: predict(v, Cell{}, v.rtt())}
	}
	return cells
}

// RunPoint simulates one grid point.
func RunPoint(s *Scenario, pt Point) (Cell, error) {
	v := &values{pt: pt}
	seed := s.CellSeed(pt)
	cell := Cell{Index: pt.Index, Label: pt.Label(), Params: pt.Values, Seed: seed}
	trunkDelay := v.trunkDelay()
	loss, burst := v.float("topology.loss"), v.float("topology.burst")
	hostRate := v.float("topology.host_rate")
	tcfg := topology.TwoSitesConfig{
		HostsPerSite: v.int("topology.hosts_per_site"),
		HostRate:     hostRate,
		HostDelay:    v.duration("topology.host_delay"),
		TrunkRate:    v.float("topology.trunk_rate"),
		TrunkDelay:   trunkDelay,
		QueueBytes:   v.int("topology.queue"),
		ECNThreshold: v.int("topology.ecn"),
		TrunkLoss: func() network.LossModel {
			if burst > 0 && loss > 0 {
				return &network.GilbertElliott{GilbertElliott: lossmodel.Bursty(loss, burst)}
			}
			return network.Bernoulli{P: loss}
		},
	}
	scheme, chooser := v.scheme()
	rtt := v.rtt()
	ccfg := core.Config{MTU: v.int("transport.mtu"), ChunkSize: v.int("transport.chunk"),
		InitialRTT: max(rtt, monotime.Microsecond), Rate: hostRate, CC: v.congestion(), BaseRTT: rtt,
		Chooser: chooser}
	size, count := v.int("workload.size"), v.int("workload.count")
	if budget := v.int("workload.bytes"); budget > 0 {
		count = min(count, max(v.int("workload.min_count"), budget/max(size, 1)))
	}
	kind, _ := v.get("workload.kind").(string)
	limit := v.duration("workload.limit")
	virtual := v.get("workload.payload") == "virtual"
	sites := v.int("topology.sites")
	if kind == "allreduce" { // the ring spans the sites, an equal share on each
		tcfg.HostsPerSite = (v.int("workload.hosts") + sites - 1) / sites
	}
	var job *chakra.Job
	if kind == "training" {
		var err error
		if job, err = trainingJob(s, v); err != nil {
			return cell, err
		}
		if !isFabric(v.pt.Values["topology.kind"]) { // ranks in order, an equal share of them at each site
			tcfg.HostsPerSite = (len(job.Ranks) + sites - 1) / sites
		}
	}
	if v.err != nil {
		return cell, v.err
	}
	eng := engine.New(seed)
	if isFabric(v.pt.Values["topology.kind"]) {
		start := time.Now()
		stats, times, err := runFabricPoint(eng, v, &cell, s.Seed, s.Threads, job)
		if err != nil {
			return cell, err
		}
		cell.WallSec = time.Since(start).Seconds()
		cell.Runs = len(times)
		summarize(&cell, times)
		if k := v.pt.Values["workload.kind"]; (k == "permutation" || k == "incast") && cell.Mean > 0 {
			cell.GoodputBps = float64(size) * 8 / cell.Mean // per flow
		}
		cell.DataBytes, cell.RetxBytes, cell.ParityBytes = stats.DataBytes, stats.RetxBytes, stats.ParityBytes
		cell.Recovered, cell.Fallbacks, cell.RTOs = stats.RecoveredPackets, stats.Fallbacks, stats.RTOs
		cell.Model = &Prediction{Note: "no analytic model for a datacenter fabric"}
		return cell, nil
	}
	top := topology.Sites(eng, sites, tcfg)
	top.Net.Overhead += v.authBytes()
	memory := hostMemory(v)
	attachHostMemory(top.Hosts, memory)
	start := time.Now()
	var completions, atSender []monotime.Duration
	var stats sim.TransferStats
	var streamed float64 // bit/s of a streamed messages workload
	switch kind {
	case "messages":
		depth := v.int("workload.depth")
		res, err := sim.RunMessages(top, 0, tcfg.HostsPerSite, sim.MessagesConfig{
			Size: size, Count: count, Depth: depth, Scheme: scheme, Core: ccfg, Limit: limit, Virtual: virtual})
		if err != nil {
			return cell, err
		}
		completions, atSender, stats = res.Completions, res.SenderCompletions, res.Stats
		if depth > 1 && res.Elapsed > 0 { // streamed: what the sender moved per second
			streamed = float64(size) * float64(count) * 8 / res.Elapsed.Seconds()
		}
		if memory != nil && len(completions) > 1 {
			cell.ColdGoodputBps = float64(size) * 8 / completions[0].Seconds()
			warm := timing(completions[1:])
			cell.WarmGoodputBps = float64(size) * 8 / warm.Mean
		}
	case "allreduce":
		if v.int("workload.rounds") != 0 {
			return cell, fmt.Errorf("workload.rounds runs part of a ring on fabrics (topology.kind leafspine, fattree or meta); over sites the ring runs whole: remove it")
		}
		res, err := sim.RunAllReduce(top, sim.AllReduceConfig{
			Hosts: v.int("workload.hosts"), Size: size, Count: count, Scheme: scheme, Core: ccfg,
			Limit: limit, Virtual: virtual})
		if err != nil {
			return cell, err
		}
		completions, stats = res.Completions, res.Stats
		cell.BusBWBps = res.BusBandwidth
	case "training":
		if v.float("workload.background") > 0 {
			return cell, fmt.Errorf("workload.background: background traffic beside a training job runs on fabrics (leafspine, fattree, meta), not on sites; set it to 0")
		}
		res, err := runTraining(top, v, job, nil, ccfg, nil, sim.FlowsConfig{}, &cell)
		if err != nil {
			return cell, err
		}
		completions, stats = res.Iterations, res.Stats
	}
	cell.WallSec = time.Since(start).Seconds()
	cell.Runs = len(completions)
	summarize(&cell, completions)
	if len(atSender) > 0 {
		t := timing(atSender)
		cell.AtSender = &t
	}
	if cell.Mean > 0 && kind != "training" {
		cell.GoodputBps = float64(size) * 8 / cell.Mean
	}
	if streamed > 0 {
		cell.GoodputBps = streamed
	}
	hostMemoryMetrics(top.Hosts, &cell)
	cell.DataBytes, cell.RetxBytes, cell.ParityBytes = stats.DataBytes, stats.RetxBytes, stats.ParityBytes
	cell.Recovered, cell.Fallbacks, cell.RTOs = stats.RecoveredPackets, stats.Fallbacks, stats.RTOs
	for _, l := range top.Trunk {
		cell.TrunkLost += l.Stats.Lost
	}
	q := top.TrunkQueue[0]
	cell.QueueMaxBytes = q.Stats.MaxBytes
	if now := eng.Now(); now > 0 {
		cell.QueueMeanBytes = q.Stats.ByteTime / float64(now)
	}
	cell.Events, cell.Hops = eng.Processed(), top.Net.Hops
	cell.SimTime = monotime.Duration(eng.Now()).Seconds()
	cell.Model = predict(v, cell, rtt)
	return cell, nil
}

// summarize fills the completion statistics of cell.
func summarize(cell *Cell, completions []monotime.Duration) {
	if len(completions) == 0 {
		return
	}
	cell.Timing = timing(completions)
}

// timing summarizes completion times (at least one).
func timing(completions []monotime.Duration) Timing {
	secs := make([]float64, len(completions))
	sum := 0.0
	for i, c := range completions {
		secs[i] = c.Seconds()
		sum += secs[i]
	}
	t := Timing{Completions: slices.Clone(secs), Mean: sum / float64(len(secs))}
	slices.Sort(secs)
	if n := len(secs); n > 1 {
		ss := 0.0
		for _, x := range secs {
			ss += (x - t.Mean) * (x - t.Mean)
		}
		t.StdErr = math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
	}
	t.P50, t.P99, t.P999 = Percentile(secs, 0.5), Percentile(secs, 0.99), Percentile(secs, 0.999)
	t.Min, t.Max = secs[0], secs[len(secs)-1]
	return t
}

// Percentile returns the nearest-rank q-quantile of sorted values.
func Percentile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
