package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// Verdict is a paper's claim judged against a run: in each group of cells
// that differ only in the claim's compared parameters, whether the better
// setting's metric was at least Factor times lower. Every figure in it
// comes from the cells.
type Verdict struct {
	Claim  string  `json:"claim"`
	Better string  `json:"better"`
	Worse  string  `json:"worse"`
	Metric string  `json:"metric"`
	Factor float64 `json:"factor"`
	// Tolerance: the better setting may be this fraction higher.
	Tolerance float64       `json:"tolerance,omitempty"`
	Holds     int           `json:"holds"` // groups where the claim held
	Groups    []VerdictPair `json:"groups"`
}

// VerdictPair is one group's comparison.
type VerdictPair struct {
	Group  string  `json:"group"` // the other parameters that vary
	Better float64 `json:"better"`
	Worse  float64 `json:"worse"`
	Metric string  `json:"-"`
}

// Ratio is how many times the worse setting's figure exceeds the better's.
func (p VerdictPair) Ratio() float64 { return p.Worse / p.Better }

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
	return fmt.Sprintf("%s against %s (%s)", show(p.Better), show(p.Worse), ratio)
}

// Summary says in words how the claim fared.
func (v Verdict) Summary() string {
	switch {
	case len(v.Groups) == 0:
		return "not judged: this run has no pair of cells to compare (run the full grid)"
	case len(v.Groups) == 1 && v.Holds == 1:
		return "holds"
	case len(v.Groups) == 1:
		return "does not hold"
	case v.Holds == len(v.Groups):
		return fmt.Sprintf("holds in all %d settings", len(v.Groups))
	case v.Holds == 0:
		return fmt.Sprintf("does not hold in any of %d settings", len(v.Groups))
	}
	return fmt.Sprintf("holds in %d of %d settings", v.Holds, len(v.Groups))
}

// Judge evaluates claims against cells.
func Judge(cells []scenario.Cell, claims []scenario.Claim) []Verdict {
	var out []Verdict
	for _, c := range claims {
		v := Verdict{Claim: c.Text, Better: settingText(c.Better), Worse: settingText(c.Worse),
			Metric: cmp.Or(c.Metric, "mean"), Factor: max(c.Factor, 1), Tolerance: c.Tolerance}
		compared := slices.Sorted(maps.Keys(c.Better))
		var others []string
		for _, k := range paramKeys(cells) {
			if !slices.Contains(compared, k) && varies(cells, k) && !follows(cells, k, compared) {
				others = append(others, k)
			}
		}
		worse := map[string]scenario.Cell{}
		for _, cell := range cells {
			if scenario.Matches(cell.Params, c.Where) && scenario.Matches(cell.Params, c.Worse) {
				worse[describe(cell, others, true)] = cell
			}
		}
		for _, cell := range cells {
			if !scenario.Matches(cell.Params, c.Where) || !scenario.Matches(cell.Params, c.Better) {
				continue
			}
			group := describe(cell, others, true)
			w, ok := worse[group]
			if !ok || cell.Runs == 0 || w.Runs == 0 {
				continue
			}
			p := VerdictPair{Group: group, Better: scenario.ClaimValue(&cell, v.Metric),
				Worse: scenario.ClaimValue(&w, v.Metric), Metric: v.Metric}
			if math.IsNaN(p.Better) || math.IsNaN(p.Worse) {
				continue // a figure these cells do not have: not judged
			}
			if p.Better*v.Factor < p.Worse*(1+v.Tolerance) {
				v.Holds++
			}
			v.Groups = append(v.Groups, p)
		}
		out = append(out, v)
	}
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
