package scenario

import (
	"fmt"
	"math"
	"time"

	"github.com/sdrnet/sdrnet/internal/model"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
	"github.com/sdrnet/sdrnet/sim/network"
)

// Tolerance is how far a simulated mean may stray from the model's where
// the model applies: the SDR-RDMA paper's simulator matched it within 5%.
const Tolerance = 0.05

// predict returns the analytic model's prediction for a cell, or a note
// saying why the model does not apply.
func predict(v *values, cell Cell, rtt monotime.Duration) *Prediction {
	scheme, chooser := v.scheme()
	kind, _ := v.get("workload.kind").(string)
	var why string
	switch {
	case chooser != nil:
		why = "auto picks a scheme per message; compare it with the fixed schemes' cells"
	case kind == "training":
		why = "no analytic model for a training iteration; its compute alone is the floor (compute_s)"
	case kind != "messages":
		why = "model covers point-to-point messages; a ring AllReduce is bounded below by (2N-2) steps"
	case v.float("topology.burst") > 0:
		why = "model assumes independent (Bernoulli) drops"
	case v.float("topology.host_rate") > v.float("topology.trunk_rate"):
		why = "model assumes no queueing; the trunk is slower than the hosts"
	case scheme == nil:
		why = "no scheme"
	case v.int("workload.depth") > 1:
		why = "model times one message at a time; these are streamed (workload.depth)"
	case hostMemory(v) != nil:
		why = "model has no host memory path (host section); its bound is outstanding x page per miss latency"
	}
	p := model.Params{
		MessageBytes:   int64(v.int("workload.size")),
		ChunkBytes:     v.int("transport.chunk"),
		MTU:            v.int("transport.mtu"),
		HeaderBytes:    wire.MessageLen + network.DefaultOverhead + v.authBytes(),
		RateBitsPerSec: v.float("topology.host_rate"),
		RTT:            rtt,
		DropProb:       v.float("topology.loss"),
		Decode:         model.DecodeStripe, // how internal/core codes: per packet stripe
		Retry:          model.RetryPacket,  // the receive bitmap keeps packets across attempts
	}
	if sr, ok := scheme.(reliability.SelectiveRepeat); ok {
		// The timeout the simulated scheme runs with; EC's repair keeps
		// the default, in the model as in internal/reliability.
		p.RTOFactor = sr.A
	}
	if why == "" {
		switch scheme.Kind() {
		case reliability.KindSRRTO:
			p.Scheme = model.SRRTO
		case reliability.KindSRNACK:
			p.Scheme = model.SRNACK
		case reliability.KindECMDS, reliability.KindECXOR:
			p.Scheme = model.ECMDS
			if scheme.Kind() == reliability.KindECXOR {
				p.Scheme = model.ECXOR
			}
			p.K, p.M = scheme.Code().K(), scheme.Code().M()
		default:
			why = fmt.Sprintf("no model for %s", scheme.Kind())
		}
	}
	if why != "" {
		return &Prediction{Note: why}
	}
	simMean, simErr := cell.Mean, cell.StdErr
	if t := cell.AtSender; t != nil {
		p.AtSender, simMean, simErr = true, t.Mean, t.StdErr
	}
	pred, err := model.Predict(p)
	if err != nil {
		return &Prediction{Note: err.Error()}
	}
	out := &Prediction{AtSender: p.AtSender, Mean: pred.Mean.Seconds(), P999: pred.P999.Seconds()}
	if out.Mean > 0 && simMean > 0 {
		out.Error = (simMean - out.Mean) / out.Mean
	}
	if simMean > 0 && math.Abs(out.Error) > Tolerance {
		if math.Abs(simMean-out.Mean) > 3*simErr {
			out.StdErr = modelStdErr(p, cell.Runs)
		}
		out.Note = deviation(scheme.Kind(), cell, simMean, simErr, p.MTU, out)
	}
	// The paper's model: whole chunks lost and retried, one codeword per
	// sub-message.
	p.Decode, p.Retry = model.DecodeChunk, model.RetryChunk
	if paper, err := model.Predict(p); err == nil && paper.Mean > 0 {
		out.Paper = &PaperPrediction{Mean: paper.Mean.Seconds(), P999: paper.P999.Seconds()}
		if simMean > 0 {
			out.Paper.Error = (simMean - out.Paper.Mean) / out.Paper.Mean
		}
	}
	return out
}

// Agrees reports whether the simulation agrees with the model: means
// within Tolerance, or apart by what sampling explains.
func (p *Prediction) Agrees() bool {
	return math.Abs(p.Error) <= Tolerance || p.Sampling
}

// deviation explains a cell where simulation and model differ by more
// than Tolerance, and sets pred.Sampling where sampling does.
func deviation(kind reliability.Kind, cell Cell, mean, stderr float64, mtu int, pred *Prediction) string {
	if math.Abs(mean-pred.Mean) <= 3*stderr {
		pred.Sampling = true
		return fmt.Sprintf("within 3 standard errors of the simulated mean (%d runs): sampling, not model error", cell.Runs)
	}
	// Where losses are rare the runs' own spread says little (a handful
	// of costly events, or none), but the model knows the spread it
	// predicts: if it is right, a mean over the cell's runs strays from
	// it by its standard deviation over sqrt(runs); more than three of
	// those is model error.
	if math.Abs(mean-pred.Mean) <= 3*pred.StdErr {
		pred.Sampling = true
		return fmt.Sprintf("within 3 standard errors of the model's mean (%s over %d runs, from its spread): "+
			"sampling, not model error", time.Duration(pred.StdErr*float64(time.Second)).Round(time.Microsecond), cell.Runs)
	}
	// The model follows the implementation's timers (internal/model,
	// doc.go). What it cannot see is a costly event so rare that the runs
	// sampled only a few: the sample's standard error then understates the
	// spread. Say so only where this run's own counts show it.
	events, what := cell.RetxBytes/uint64(max(mtu, 1)), "retransmitted packets"
	if kind == reliability.KindECMDS || kind == reliability.KindECXOR {
		events, what = cell.Fallbacks, "fallbacks"
	}
	if events < rareEvents {
		return fmt.Sprintf("outside %.0f%% and 3 standard errors (%d runs): the runs saw only %d %s in all, "+
			"too few for the sample's standard error to measure the spread", 100*Tolerance, cell.Runs, events, what)
	}
	return fmt.Sprintf("outside %.0f%% and 3 standard errors (%d runs, %d %s): a gap the model does not explain",
		100*Tolerance, cell.Runs, events, what)
}

// modelStdErr is the standard error the model predicts for a mean of
// runs messages under p, from a Monte Carlo of modelRuns messages; zero if
// the model cannot draw them.
func modelStdErr(p model.Params, runs int) float64 {
	mc := model.MonteCarlo(p, modelRuns, 1)
	if mc.Err != nil || runs < 1 {
		return 0
	}
	return mc.StdDev.Seconds() / math.Sqrt(float64(runs))
}

// modelRuns is how many messages the model's Monte Carlo draws to learn
// the spread it predicts.
const modelRuns = 20000

// rareEvents: with fewer costly events than this in a cell (chosen), the
// sample's standard error is itself too uncertain to judge the model by.
const rareEvents = 30
