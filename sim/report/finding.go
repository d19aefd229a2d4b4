package report

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// ranking is our answer to a study's question for one setting of the
// parameters it does not compare: the compared values, fastest first.
type ranking struct {
	Group   string // "workload.background=0.5, failure.links=2"; empty when nothing else varies
	Entries []rankEntry
}

type rankEntry struct {
	Name   string  // the compared values: "select=obs", or "balancer=te, qps=16"
	Mean   float64 // seconds
	StdErr float64 // of Mean
	Queue  float64 // p99 over time of the fabric's highest tier, bytes; zero if not sampled
	// Tie: this entry's mean is within the noise of the one before it
	// (tied), so the order between them means nothing.
	Tie bool
}

// The noise within which two means are ties: two standard errors of
// their difference, and never less than tieRel of the larger, since one
// run has no spread to measure and a deterministic simulator's last digits
// are no finding.
const tieRel = 0.01

// NoiseRule says in words when two results are shown as a tie.
var NoiseRule = fmt.Sprintf("within two standard errors of their difference or within %g%% of the larger", 100*tieRel)

// tied reports whether means a and b, with standard errors sa and sb,
// are equal within the run's noise.
func tied(a, sa, b, sb float64) bool {
	d := math.Abs(a - b)
	return d <= 2*math.Hypot(sa, sb) || d <= tieRel*max(a, b)
}

// rank groups cells by every varying parameter outside compare and orders
// each group by mean completion time. Nil when compare is empty or names
// no parameter of the cells.
func rank(cells []scenario.Cell, compare []string) []ranking {
	if len(compare) == 0 || len(cells) == 0 {
		return nil
	}
	for _, k := range compare {
		if _, ok := cells[0].Params[k]; !ok {
			return nil
		}
	}
	var others []string
	for _, k := range paramKeys(cells) {
		if !slices.Contains(compare, k) && varies(cells, k) {
			others = append(others, k)
		}
	}
	var out []ranking
	index := map[string]int{}
	for _, c := range cells {
		group := describe(c, others, true)
		i, ok := index[group]
		if !ok {
			i = len(out)
			index[group] = i
			out = append(out, ranking{Group: group})
		}
		e := rankEntry{Name: describe(c, compare, false), Mean: c.Mean, StdErr: c.StdErr}
		if n := len(c.Tiers); n > 0 {
			e.Queue = c.Tiers[n-1].QueueP99Bytes
		}
		out[i].Entries = append(out[i].Entries, e)
	}
	for _, r := range out {
		// Stable: equal means keep the scenario's order.
		slices.SortStableFunc(r.Entries, func(a, b rankEntry) int { return cmp.Compare(a.Mean, b.Mean) })
		for i := 1; i < len(r.Entries); i++ {
			a, b := &r.Entries[i-1], &r.Entries[i]
			b.Tie = tied(a.Mean, a.StdErr, b.Mean, b.StdErr)
		}
	}
	return out
}

func varies(cells []scenario.Cell, key string) bool {
	for _, c := range cells[1:] {
		if c.Params[key] != cells[0].Params[key] {
			return true
		}
	}
	return false
}

// describe names cell c by keys: "path.k=v, path.k=v" with full names,
// "k=v, k=v" with the short ones.
func describe(c scenario.Cell, keys []string, full bool) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := k
		if !full {
			name = shortName(k)
		}
		parts[i] = name + "=" + c.Params[k]
	}
	return strings.Join(parts, ", ")
}
