package scenario

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim"
	"github.com/sdrnet/sdrnet/sim/chakra"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// TrainingMetrics is what a training cell measured beside its iteration
// times, each a mean over ranks and iterations, seconds: the GPU's
// compute, the part of an iteration it sat idle with communication
// under way, and that part's share of the mean iteration.
type TrainingMetrics struct {
	Ranks        int     `json:"ranks"`
	ComputeSec   float64 `json:"compute_s"`
	ExposedSec   float64 `json:"exposed_s"`
	ExposedShare float64 `json:"exposed_share"`
	// Timeline is the last iteration's runs, for the timeline file; not
	// in results.json, where a large job's would drown the figures.
	Timeline *sim.TrainingResult `json:"-"`
}

// trainingJob is the point's job: the Chakra traces workload.trace names
// (PREFIX.0.et, PREFIX.1.et, ... beside the scenario file where the
// prefix is relative), with the process groups of workload.groups, or
// else the job workload.model generates, one rank per workload.hosts.
func trainingJob(s *Scenario, v *values) (*chakra.Job, error) {
	prefix, _ := v.get("workload.trace").(string)
	if prefix == "" && v.pt.Values["workload.model"] == "megatron" {
		m := megatron(v)
		if ranks := v.int("workload.hosts"); ranks%(m.TP*m.PP) != 0 {
			return nil, fmt.Errorf("workload.hosts %d: a Megatron job's ranks are TP x PP x DP; %d is not a multiple of workload.tp %d x workload.pp %d", ranks, ranks, m.TP, m.PP)
		}
		traces, groups, err := m.Traces()
		if err != nil {
			return nil, err
		}
		return chakra.NewGroupJob(traces, groups)
	}
	if prefix == "" {
		traces, err := chakra.DataParallel{Ranks: v.int("workload.hosts"), Layers: v.int("workload.layers"),
			ForwardMicros:  uint64(v.duration("workload.forward") / monotime.Microsecond),
			BackwardMicros: uint64(v.duration("workload.backward") / monotime.Microsecond),
			GradientBytes:  int64(v.int("workload.size")), Overlap: v.pt.Values["workload.overlap"] == "on"}.Traces()
		if err != nil {
			return nil, err
		}
		return chakra.NewJob(traces)
	}
	var groups chakra.Groups
	if name, _ := v.get("workload.groups").(string); name != "" {
		f, err := s.open(name)
		if err != nil {
			return nil, fmt.Errorf("workload.groups: %w", err)
		}
		groups, err = chakra.ReadGroups(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("workload.groups: %s: %w", name, err)
		}
	}
	var traces []*chakra.Trace
	for r := 0; ; r++ {
		name := fmt.Sprintf("%s.%d.et", prefix, r)
		f, err := s.open(name)
		if errors.Is(err, fs.ErrNotExist) && r > 0 {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("workload.trace: rank %d's trace: %w (want PREFIX.0.et, PREFIX.1.et, ... one per rank)", r, err)
		}
		tr, err := chakra.Read(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("workload.trace: %s: %w", name, err)
		}
		traces = append(traces, tr)
	}
	if s.setsParam("workload.hosts") && v.int("workload.hosts") != len(traces) {
		return nil, fmt.Errorf("workload.hosts %d: the trace has %d ranks (%s.0.et to %s.%d.et); set %d, or leave workload.hosts out", v.int("workload.hosts"), len(traces), prefix, prefix, len(traces)-1, len(traces))
	}
	return chakra.NewGroupJob(traces, groups)
}

// megatron is the point's Megatron job: data parallel over the hosts
// the tensor and pipeline degrees leave.
func megatron(v *values) chakra.Megatron {
	m := chakra.Megatron{Layers: v.int("workload.layers"), Hidden: v.int("workload.hidden"), SeqLen: v.int("workload.seq_len"),
		MicroBatch: v.int("workload.micro_batch"), MicroBatches: v.int("workload.micro_batches"),
		TP: v.int("workload.tp"), PP: v.int("workload.pp"), EP: v.int("workload.ep"),
		GPUFlops: v.float("workload.gpu_tflops") * 1e12, Overlap: v.pt.Values["workload.overlap"] == "on"}
	m.DP = max(v.int("workload.hosts")/max(m.TP*m.PP, 1), 1)
	return m
}

// open opens a file the scenario names: in Files for a built-in
// scenario, else relative to the scenario file's folder unless absolute.
func (s *Scenario) open(name string) (fs.File, error) {
	if s.Files != nil {
		return s.Files.Open(path.Clean(name))
	}
	if !filepath.IsAbs(name) && s.File != "" {
		name = filepath.Join(filepath.Dir(s.File), name)
	}
	return os.Open(name)
}

// Job is the training job grid point pt runs: the traces it reads or
// the job its workload section generates; an error where the point is
// not a training workload.
func Job(s *Scenario, pt Point) (*chakra.Job, error) {
	v := &values{pt: pt}
	if k := v.pt.Values["workload.kind"]; k != "training" {
		return nil, fmt.Errorf("workload.kind %s: not a training job", k)
	}
	job, err := trainingJob(s, v)
	if err == nil {
		err = v.err
	}
	return job, err
}

// setsParam reports whether the scenario itself sets path (not its
// default).
func (s *Scenario) setsParam(path string) bool {
	for _, p := range s.Params {
		if p.Path == path {
			return true
		}
	}
	return false
}

// runTraining replays job on top, rank r on hosts[r], for
// workload.count iterations, and fills the cell's training figures.
func runTraining(top *topology.Topology, v *values, job *chakra.Job, hosts []int, ccfg core.Config, bg []sim.Flow, bgc sim.FlowsConfig, cell *Cell) (sim.TrainingResult, error) {
	if bal, _ := v.get("routing.balancer").(topology.BalancerKind); bal == topology.TE {
		return sim.TrainingResult{}, fmt.Errorf("routing.balancer te: traffic engineering plans flows, and a training job's are not known ahead; use e-ecmp or another balancer")
	}
	scheme, _ := v.scheme() // auto's chooser is in ccfg
	servers := sim.ServerLinks{GPUs: v.int("topology.gpus_per_server"), Rate: v.float("topology.nvlink_rate"),
		Latency: v.duration("topology.nvlink_latency")}
	res, err := sim.RunTraining(top, sim.TrainingConfig{Job: job, Hosts: hosts, Iterations: v.int("workload.count"), Servers: servers,
		Tree: v.pt.Values["workload.algorithm"] == "tree", Channels: v.int("workload.channels"),
		Scheme: scheme, Core: ccfg, Limit: v.duration("workload.limit"), Background: bg, BackgroundConfig: bgc, Threads: bgc.Threads})
	if err != nil {
		return res, err
	}
	n, iters := float64(len(job.Ranks)), float64(len(res.Iterations))
	m := &TrainingMetrics{Ranks: len(job.Ranks)}
	for r := range res.Compute {
		m.ComputeSec += res.Compute[r].Seconds() / n / iters
		m.ExposedSec += res.Exposed[r].Seconds() / n / iters
	}
	if res.Time > 0 {
		m.ExposedShare = m.ExposedSec / (res.Time.Seconds() / iters)
	}
	if v.pt.Values["metrics.timeline"] == "on" {
		m.Timeline = &res
	}
	cell.Training = m
	return res, nil
}
