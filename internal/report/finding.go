package report

import (
	"cmp"
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
	Name  string  // the compared values: "obs", or "te, 16"
	Mean  float64 // seconds
	Queue float64 // p99 over time of the fabric's highest tier, bytes; zero if not sampled
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
		e := rankEntry{Name: describe(c, compare, false), Mean: c.Mean}
		if n := len(c.Tiers); n > 0 {
			e.Queue = c.Tiers[n-1].QueueP99Bytes
		}
		out[i].Entries = append(out[i].Entries, e)
	}
	for _, r := range out {
		// Stable: equal means keep the scenario's order.
		slices.SortStableFunc(r.Entries, func(a, b rankEntry) int { return cmp.Compare(a.Mean, b.Mean) })
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

// describe names cell c by keys: "k=v, k=v" with names, "v, v" without.
func describe(c scenario.Cell, keys []string, names bool) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = c.Params[k]
		if names {
			parts[i] = k + "=" + parts[i]
		}
	}
	return strings.Join(parts, ", ")
}
