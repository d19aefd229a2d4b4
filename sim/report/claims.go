package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// Verdict is a claim judged against a run: in each group of cells that
// differ only in the claim's compared parameters, whether the better
// setting's figure was lower (direction), and whether the ratios bear out
// the magnitude the claim states. Every figure in it comes from the cells.
type Verdict struct {
	Claim  string `json:"claim"`
	Source string `json:"source"` // whose claim: "paper" or "sdrnet"
	Better string `json:"better"`
	Worse  string `json:"worse"`
	Metric string `json:"metric"`
	// Magnitude is the claimed ratio of the worse figure over the better,
	// as the scenario words it ("about 1.4x"); empty for direction only.
	Magnitude string `json:"magnitude,omitempty"`
	// Tolerance: the better setting may be this fraction higher.
	Tolerance float64 `json:"tolerance,omitempty"`
	// Judged is false where the run has no pair of cells with the figure;
	// Reason says why.
	Judged bool   `json:"judged"`
	Reason string `json:"reason,omitempty"`
	Holds  int    `json:"holds"` // groups where the direction held
	// Ties are groups the report's noise rule calls a tie: no win either
	// way, so a claim that one setting beats another does not hold there.
	Ties int `json:"ties"`
	// MagnitudeMet: "met" or "off" where the claim states a magnitude and
	// some group has a ratio; empty elsewhere.
	MagnitudeMet string        `json:"magnitude_met,omitempty"`
	Outcome      string        `json:"outcome"` // one of the Outcome constants
	Groups       []VerdictPair `json:"groups"`
}

// The outcomes of a verdict, in the order a report lists them: what
// fails first.
const (
	OutcomeFails        = "fails"         // the direction does not hold in every group
	OutcomeMagnitudeOff = "magnitude off" // direction holds, the size does not match
	OutcomeNotJudged    = "not judged"
	OutcomeHolds        = "holds"
)

var outcomeOrder = []string{OutcomeFails, OutcomeMagnitudeOff, OutcomeNotJudged, OutcomeHolds}

// VerdictPair is one group's comparison.
type VerdictPair struct {
	Group  string  `json:"group"` // the other parameters that vary
	Better float64 `json:"better"`
	Worse  float64 `json:"worse"`
	Tie    bool    `json:"tie,omitempty"`
	Metric string  `json:"-"`
}

// Ratio is how many times the worse setting's figure exceeds the better's:
// +Inf where the better has none and the worse some, 1 where neither has.
func (p VerdictPair) Ratio() float64 {
	if p.Better == 0 && p.Worse == 0 {
		return 1
	}
	return p.Worse / p.Better
}

// Figures shows the pair in the metric's unit.
func (p VerdictPair) Figures() string {
	show := func(v float64) string { return seconds(v) }
	switch p.Metric {
	case "retx_bytes":
		show = bytesIEC
	case "drops":
		show = func(v float64) string { return fmt.Sprintf("%.0f drops", v) }
	case "qp_cache_miss_rate":
		show = func(v float64) string { return fmt.Sprintf("%.3g%% misses", 100*v) }
	}
	ratio := "no change"
	switch {
	case p.Better > 0:
		ratio = fmt.Sprintf("%.2fx", p.Ratio())
	case p.Worse > 0:
		ratio = "none against some"
	}
	if p.Tie {
		ratio += ", a tie"
	}
	return fmt.Sprintf("%s against %s (%s)", show(p.Better), show(p.Worse), ratio)
}

// Ratios are the least and greatest ratio over the groups; ok is false
// where there is no group.
func (v Verdict) Ratios() (lo, hi float64, ok bool) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, g := range v.Groups {
		lo, hi = min(lo, g.Ratio()), max(hi, g.Ratio())
	}
	return lo, hi, len(v.Groups) > 0
}

// RatioText writes the ratios' range: "2.6-5.5x", "1.69x".
func (v Verdict) RatioText() string {
	lo, hi, ok := v.Ratios()
	r := func(x float64) string {
		if math.IsInf(x, 1) {
			return "unbounded (none against some)"
		}
		if x < 2 { // 1.004x, not 1x: near 1 the third digit is the finding
			return fmt.Sprintf("%.3f", x)
		}
		return fmt.Sprintf("%.3g", x)
	}
	switch {
	case !ok:
		return ""
	case math.IsInf(lo, 1):
		return r(lo)
	case r(lo) == r(hi):
		return r(lo) + "x"
	case math.IsInf(hi, 1):
		return r(lo) + "x to " + r(hi)
	}
	return r(lo) + "-" + r(hi) + "x"
}

// Direction says in words how the direction fared.
func (v Verdict) Direction() string {
	ties := ""
	if v.Ties > 0 {
		ties = fmt.Sprintf(" (%d a tie)", v.Ties)
	}
	switch {
	case len(v.Groups) == 1 && v.Holds == 1:
		return "direction holds"
	case len(v.Groups) == 1:
		return "direction does not hold" + ties
	}
	return fmt.Sprintf("direction holds in %d of %d settings%s", v.Holds, len(v.Groups), ties)
}

// Summary says in words how the claim fared: direction and magnitude
// apart ("direction holds in 4 of 4 settings; magnitude 2.6-5.5x against
// about 1.4x: off").
func (v Verdict) Summary() string {
	if !v.Judged {
		return "not judged: " + v.Reason
	}
	s := v.Direction()
	if v.Magnitude != "" {
		s += fmt.Sprintf("; magnitude %s against %s: %s", v.RatioText(), v.Magnitude, v.MagnitudeMet)
	} else {
		s += "; ratio " + v.RatioText()
	}
	return s
}

// MatchRule says in words when a ratio bears a claimed magnitude out.
var MatchRule = fmt.Sprintf(`"at least X": every ratio at least X; "about X" and a range: every ratio's gain (the ratio less 1) within %gx of the claimed gain either way; "up to X": the greatest ratio so`, scenario.GainBand)

// outcomeMark is the class a report marks an outcome with.
func outcomeMark(outcome string) string {
	switch outcome {
	case OutcomeHolds:
		return "good"
	case OutcomeNotJudged:
		return "na"
	}
	return "bad"
}

// tally counts verdicts by outcome: "2 fail, 1 magnitude off, 3 hold".
func tally(vs []Verdict) string {
	var parts []string
	for _, o := range outcomeOrder {
		n := 0
		for _, v := range vs {
			if v.Outcome == o {
				n++
			}
		}
		switch {
		case n == 0:
		case o == OutcomeFails && n == 1:
			parts = append(parts, "1 fails")
		case o == OutcomeFails:
			parts = append(parts, fmt.Sprintf("%d fail", n))
		case o == OutcomeHolds && n > 1:
			parts = append(parts, fmt.Sprintf("%d hold", n))
		default:
			parts = append(parts, fmt.Sprintf("%d %s", n, o))
		}
	}
	return strings.Join(parts, ", ")
}

// SortedVerdicts returns the verdicts in the order a report shows them:
// failing first, then magnitudes off, not judged, and those that hold;
// the scenario's order within each.
func SortedVerdicts(vs []Verdict) []Verdict {
	out := slices.Clone(vs)
	slices.SortStableFunc(out, func(a, b Verdict) int {
		return cmp.Compare(slices.Index(outcomeOrder, a.Outcome), slices.Index(outcomeOrder, b.Outcome))
	})
	return out
}

// Judge evaluates claims against cells.
func Judge(cells []scenario.Cell, claims []scenario.Claim) []Verdict {
	var out []Verdict
	for _, c := range claims {
		out = append(out, judge(cells, c))
	}
	return out
}

func judge(cells []scenario.Cell, c scenario.Claim) Verdict {
	v := Verdict{Claim: c.Text, Source: cmp.Or(c.Source, "paper"), Better: settingText(c.Better), Worse: settingText(c.Worse),
		Metric: cmp.Or(c.Metric, "mean"), Magnitude: c.Magnitude.String(), Tolerance: c.Tolerance}
	compared := slices.Sorted(maps.Keys(c.Better))
	var others []string
	for _, k := range paramKeys(cells) {
		if !slices.Contains(compared, k) && varies(cells, k) && !follows(cells, k, compared) {
			others = append(others, k)
		}
	}
	worse := map[string]scenario.Cell{}
	for _, cell := range cells {
		if scenario.Matches(cell.Params, c.Where) && scenario.Matches(cell.Params, c.Worse) && cell.Runs > 0 {
			worse[describe(cell, others, true)] = cell
		}
	}
	betters, pairs, runs := 0, 0, 0
	for _, cell := range cells {
		if !scenario.Matches(cell.Params, c.Where) || !scenario.Matches(cell.Params, c.Better) || cell.Runs == 0 {
			continue
		}
		betters++
		group := describe(cell, others, true)
		w, ok := worse[group]
		if !ok {
			continue
		}
		pairs++
		runs = max(runs, cell.Runs, w.Runs)
		p := VerdictPair{Group: group, Better: scenario.ClaimValue(&cell, v.Metric),
			Worse: scenario.ClaimValue(&w, v.Metric), Metric: v.Metric}
		if math.IsNaN(p.Better) || math.IsNaN(p.Worse) {
			continue // a figure these cells do not have: not judged
		}
		if c.Tolerance > 0 {
			if p.Better < p.Worse*(1+c.Tolerance) {
				v.Holds++
			}
		} else {
			if v.Metric == "median" {
				p.Tie = tiedRuns(p.Better, cell.Completions, p.Worse, w.Completions)
			} else {
				p.Tie = tied(p.Better, scenario.ClaimStdErr(&cell, v.Metric), p.Worse, scenario.ClaimStdErr(&w, v.Metric))
			}
			if p.Tie {
				v.Ties++
			} else if p.Better < p.Worse {
				v.Holds++
			}
		}
		v.Groups = append(v.Groups, p)
	}
	switch {
	case betters == 0:
		v.Reason = "this run has no cell with " + settingText(union(c.Better, c.Where)) + " (the full grid may: --full)"
	case len(worse) == 0:
		v.Reason = "this run has no cell with " + settingText(union(c.Worse, c.Where)) + " (the full grid may: --full)"
	case pairs == 0:
		v.Reason = "no cell with " + v.Better + " has one with " + v.Worse + " in the same setting of the other parameters"
	case len(v.Groups) == 0:
		v.Reason = "the cells have no " + v.Metric + " figure" + missingWhy(v.Metric, runs)
	}
	v.Judged = v.Reason == ""
	if lo, hi, ok := v.Ratios(); ok && c.Magnitude.Kind != scenario.MagnitudeNone {
		v.MagnitudeMet = "off"
		if c.Magnitude.Matches(lo, hi) {
			v.MagnitudeMet = "met"
		}
	}
	switch {
	case !v.Judged:
		v.Outcome = OutcomeNotJudged
	case v.Holds < len(v.Groups):
		v.Outcome = OutcomeFails
	case v.MagnitudeMet == "off":
		v.Outcome = OutcomeMagnitudeOff
	default:
		v.Outcome = OutcomeHolds
	}
	return v
}

// missingWhy says why cells lack a metric's figure.
func missingWhy(metric string, runs int) string {
	switch {
	case strings.HasPrefix(metric, "model_"):
		return " (the analytic model does not apply to them)"
	case strings.HasSuffix(metric, "p999"):
		return fmt.Sprintf(" (a p99.9 needs 1000 runs per cell; these have at most %d)", runs)
	case strings.HasSuffix(metric, "p99"):
		return fmt.Sprintf(" (a p99 needs 100 runs per cell; these have at most %d)", runs)
	case strings.HasPrefix(metric, "sender_"):
		return " (they are not timed at the sender)"
	}
	return ""
}

func union(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// follows reports whether parameter k's value is set by the compared
// parameters' values in every cell, as topology.k auto follows
// workload.hosts: such a parameter changes with the comparison and is no
// other setting to hold fixed. In a grid, where every combination is run,
// only a derived parameter can follow; any other varies on its own.
func follows(cells []scenario.Cell, k string, compared []string) bool {
	seen := map[string]string{}
	for _, c := range cells {
		key := ""
		for _, p := range compared {
			key += c.Params[p] + "\x00"
		}
		if v, ok := seen[key]; ok && v != c.Params[k] {
			return false
		}
		seen[key] = c.Params[k]
	}
	return true
}

func settingText(m map[string]string) string {
	s := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if s != "" {
			s += ", "
		}
		s += k + "=" + m[k]
	}
	return s
}
