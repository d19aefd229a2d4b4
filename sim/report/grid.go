package report

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sdrnet/sdrnet/internal/units"
	"github.com/sdrnet/sdrnet/sim/scenario"
)

// The parameters the report gives a meaning to.
const (
	keyLoss   = "topology.loss"
	keySize   = "workload.size"
	keyScheme = "transport.scheme"
)

// axis is one parameter's distinct values in the cells, in display order:
// by number where every value reads as one (a probability, a size, a rate
// or a duration), else in order of first appearance, which is the
// scenario's order.
type axis struct {
	Key    string
	Values []string
	Num    []float64 // the values as numbers; nil when not numeric
	index  map[string]int
}

func newAxis(cells []scenario.Cell, key string) *axis {
	a := &axis{Key: key, index: map[string]int{}}
	for _, c := range cells {
		v := c.Params[key]
		if _, ok := a.index[v]; !ok {
			a.index[v] = len(a.Values)
			a.Values = append(a.Values, v)
		}
	}
	nums := make([]float64, len(a.Values))
	for i, v := range a.Values {
		x, ok := number(v)
		if !ok {
			nums = nil
			break
		}
		nums[i] = x
	}
	if nums != nil {
		order := make([]int, len(a.Values))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(nums[i], nums[j]) })
		vals, ns := make([]string, len(order)), make([]float64, len(order))
		for i, o := range order {
			vals[i], ns[i] = a.Values[o], nums[o]
			a.index[vals[i]] = i
		}
		a.Values, a.Num = vals, ns
	}
	return a
}

// Pos returns the position of value v on the axis.
func (a *axis) Pos(v string) int { return a.index[v] }

// Varies reports whether the axis has more than one value.
func (a *axis) Varies() bool { return len(a.Values) > 1 }

// number reads a parameter value as a number: plain, or a size, rate or
// duration in the units scenarios are written in.
func number(s string) (float64, bool) {
	if x, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(x) && !math.IsInf(x, 0) {
		return x, true
	}
	if n, err := units.ParseSize(s); err == nil {
		return float64(n), true
	}
	if r, err := units.ParseRate(s); err == nil {
		return r, true
	}
	if d, err := units.ParseDuration(s); err == nil {
		return d.Seconds(), true
	}
	return 0, false
}

// shortName is a parameter's last path element, as cell labels write it.
func shortName(key string) string { return key[strings.LastIndex(key, ".")+1:] }

// facet is a group of cells sharing one value of every varying parameter
// not drawn on a plot's own axes.
type facet struct {
	Title string // "loss=1e-4 mtu=4096", or "" when there is one facet
	Cells []scenario.Cell
	pos   []int
}

// facets groups cells by their values of keys, in display order.
func facets(cells []scenario.Cell, keys []string) []*facet {
	axes := make([]*axis, len(keys))
	for i, k := range keys {
		axes[i] = newAxis(cells, k)
	}
	var out []*facet
	for _, c := range cells {
		pos := make([]int, len(keys))
		for i, a := range axes {
			pos[i] = a.Pos(c.Params[keys[i]])
		}
		i := slices.IndexFunc(out, func(f *facet) bool { return slices.Equal(f.pos, pos) })
		if i < 0 {
			var title []string
			for _, k := range keys {
				title = append(title, shortName(k)+"="+c.Params[k])
			}
			out = append(out, &facet{Title: strings.Join(title, " "), pos: pos})
			i = len(out) - 1
		}
		out[i].Cells = append(out[i].Cells, c)
	}
	slices.SortStableFunc(out, func(a, b *facet) int { return slices.Compare(a.pos, b.pos) })
	return out
}

// varying returns the parameters with more than one value, sorted, less
// those in except.
func varying(cells []scenario.Cell, except ...string) []string {
	var out []string
	for _, k := range paramKeys(cells) {
		if !slices.Contains(except, k) && newAxis(cells, k).Varies() {
			out = append(out, k)
		}
	}
	return out
}

// schemeFamily says whether a transport scheme is selective repeat ("sr"),
// erasure coding ("ec") or neither ("").
func schemeFamily(s string) string {
	name, _, _ := strings.Cut(s, ":")
	switch name {
	case "sr", "sr-rto", "sr-nack":
		return "sr"
	case "ec", "xor":
		return "ec"
	}
	return ""
}
