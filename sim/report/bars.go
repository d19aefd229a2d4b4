package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// A metric figure compares one figure of merit across cells: bars with
// their values written beside them where the cells are few, else a dot
// plot with a row per setting of the other parameters and a mark per
// compared variant, so that the variants line up on one axis.

// barsUpTo is the most cells drawn as bars; more make a figure taller
// than a screen.
const barsUpTo = 16

// metric is one figure of merit of a cell, in the unit its figure names.
type metric struct {
	title, unit string
	value       func(scenario.Cell) float64
}

// layout places cells in a comparison: Variant names a cell's compared
// values (its colour and mark), Group the other varying parameters (its
// row in a dot plot).
type layout struct {
	Variants []string
	variant  map[int]int // cell index -> variant
	Groups   []string
	group    map[int]int // cell index -> group
}

// newLayout lays cells out by the compared parameters; without any, every
// cell is its own variant.
func newLayout(cells []scenario.Cell, compare []string) *layout {
	l := &layout{variant: map[int]int{}, group: map[int]int{}}
	all := varying(cells)
	keys := slices.DeleteFunc(slices.Clone(compare), func(k string) bool { return !slices.Contains(all, k) })
	others := varying(cells, keys...)
	vIndex, gIndex := map[string]int{}, map[string]int{}
	for _, c := range cells {
		v := c.Label
		if len(keys) > 0 {
			v = describe(c, keys, false)
		}
		if _, ok := vIndex[v]; !ok {
			vIndex[v] = len(l.Variants)
			l.Variants = append(l.Variants, v)
		}
		g := describe(c, others, false)
		if _, ok := gIndex[g]; !ok {
			gIndex[g] = len(l.Groups)
			l.Groups = append(l.Groups, g)
		}
		l.variant[c.Index], l.group[c.Index] = vIndex[v], gIndex[g]
	}
	return l
}

// colour returns variant i's colour as CSS.
func colour(i int) string {
	c := palette[i%len(palette)]
	return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B)
}

// svgFont is the font of the report's hand-drawn SVG: the one gonum's
// plots are measured in, then metric-compatible fallbacks.
const svgFont = `font-family="Liberation Sans,Arial,Helvetica,sans-serif"`

// metricFigure draws m for every cell, or returns false where no cell has
// a value above zero (a metric that is always zero says nothing).
func metricFigure(cells []scenario.Cell, l *layout, m metric) (figure, bool) {
	vals := make([]float64, len(cells))
	top := 0.0
	for i, c := range cells {
		vals[i] = m.value(c)
		top = max(top, vals[i])
	}
	if top <= 0 || math.IsInf(top, 0) || math.IsNaN(top) {
		return figure{}, false
	}
	title := m.title
	if m.unit != "" {
		title += " (" + m.unit + ")"
	}
	if len(cells) <= barsUpTo {
		return figure{Title: title, SVG: barSVG(cells, l, title, vals, top)}, true
	}
	return figure{Title: title, SVG: dotSVG(cells, l, title, vals, top)}, true
}

// textWidth estimates the width in pixels of s at font size px.
func textWidth(s string, px float64) int { return int(math.Ceil(float64(len(s)) * px * 0.56)) }

// barSVG draws a horizontal bar per cell, coloured by variant, its value
// written at its end.
func barSVG(cells []scenario.Cell, l *layout, title string, vals []float64, top float64) template.HTML {
	const (
		rowH, barH = 20, 14
		plotW      = 300
		titleH     = 24
	)
	labelW := 0
	for _, c := range cells {
		labelW = max(labelW, textWidth(c.Label, 12))
	}
	labelW = min(labelW+8, 420)
	w := labelW + plotW + 90
	h := titleH + rowH*len(cells) + 6
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s font-size="12" role="img">`+"\n", w, h, w, h, svgFont)
	fmt.Fprintf(&b, `<text x="0" y="16" font-size="14" font-weight="bold">%s</text>`+"\n", esc(title))
	for i, c := range cells {
		y := titleH + rowH*i
		bw := int(math.Round(vals[i] / top * plotW))
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, labelW-6, y+barH-2, esc(c.Label))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`, labelW, y, max(bw, 1), barH, colour(l.variant[c.Index]))
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", labelW+max(bw, 1)+4, y+barH-2, esc(barValue(vals[i])))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888888"/>`, labelW, titleH-2, labelW, h-4)
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// dotSVG draws a row per group with a mark per variant on a shared axis
// from zero; each mark's value shows on hover, and the fabric table has
// them all.
func dotSVG(cells []scenario.Cell, l *layout, title string, vals []float64, top float64) template.HTML {
	const (
		rowH   = 18
		plotW  = 420
		titleH = 24
		axisH  = 26
	)
	labelW := 0
	for _, g := range l.Groups {
		labelW = max(labelW, textWidth(g, 11))
	}
	labelW = min(labelW+8, 420)
	w := labelW + plotW + 30
	h := titleH + rowH*len(l.Groups) + axisH
	step, steps := axisTicks(top)
	scale := step * float64(steps)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" %s font-size="11" role="img">`+"\n", w, h, w, h, svgFont)
	fmt.Fprintf(&b, `<text x="0" y="16" font-size="14" font-weight="bold">%s</text>`+"\n", esc(title))
	for g, name := range l.Groups {
		y := titleH + rowH*g
		if g%2 == 0 {
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f4f4f4"/>`, labelW, y, plotW, rowH)
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-6, y+rowH-5, esc(name))
	}
	for k := 0; k <= steps; k++ {
		x := labelW + plotW*k/steps
		y := titleH + rowH*len(l.Groups)
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#dddddd"/>`, x, titleH, x, y)
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, x, y+14, esc(barValue(step*float64(k))))
	}
	for i, c := range cells {
		v, g := l.variant[c.Index], l.group[c.Index]
		x := float64(labelW) + vals[i]/scale*plotW
		y := float64(titleH + rowH*g + rowH/2)
		fmt.Fprintf(&b, `<g><title>%s: %s</title>%s</g>`+"\n", esc(c.Label), esc(barValue(vals[i])), mark(v, x, y))
	}
	b.WriteString("</svg>")
	return template.HTML(b.String())
}

// mark draws variant v's symbol at (x, y): a shape per variant as well as
// a colour, so that overlapping marks and colour-blind readers can still
// tell them apart.
func mark(v int, x, y float64) string {
	c := colour(v)
	const r = 4.5
	switch v % 5 {
	case 0:
		return fmt.Sprintf(`<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s" fill-opacity="0.85"/>`, x, y, r, c)
	case 1:
		return fmt.Sprintf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="%s" stroke-width="1.8"/>`, x-r, y-r, 2*r, 2*r, c)
	case 2:
		return fmt.Sprintf(`<path d="M%.1f %.1fL%.1f %.1fL%.1f %.1fZ" fill="%s" fill-opacity="0.85"/>`, x, y-r-1, x+r+1, y+r, x-r-1, y+r, c)
	case 3:
		return fmt.Sprintf(`<path d="M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f" stroke="%s" stroke-width="2"/>`, x-r, y-r, x+r, y+r, x-r, y+r, x+r, y-r, c)
	}
	return fmt.Sprintf(`<circle cx="%.1f" cy="%.1f" r="%.1f" fill="none" stroke="%s" stroke-width="1.8"/>`, x, y, r+1, c)
}

// legendHTML lists the variants' marks and names; the browser wraps it
// to the page.
func legendHTML(l *layout) template.HTML {
	var b strings.Builder
	for i, v := range l.Variants {
		fmt.Fprintf(&b, `<span class="key"><svg xmlns="http://www.w3.org/2000/svg" width="30" height="14" viewBox="0 0 30 14">%s%s</svg>%s</span>`+"\n",
			legendLine(i), mark(i, 15, 7), esc(v))
	}
	return template.HTML(b.String())
}

// legendLine is variant i's line in the queue panels: its colour and dash
// pattern.
func legendLine(i int) string {
	dash := ""
	if d := lineDashes[i%len(lineDashes)]; len(d) > 0 {
		parts := make([]string, len(d))
		for k, x := range d {
			parts[k] = fmt.Sprintf("%g", x.Points())
		}
		dash = ` stroke-dasharray="` + strings.Join(parts, ",") + `"`
	}
	return fmt.Sprintf(`<line x1="0" y1="7" x2="30" y2="7" stroke="%s" stroke-width="1.5"%s/>`, colour(i), dash)
}

// axisTicks returns an axis from zero past top in steps of 1, 2 or 5
// times a power of ten, at most five steps.
func axisTicks(top float64) (step float64, n int) {
	p := math.Pow(10, math.Floor(math.Log10(top/4)))
	for _, m := range []float64{1, 2, 5, 10} {
		step = m * p
		if n = int(math.Ceil(top / step)); n <= 5 {
			break
		}
	}
	return step, n
}

// barValue writes a figure's value with three significant digits, no
// trailing zeros: 90, 55.4, 0.5.
func barValue(x float64) string {
	text := significant(x, 3)
	if strings.Contains(text, ".") {
		text = strings.TrimRight(strings.TrimRight(text, "0"), ".")
	}
	return text
}
