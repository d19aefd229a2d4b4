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
		HeaderBytes:    wire.MessageLen + sim.DefaultOverhead,
		RateBitsPerSec: v.float("topology.host_rate"),
		RTT:            rtt,
		DropProb:       v.float("topology.loss"),
		Decode:         model.DecodeStripe, // how internal/core codes: per packet stripe
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
	if math.Abs(out.Error) > Tolerance && math.Abs(cell.Mean-out.Mean) <= 3*cell.StdErr {
		out.Note = fmt.Sprintf("within 3 standard errors of the simulated mean (%d runs)", cell.Runs)
	}
	return out
}
