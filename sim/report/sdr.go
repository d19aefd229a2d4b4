package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// sdrView compares erasure coding with selective repeat, cell by cell of
// a drop rate x message size grid, as SDR-RDMA's long-haul figures do.
type sdrView struct {
	Facets []sdrFacet
}

type sdrFacet struct {
	Title string // the other varying parameters, or ""
	// Headline is the paper's own comparison, SR-RTO over EC-MDS timed
	// until the sender's last ACK; PaperMean and PaperTail draw it.
	Headline             string
	PaperMean, PaperTail template.HTML
	// Mean and P999 draw ours: the best SR variant over the best EC
	// variant, timed the same way.
	Mean, P999 template.HTML
	Summary    string
	ECWins     []string
	SRWins     []string
	Ties       []string
	NA         []string
}

// The paper's largest SR-RTO / EC-MDS ratios over its long-haul grid
// (SDR-RDMA section 5.2; REFERENCES.md): mean and p99.9.
const (
	paperMeanRatio = 6.5
	paperTailRatio = 12.2
)

// best is the fastest scheme of one family in one (loss, size) cell.
type best struct {
	scheme string
	t, se  float64 // the time and, for a mean, its standard error
}

// speedup is one (loss, size) cell: the SR time over the EC time, so
// above 1 where EC finishes first. Zero where a side is absent. The tail
// is the highest percentile the cell's runs support (tailQ).
type speedup struct {
	loss, size     string
	mean, tail     float64
	tailQ          float64
	sr, ec         best // by mean
	srTail, ecTail best // by the tail percentile
}

// side says which schemes a comparison puts on each side.
type side func(scheme string) bool

var (
	srFamily side = func(s string) bool { return schemeFamily(s) == "sr" }
	ecFamily side = func(s string) bool { return schemeFamily(s) == "ec" }
	srRTO    side = func(s string) bool { n, _, _ := strings.Cut(s, ":"); return n == "sr" || n == "sr-rto" }
	ecMDS    side = func(s string) bool { n, _, _ := strings.Cut(s, ":"); return n == "ec" }
)

// supportedQuantile is the highest of p99.9, p99 and p90 that n samples
// support (at least 1/(1-q) of them), or 0 below 10.
func supportedQuantile(n int) float64 {
	switch {
	case n >= 1000:
		return 0.999
	case n >= 100:
		return 0.99
	case n >= 10:
		return 0.9
	}
	return 0
}

// quantileName writes q as a percentile: p99.9.
func quantileName(q float64) string {
	if q == 0 {
		return "no tail"
	}
	return "p" + strconv.FormatFloat(100*q, 'f', -1, 64)
}

// timingOf returns the cell's completion times at the sender where it
// has them (the paper's timing), else at the receiver.
func timingOf(c scenario.Cell, atSender bool) (mean, stderr float64, completions []float64) {
	if t := c.AtSender; atSender && t != nil {
		return t.Mean, t.StdErr, t.Completions
	}
	return c.Mean, c.StdErr, c.Completions
}

// compareGrid fills a drop rate x message size grid of SR over EC times.
func compareGrid(cells []scenario.Cell, losses, sizes *axis, sr, ec side, atSender bool) [][]speedup {
	grid := make([][]speedup, len(losses.Values))
	for i := range grid {
		grid[i] = make([]speedup, len(sizes.Values))
		for j := range grid[i] {
			grid[i][j] = speedup{loss: losses.Values[i], size: sizes.Values[j], tailQ: 1}
		}
	}
	for _, c := range cells {
		s := &grid[losses.Pos(c.Params[keyLoss])][sizes.Pos(c.Params[keySize])]
		mean, se, comps := timingOf(c, atSender)
		s.tailQ = min(s.tailQ, supportedQuantile(len(comps)))
		scheme := c.Params[keyScheme]
		switch {
		case sr(scheme):
			better(&s.sr, scheme, mean, se)
		case ec(scheme):
			better(&s.ec, scheme, mean, se)
		}
	}
	for _, c := range cells { // the tails, once every cell's quantile is known
		s := &grid[losses.Pos(c.Params[keyLoss])][sizes.Pos(c.Params[keySize])]
		if s.tailQ == 0 {
			continue
		}
		_, _, comps := timingOf(c, atSender)
		sorted := slices.Sorted(slices.Values(comps))
		t := scenario.Percentile(sorted, s.tailQ)
		scheme := c.Params[keyScheme]
		switch {
		case sr(scheme):
			better(&s.srTail, scheme, t, 0)
		case ec(scheme):
			better(&s.ecTail, scheme, t, 0)
		}
	}
	for i := range grid {
		for j := range grid[i] {
			s := &grid[i][j]
			s.mean, s.tail = ratio(s.sr, s.ec), ratio(s.srTail, s.ecTail)
		}
	}
	return grid
}

// largest returns the cell of grid with the largest value of f, or nil.
func largest(grid [][]speedup, f func(*speedup) float64) *speedup {
	var top *speedup
	for i := range grid {
		for j := range grid[i] {
			if s := &grid[i][j]; f(s) > 0 && (top == nil || f(s) > f(top)) {
				top = s
			}
		}
	}
	return top
}

// headline says the paper's comparison in words: the largest SR-RTO /
// EC-MDS ratios at the paper's timing and the same at the receiver. The
// paper's own ratios stand beside ours only for its long-haul message
// grid (cells timed at the sender), which they come from.
func headline(paper, atReceiver [][]speedup, messages bool) string {
	top, topTail := largest(paper, func(s *speedup) float64 { return s.mean }), largest(paper, func(s *speedup) float64 { return s.tail })
	if top == nil {
		return "The grid has no cell with both SR-RTO (sr) and EC-MDS (ec): the paper's comparison cannot be made."
	}
	paperMean, paperTail := fmt.Sprintf("; paper %s", times(paperMeanRatio)), fmt.Sprintf("; paper's p99.9 %s", times(paperTailRatio))
	timing := " timed until the sender's last ACK"
	if !messages {
		paperMean, paperTail, timing = "", "", ""
	}
	out := fmt.Sprintf("The paper's comparison, SR-RTO over EC-MDS%s: mean up to %s (loss=%s size=%s%s)",
		timing, times(top.mean), top.loss, top.size, paperMean)
	if topTail != nil {
		out += fmt.Sprintf(", %s up to %s (loss=%s size=%s%s)",
			quantileName(topTail.tailQ), times(topTail.tail), topTail.loss, topTail.size, paperTail)
		if topTail.tailQ < 0.999 {
			out += fmt.Sprintf("; a p99.9 needs 1000 runs a cell, and the cells with the largest ratios support only a %s", quantileName(topTail.tailQ))
		}
	}
	rtop, rtail := largest(atReceiver, func(s *speedup) float64 { return s.mean }), largest(atReceiver, func(s *speedup) float64 { return s.tail })
	if messages && rtop != nil && rtail != nil {
		out += fmt.Sprintf(". Timed at the receiver (every byte in place): mean up to %s, %s up to %s",
			times(rtop.mean), quantileName(rtail.tailQ), times(rtail.tail))
	}
	return out + "."
}

// sdr builds the EC-vs-SR view, or returns nil where the grid has no
// topology.loss x workload.size x transport.scheme with both families.
func sdr(cells []scenario.Cell) *sdrView {
	keys := paramKeys(cells)
	for _, k := range []string{keyLoss, keySize, keyScheme} {
		if !slices.Contains(keys, k) {
			return nil
		}
	}
	fams := map[string]bool{}
	for _, s := range newAxis(cells, keyScheme).Values {
		fams[schemeFamily(s)] = true
	}
	if !fams["sr"] || !fams["ec"] {
		return nil
	}
	v := &sdrView{}
	for _, fc := range facets(cells, varying(cells, keyLoss, keySize, keyScheme)) {
		v.Facets = append(v.Facets, sdrFacetOf(fc))
	}
	return v
}

func sdrFacetOf(fc *facet) sdrFacet {
	losses, sizes := newAxis(fc.Cells, keyLoss), newAxis(fc.Cells, keySize)
	paper := compareGrid(fc.Cells, losses, sizes, srRTO, ecMDS, true)
	grid := compareGrid(fc.Cells, losses, sizes, srFamily, ecFamily, true)
	out := sdrFacet{Title: fc.Title,
		Headline: headline(paper, compareGrid(fc.Cells, losses, sizes, srRTO, ecMDS, false),
			slices.ContainsFunc(fc.Cells, func(c scenario.Cell) bool { return c.AtSender != nil }))}
	var ecMean, ecTail, n, nTail int
	for i := range grid {
		for j := range grid[i] {
			s := &grid[i][j]
			where := shortName(keyLoss) + "=" + s.loss + " " + shortName(keySize) + "=" + s.size
			if s.tail > 0 {
				nTail++
				if s.tail > 1 && !tied(s.srTail.t, 0, s.ecTail.t, 0) {
					ecTail++
				}
			}
			if s.mean == 0 {
				out.NA = append(out.NA, where)
				continue
			}
			n++
			line := fmt.Sprintf("%s: %s (%s %s); best EC %s %s, best SR %s %s",
				where, times(s.mean), quantileName(s.tailQ), times(s.tail), s.ec.scheme, seconds(s.ec.t), s.sr.scheme, seconds(s.sr.t))
			switch {
			case tied(s.sr.t, s.sr.se, s.ec.t, s.ec.se):
				out.Ties = append(out.Ties, line)
			case s.mean > 1:
				ecMean++
				out.ECWins = append(out.ECWins, line)
			default:
				out.SRWins = append(out.SRWins, line)
			}
		}
	}
	var sum []string
	if n > 0 {
		sum = append(sum, fmt.Sprintf("EC has the lower mean in %d of %d cells (%d ties)", ecMean, n, len(out.Ties)))
		if nTail > 0 {
			sum[0] += fmt.Sprintf(" and the lower tail in %d of %d", ecTail, nTail)
		}
		top := largest(grid, func(s *speedup) float64 { return s.mean })
		sum = append(sum, fmt.Sprintf("largest mean speedup %s at loss=%s size=%s", times(top.mean), top.loss, top.size))
		if t := largest(grid, func(s *speedup) float64 { return s.tail }); t != nil {
			sum = append(sum, fmt.Sprintf("largest tail speedup %s (%s) at loss=%s size=%s", times(t.tail), quantileName(t.tailQ), t.loss, t.size))
		}
		srLead := func(s *speedup) float64 { // 0 where a cell has no comparison
			if s.mean <= 0 {
				return 0
			}
			return 1 / s.mean
		}
		if low := largest(grid, srLead); low != nil && low.mean < 1 {
			sum = append(sum, fmt.Sprintf("SR's largest lead %s at loss=%s size=%s", times(1/low.mean), low.loss, low.size))
		}
	} else {
		sum = append(sum, "no cell has both an SR and an EC completion time")
	}
	out.Summary = strings.Join(sum, "; ") + "."
	out.PaperMean = heatmap("SR-RTO / EC-MDS, mean", paper, losses.Values, sizes.Values, func(s speedup) (float64, string) {
		return s.mean, tip(s, s.sr, s.ec, "mean")
	})
	out.PaperTail = heatmap("SR-RTO / EC-MDS, tail", paper, losses.Values, sizes.Values, func(s speedup) (float64, string) {
		return s.tail, tip(s, s.srTail, s.ecTail, quantileName(s.tailQ))
	})
	out.Mean = heatmap("best SR / best EC, mean", grid, losses.Values, sizes.Values, func(s speedup) (float64, string) {
		return s.mean, tip(s, s.sr, s.ec, "mean")
	})
	out.P999 = heatmap("best SR / best EC, tail", grid, losses.Values, sizes.Values, func(s speedup) (float64, string) {
		return s.tail, tip(s, s.srTail, s.ecTail, quantileName(s.tailQ))
	})
	return out
}

func better(b *best, scheme string, t, se float64) {
	if t > 0 && (b.t == 0 || t < b.t) {
		*b = best{scheme, t, se}
	}
}

func ratio(sr, ec best) float64 {
	if sr.t <= 0 || ec.t <= 0 {
		return 0
	}
	return sr.t / ec.t
}

func tip(s speedup, sr, ec best, what string) string {
	if sr.t == 0 || ec.t == 0 {
		return fmt.Sprintf("loss=%s size=%s: no %s for one of SR and EC", s.loss, s.size, what)
	}
	return fmt.Sprintf("loss=%s size=%s %s: SR %s %s, EC %s %s", s.loss, s.size, what,
		sr.scheme, seconds(sr.t), ec.scheme, seconds(ec.t))
}

// times writes a speedup: 3.21x, 12.3x.
func times(x float64) string {
	switch {
	case x <= 0:
		return "n/a"
	case x >= 100:
		return fmt.Sprintf("%.0f×", x)
	case x >= 10:
		return fmt.Sprintf("%.1f×", x)
	}
	return fmt.Sprintf("%.2f×", x)
}

// heatSat is the speedup at which the colour saturates, either way.
const heatSat = 16.0

// heatColour maps a speedup to a diverging colour on a log scale: white
// at 1, blue where EC is faster, red where SR is; dark reports whether
// text on it should be white.
func heatColour(x float64) (fill string, dark bool) {
	if x <= 0 {
		return "#eeeeee", false
	}
	t := math.Min(1, math.Abs(math.Log(x))/math.Log(heatSat))
	to := [3]float64{0x21, 0x66, 0xac} // EC faster
	if x < 1 {
		to = [3]float64{0xb2, 0x18, 0x2b} // SR faster
	}
	var c [3]int
	for i := range c {
		c[i] = int(math.Round(255 + (to[i]-255)*t))
	}
	return fmt.Sprintf("#%02x%02x%02x", c[0], c[1], c[2]), t > 0.55
}

// heatmap draws the speedup of every (loss, size) cell as a table of
// coloured squares with the number written in each: drop rate down,
// message size across.
func heatmap(what string, grid [][]speedup, losses, sizes []string, val func(speedup) (float64, string)) template.HTML {
	const (
		cw, ch    = 88, 38 // cell size
		left, top = 86, 62 // room for row labels, title and column labels
		legendH   = 56
	)
	const sw = 52 // colour scale step
	w := max(left+cw*len(sizes)+16, left+sw*5+70)
	h := top + ch*len(losses) + legendH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s font-size="13" role="img">`+"\n",
		w, h, w, h, svgFont)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="14" font-weight="bold">%s</text>`+"\n", 4, esc(what))
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#444">workload.size</text>`+"\n", left+cw*len(sizes)/2, 36)
	fmt.Fprintf(&b, `<text x="4" y="%d" fill="#444">loss</text>`+"\n", top-6)
	for j, s := range sizes {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", left+cw*j+cw/2, top-6, esc(s))
	}
	for i, l := range losses {
		y := top + ch*i
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+ch/2+5, esc(l))
		for j := range sizes {
			x := left + cw*j
			v, title := val(grid[i][j])
			fill, dark := heatColour(v)
			ink := "#111111"
			if dark {
				ink = "#ffffff"
			}
			fmt.Fprintf(&b, `<g><title>%s</title><rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#ffffff"/>`+
				`<text x="%d" y="%d" text-anchor="middle" fill="%s">%s</text></g>`+"\n",
				esc(title), x, y, cw, ch, fill, x+cw/2, y+ch/2+5, ink, esc(times(v)))
		}
	}
	// The colour scale: SR faster on the left, EC faster on the right.
	ly := top + ch*len(losses) + 14
	marks := []float64{1 / heatSat, 1 / 4.0, 1, 4, heatSat}
	for k, m := range marks {
		fill, _ := heatColour(m)
		x := left + sw*k
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="12" fill="%s" stroke="#cccccc"/>`, x, ly, sw, fill)
		label := fmt.Sprintf("%g", m)
		if m < 1 {
			label = fmt.Sprintf("1/%g", 1/m)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" font-size="11">%s</text>`+"\n", x+sw/2, ly+24, label)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#444" text-anchor="end">SR faster</text>`, left-8, ly+10)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11" fill="#444">EC faster</text>`+"\n", left+sw*len(marks)+6, ly+10)
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// esc escapes text for SVG.
func esc(s string) string { return template.HTMLEscapeString(s) }
