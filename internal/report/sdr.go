package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// sdrView compares erasure coding with selective repeat, cell by cell of
// a drop rate x message size grid, as SDR-RDMA's long-haul figures do.
type sdrView struct {
	Facets []sdrFacet
}

type sdrFacet struct {
	Title      string // the other varying parameters, or ""
	Mean, P999 template.HTML
	Summary    string
	ECWins     []string
	SRWins     []string
	Ties       []string
	NA         []string
}

// best is the fastest scheme of one family in one (loss, size) cell.
type best struct {
	scheme string
	t      float64
}

// speedup is one (loss, size) cell: the best SR time over the best EC
// time, so above 1 where EC finishes first. Zero where a family is absent.
type speedup struct {
	loss, size     string
	mean, p999     float64
	sr, ec         best // by mean
	srTail, ecTail best // by p99.9
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
	grid := make([][]speedup, len(losses.Values))
	for i := range grid {
		grid[i] = make([]speedup, len(sizes.Values))
		for j := range grid[i] {
			grid[i][j] = speedup{loss: losses.Values[i], size: sizes.Values[j]}
		}
	}
	for _, c := range fc.Cells {
		s := &grid[losses.Pos(c.Params[keyLoss])][sizes.Pos(c.Params[keySize])]
		scheme := c.Params[keyScheme]
		switch schemeFamily(scheme) {
		case "sr":
			better(&s.sr, scheme, c.Mean)
			better(&s.srTail, scheme, c.P999)
		case "ec":
			better(&s.ec, scheme, c.Mean)
			better(&s.ecTail, scheme, c.P999)
		}
	}
	out := sdrFacet{Title: fc.Title}
	var ecMean, ecTail, n, nTail int
	var top, topTail, low *speedup
	for i := range grid {
		for j := range grid[i] {
			s := &grid[i][j]
			s.mean, s.p999 = ratio(s.sr, s.ec), ratio(s.srTail, s.ecTail)
			where := shortName(keyLoss) + "=" + s.loss + " " + shortName(keySize) + "=" + s.size
			if s.p999 > 0 {
				nTail++
				if s.p999 > 1 {
					ecTail++
				}
				if topTail == nil || s.p999 > topTail.p999 {
					topTail = s
				}
			}
			if s.mean == 0 {
				out.NA = append(out.NA, where)
				continue
			}
			n++
			line := fmt.Sprintf("%s: %s (p99.9 %s); best EC %s %s, best SR %s %s",
				where, times(s.mean), times(s.p999), s.ec.scheme, seconds(s.ec.t), s.sr.scheme, seconds(s.sr.t))
			switch {
			case s.mean > 1:
				ecMean++
				out.ECWins = append(out.ECWins, line)
			case s.mean < 1:
				out.SRWins = append(out.SRWins, line)
			default:
				out.Ties = append(out.Ties, line)
			}
			if top == nil || s.mean > top.mean {
				top = s
			}
			if low == nil || s.mean < low.mean {
				low = s
			}
		}
	}
	var sum []string
	if n > 0 {
		sum = append(sum, fmt.Sprintf("EC has the lower mean in %d of %d cells", ecMean, n))
		if nTail > 0 {
			sum[0] += fmt.Sprintf(" and the lower p99.9 in %d of %d", ecTail, nTail)
		}
		sum = append(sum, fmt.Sprintf("largest mean speedup %s at loss=%s size=%s", times(top.mean), top.loss, top.size))
		if topTail != nil {
			sum = append(sum, fmt.Sprintf("largest p99.9 speedup %s at loss=%s size=%s", times(topTail.p999), topTail.loss, topTail.size))
		}
		if low.mean < 1 {
			sum = append(sum, fmt.Sprintf("SR's largest lead %s at loss=%s size=%s", times(1/low.mean), low.loss, low.size))
		}
	} else {
		sum = append(sum, "no cell has both an SR and an EC completion time")
	}
	out.Summary = strings.Join(sum, "; ") + "."
	out.Mean = heatmap("mean", grid, losses.Values, sizes.Values, func(s speedup) (float64, string) {
		return s.mean, tip(s, s.sr, s.ec, "mean")
	})
	out.P999 = heatmap("p99.9", grid, losses.Values, sizes.Values, func(s speedup) (float64, string) {
		return s.p999, tip(s, s.srTail, s.ecTail, "p99.9")
	})
	return out
}

func better(b *best, scheme string, t float64) {
	if t > 0 && (b.t == 0 || t < b.t) {
		*b = best{scheme, t}
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
	return fmt.Sprintf("loss=%s size=%s %s: best SR %s %s, best EC %s %s", s.loss, s.size, what,
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
		cw, ch     = 88, 38 // cell size
		left, top  = 86, 62 // room for row labels, title and column labels
		legendH    = 56
		fontFamily = `font-family="Liberation Sans,Arial,Helvetica,sans-serif"`
	)
	const sw = 52 // colour scale step
	w := max(left+cw*len(sizes)+16, left+sw*5+70)
	h := top + ch*len(losses) + legendH
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s font-size="13" role="img">`+"\n",
		w, h, w, h, fontFamily)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="14" font-weight="bold">best SR %s / best EC %s</text>`+"\n", 4, esc(what), esc(what))
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
