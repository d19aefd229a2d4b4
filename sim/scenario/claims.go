package scenario

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Claim is a statement that one setting beats another, which the report
// checks against the run instead of a person typing our figures: in every
// group of cells that differ only in Better's and Worse's parameters (and
// match Where), the cell matching Better should have a lower Metric, and
// where the claim gives a Magnitude, the worse cell's figure over the
// better's should bear it out.
//
//	claims:
//	  - claim: default DCQCN degrades performance   # the words of its source
//	    source: paper                               # optional: paper (default) or sdrnet
//	    better: transport.cc=none
//	    worse: transport.cc=dcqcn
//	    where: workload.kind=incast                 # optional
//	    metric: mean                                # optional: one of ClaimMetrics
//	    magnitude: about 1.4x                       # optional: see Magnitude
//	    tolerance: 5%                               # optional
//
// Direction and magnitude are judged apart. Better beats Worse where its
// figure is lower and the two are no tie by the report's noise rule.
// Tolerance turns "lower" into "no more than that much higher": the claim
// holds where Better < Worse*(1+Tolerance), ties included, so a claim that
// one setting is as good as another within 5% reads better/worse/tolerance.
type Claim struct {
	Text          string
	Source        string // "paper" or "sdrnet": whose claim it is
	Better, Worse map[string]string
	Where         map[string]string
	Metric        string // one of ClaimMetrics; "" means mean
	Magnitude     Magnitude
	Tolerance     float64 // a fraction, 0 <= Tolerance < 1
	Pos           string
}

// ClaimSources name whose claim a claim is.
var ClaimSources = []string{"paper", "sdrnet"}

// ClaimMetrics are the cell figures a claim may compare; lower is better
// for all of them.
var ClaimMetrics = []string{"mean", "median", "sender_mean", "p99", "p999", "sender_p99", "sender_p999", "model_mean", "model_p999", "retx_bytes", "drops", "ctrl_wait_p90", "ctrl_wait_p99", "startup", "fct_p99", "qp_cache_miss_rate", "nic_stall"}

// ClaimValue is a cell's figure named by metric; NaN where the cell has no
// such figure: sender_mean of a cell not timed at the sender, a tail its
// runs cannot support (p99.9 needs a thousand runs), or the analytic
// model's figure (model_mean, model_p999) where the model does not apply.
func ClaimValue(c *Cell, metric string) float64 {
	tail := func(v float64, q float64) float64 {
		if float64(c.Runs)*(1-q) < 1-1e-9 {
			return math.NaN()
		}
		return v
	}
	at := c.AtSender
	if at == nil && strings.HasPrefix(metric, "sender_") {
		return math.NaN()
	}
	if strings.HasPrefix(metric, "model_") && (c.Model == nil || c.Model.Mean <= 0) {
		return math.NaN()
	}
	switch metric {
	case "median":
		return c.P50
	case "model_mean":
		return c.Model.Mean
	case "model_p999":
		return c.Model.P999
	case "sender_mean": // SDR-RDMA's timing, until the sender hears the last ACK
		return at.Mean
	case "sender_p99":
		return tail(at.P99, 0.99)
	case "sender_p999":
		return tail(at.P999, 0.999)
	case "p99":
		return tail(c.P99, 0.99)
	case "p999":
		return tail(c.P999, 0.999)
	case "retx_bytes":
		return float64(c.RetxBytes)
	case "drops":
		return float64(c.Drops)
	case "ctrl_wait_p90":
		return c.CtrlWaitP90
	case "ctrl_wait_p99":
		return c.CtrlWaitP99
	case "startup":
		return c.StartupSec
	case "fct_p99":
		return c.FCTP99
	case "qp_cache_miss_rate":
		return c.QPCacheMissRate
	case "nic_stall":
		return c.NICStallSec
	}
	return c.Mean
}

// ClaimStdErr is the standard error of a cell's figure named by metric,
// where the run measures one (the means); 0 elsewhere. A median's noise is
// judged from the runs themselves (Cell.Completions).
func ClaimStdErr(c *Cell, metric string) float64 {
	switch metric {
	case "", "mean":
		return c.StdErr
	case "sender_mean":
		if c.AtSender != nil {
			return c.AtSender.StdErr
		}
	}
	return 0
}

// Matches reports whether a cell's parameters include every pair of want.
func Matches(params, want map[string]string) bool {
	for k, v := range want {
		if params[k] != v {
			return false
		}
	}
	return true
}

var claimKeys = []string{"claim", "source", "better", "worse", "where", "metric", "magnitude", "tolerance"}

// claimList reads a scenario's claims.
func claimList(file string, n *yaml.Node) ([]Claim, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, errAt(file, n, "claims: want a list of mappings with %s", strings.Join(claimKeys, ", "))
	}
	var out []Claim
	for _, it := range n.Content {
		if it.Kind != yaml.MappingNode {
			return nil, errAt(file, it, "claims: each claim is a mapping with %s", strings.Join(claimKeys, ", "))
		}
		c := Claim{Source: "paper", Pos: fmt.Sprintf("%s:%d:%d", file, it.Line, it.Column)}
		for i := 0; i+1 < len(it.Content); i += 2 {
			k, v := it.Content[i], it.Content[i+1]
			if v.Kind != yaml.ScalarNode {
				return nil, errAt(file, v, "claims: %s: want a string", k.Value)
			}
			var err error
			switch k.Value {
			case "claim":
				c.Text = v.Value
			case "better":
				c.Better, err = settings(file, v, true)
			case "worse":
				c.Worse, err = settings(file, v, true)
			case "where":
				c.Where, err = settings(file, v, false)
			case "metric":
				if !slices.Contains(ClaimMetrics, v.Value) {
					return nil, errAt(file, v, "claims: metric %q: want %s", v.Value, strings.Join(ClaimMetrics, ", "))
				}
				c.Metric = v.Value
			case "source":
				if !slices.Contains(ClaimSources, v.Value) {
					return nil, errAt(file, v, "claims: source %q: want paper (the paper's claim) or sdrnet (ours)", v.Value)
				}
				c.Source = v.Value
			case "magnitude":
				m, perr := ParseMagnitude(v.Value)
				if perr != nil {
					return nil, errAt(file, v, "claims: magnitude %v", perr)
				}
				c.Magnitude = m
			case "factor":
				return nil, errAt(file, k, "claims: factor is now magnitude: write magnitude: at least %sx", v.Value)
			case "tolerance":
				num, pct := strings.CutSuffix(strings.TrimSpace(v.Value), "%")
				f, perr := strconv.ParseFloat(num, 64)
				if pct {
					f /= 100
				}
				if perr != nil || f < 0 || f >= 1 {
					return nil, errAt(file, v, "claims: tolerance %q: want a fraction from 0 to below 1, like 5%% or 0.05", v.Value)
				}
				c.Tolerance = f
			default:
				return nil, errAt(file, k, "claims: unknown key %q; known keys: %s", k.Value, strings.Join(claimKeys, ", "))
			}
			if err != nil {
				return nil, err
			}
		}
		if c.Text == "" || c.Better == nil || c.Worse == nil {
			return nil, errAt(file, it, "claims: a claim needs claim (its source's words), better and worse (like transport.cc=none)")
		}
		if !sameKeys(c.Better, c.Worse) {
			return nil, errAt(file, it, "claims: better and worse must set the same parameters, with different values")
		}
		out = append(out, c)
	}
	return out, nil
}

// settings reads "k=v, k=v" with every key a parameter and every value
// valid for it. A value may hold commas ("transport.scheme=ec:32,8"): a
// piece without "=" continues the value before it.
func settings(file string, n *yaml.Node, needOne bool) (map[string]string, error) {
	out := map[string]string{}
	var parts []string
	for part := range strings.SplitSeq(n.Value, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		if last := len(parts) - 1; last >= 0 && !strings.Contains(part, "=") {
			parts[last] += "," + part
			continue
		}
		parts = append(parts, part)
	}
	for _, part := range parts {
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		f, known := schema[k]
		if !ok || !known {
			return nil, errAt(file, n, "claims: %q: want parameter=value pairs, like transport.cc=dcqcn", part)
		}
		if _, err := f.parse(v); err != nil {
			return nil, errAt(file, n, "claims: %s: %q: %v", k, v, err)
		}
		out[k] = v
	}
	if needOne && len(out) == 0 {
		return nil, errAt(file, n, "claims: want at least one parameter=value, like transport.cc=none")
	}
	return out, nil
}

func sameKeys(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	differ := false
	for k, v := range a {
		w, ok := b[k]
		if !ok {
			return false
		}
		differ = differ || v != w
	}
	return differ
}

// checkClaims makes sure every claim can be judged: the grid has cells on
// both sides.
func (s *Scenario) checkClaims() error {
	for _, c := range s.Claims {
		for _, side := range []map[string]string{c.Better, c.Worse, c.Where} {
			for k, v := range side {
				i := slices.IndexFunc(s.Params, func(p Param) bool { return p.Path == k })
				if i < 0 && schema[k].def != v || i >= 0 && !slices.Contains(s.Params[i].Values, v) {
					return &Error{Pos: c.Pos, Msg: fmt.Sprintf("claims: %s=%s is not in the scenario's grid", k, v)}
				}
			}
		}
	}
	return nil
}
