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
	pred, err := model.Predict(p)
	if err != nil {
		return &Prediction{Note: err.Error()}
	}
	out := &Prediction{Mean: pred.Mean.Seconds(), P999: pred.P999.Seconds()}
	if out.Mean > 0 && cell.Mean > 0 {
		out.Error = (cell.Mean - out.Mean) / out.Mean
	}
	if cell.Mean > 0 && math.Abs(out.Error) > Tolerance {
		out.Note = deviation(scheme.Kind(), cell, out)
	}
	return out
}

// deviation explains a cell where simulation and model differ by more
// than Tolerance.
func deviation(kind reliability.Kind, cell Cell, pred *Prediction) string {
	if math.Abs(cell.Mean-pred.Mean) <= 3*cell.StdErr {
		return fmt.Sprintf("within 3 standard errors of the simulated mean (%d runs): sampling, not model error", cell.Runs)
	}
	switch kind {
	case reliability.KindSRNACK:
		return "the model retries a lost chunk one RTT after sending it; the receiver here waits RTT/8 for " +
			"reordering before it NACKs, re-NACKs a lost retransmission only after 1.5 RTT, and losses at a " +
			"message's tail, which no later packet reveals, wait for the 3 RTT timeout"
	case reliability.KindECMDS, reliability.KindECXOR:
		return "after a fallback the model repairs the expected number of lost packets back to back with SR-RTO; " +
			"the simulation repairs exactly what was lost, NACKed at the fallback timeout and again every 1.5 RTT"
	}
	return fmt.Sprintf("outside %.0f%% (%d runs)", 100*Tolerance, cell.Runs)
}
