package scenario

import (
	"fmt"
	"math"

	"github.com/sdrnet/sdrnet/internal/model"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
	"github.com/sdrnet/sdrnet/sim"
)

// Tolerance is how far a simulated mean may stray from the model's where
// the model applies: the SDR-RDMA paper's simulator matched it within 5%.
const Tolerance = 0.05

// predict returns the analytic model's prediction for a cell, or a note
// saying why the model does not apply.
func predict(v *values, cell Cell, rtt monotime.Duration) *Prediction {
	scheme, _ := v.get("transport.scheme").(reliability.Scheme)
	kind, _ := v.get("workload.kind").(string)
	var why string
	switch {
	case kind != "messages":
		why = "model covers point-to-point messages; a ring AllReduce is bounded below by (2N-2) steps"
	case v.float("topology.burst") > 0:
		why = "model assumes independent (Bernoulli) drops"
	case v.float("topology.host_rate") > v.float("topology.trunk_rate"):
		why = "model assumes no queueing; the trunk is slower than the hosts"
	case scheme == nil:
		why = "no scheme"
	}
	p := model.Params{
		MessageBytes:   int64(v.int("workload.size")),
		ChunkBytes:     v.int("transport.chunk"),
		MTU:            v.int("transport.mtu"),
		HeaderBytes:    wire.MessageLen + sim.DefaultOverhead + v.authBytes(),
		RateBitsPerSec: v.float("topology.host_rate"),
		RTT:            rtt,
		DropProb:       v.float("topology.loss"),
		Decode:         model.DecodeStripe, // how internal/core codes: per packet stripe
		Retry:          model.RetryPacket,  // the receive bitmap keeps packets across attempts
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
		out.Note = deviation(scheme.Kind(), cell.Runs, simMean, simErr, out)
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

// deviation explains a cell where simulation and model differ by more
// than Tolerance.
func deviation(kind reliability.Kind, runs int, mean, stderr float64, pred *Prediction) string {
	if math.Abs(mean-pred.Mean) <= 3*stderr {
		return fmt.Sprintf("within 3 standard errors of the simulated mean (%d runs): sampling, not model error", runs)
	}
	switch kind {
	case reliability.KindSRRTO, reliability.KindSRNACK, reliability.KindECMDS, reliability.KindECXOR:
		// The model follows the implementation's timers (internal/model,
		// doc.go). What it cannot see is a rare loss that few runs sample:
		// the sample's standard error then understates the true one (with
		// no or one lossy run in the sample, it is near zero).
		return fmt.Sprintf("outside %.0f%% and 3 standard errors (%d runs): where losses are rare "+
			"(a few runs in the sample see one), the sample's standard error understates the spread", 100*Tolerance, runs)
	}
	return fmt.Sprintf("outside %.0f%% (%d runs)", 100*Tolerance, runs)
}
