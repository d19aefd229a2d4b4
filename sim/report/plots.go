package report

import (
	"bytes"
	"cmp"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// figure is one plot of the report, as inline SVG.
type figure struct {
	Title   string
	SVG     template.HTML
	Caption string
}

// Plot size, in points.
const (
	plotW = 420
	plotH = 280
)

// palette holds the series colours (Okabe and Ito's, which stay distinct
// for colour-blind readers), picked by a scheme's place in the grid so a
// scheme has one colour throughout the report.
var palette = []color.RGBA{
	{0x00, 0x72, 0xb2, 0xff}, // blue
	{0xd5, 0x5e, 0x00, 0xff}, // vermillion
	{0x00, 0x9e, 0x73, 0xff}, // bluish green
	{0xcc, 0x79, 0xa7, 0xff}, // reddish purple
	{0xe6, 0x9f, 0x00, 0xff}, // orange
	{0x56, 0xb4, 0xe9, 0xff}, // sky blue
	{0x00, 0x00, 0x00, 0xff}, // black
	{0x99, 0x99, 0x99, 0xff}, // grey
}

var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.RingGlyph{}, draw.CrossGlyph{},
	draw.TriangleGlyph{}, draw.PlusGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{},
}

// axisNames says what the plotted parameters are.
var axisNames = map[string]string{keySize: "message size", keyLoss: "drop rate"}

var modelDashes = []vg.Length{vg.Points(1), vg.Points(2)}

// linePlots draws mean completion time against message size (or drop
// rate, where the size is fixed), one series per transport scheme and one
// plot per combination of the other varying parameters; none where
// neither varies.
func linePlots(cells []scenario.Cell) ([]figure, error) {
	xKey := ""
	for _, k := range []string{keySize, keyLoss} {
		if newAxis(cells, k).Varies() {
			xKey = k
			break
		}
	}
	if xKey == "" {
		return nil, nil
	}
	xs := newAxis(cells, xKey)
	if xs.Num == nil {
		return nil, nil
	}
	schemes := newAxis(cells, keyScheme)
	var figs []figure
	for _, fc := range facets(cells, varying(cells, xKey, keyScheme)) {
		svg, ok, err := linePlot(fc, xs, schemes)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		title := fc.Title
		if title == "" {
			title = "all cells"
		}
		figs = append(figs, figure{Title: title, SVG: svg})
	}
	return figs, nil
}

// linePlot draws one facet; ok is false when it has nothing to draw.
func linePlot(fc *facet, xs, schemes *axis) (svg template.HTML, ok bool, err error) {
	p := plot.New()
	p.Title.Text = fc.Title
	if fc.Title == "" {
		p.Title.Text = "mean completion time"
	}
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = xs.Key
	if name, ok := axisNames[xs.Key]; ok {
		p.X.Label.Text = name + " (" + xs.Key + ")"
	}
	p.Y.Label.Text = "mean completion time"
	logX := !slices.ContainsFunc(xs.Num, func(x float64) bool { return x <= 0 })
	if logX {
		p.X.Scale = plot.LogScale{}
	}
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = logTicks{format: secondsTick}

	var ticks []plot.Tick
	for i, v := range xs.Values {
		ticks = append(ticks, plot.Tick{Value: xs.Num[i], Label: v})
	}
	p.X.Tick.Marker = plot.ConstantTicks(thin(ticks, 9))

	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{0xe4}
	grid.Horizontal.Color = color.Gray{0xe4}
	p.Add(grid)

	legend := plot.NewLegend()
	ymin, ymax := math.Inf(1), math.Inf(-1)
	haveModel := false
	for si, scheme := range schemes.Values {
		var sim, mod plotter.XYs
		for _, c := range fc.Cells {
			if c.Params[keyScheme] != scheme {
				continue
			}
			x := xs.Num[xs.Pos(c.Params[xs.Key])]
			// Timed as the model times it: at the sender where the cell
			// has that timing.
			if mean, _, _ := timingOf(c, true); mean > 0 {
				sim = append(sim, plotter.XY{X: x, Y: mean})
			}
			if c.Model != nil && c.Model.Mean > 0 {
				mod = append(mod, plotter.XY{X: x, Y: c.Model.Mean})
			}
		}
		if len(sim) == 0 && len(mod) == 0 {
			continue
		}
		for _, xy := range slices.Concat(sim, mod) {
			ymin, ymax = min(ymin, xy.Y), max(ymax, xy.Y)
		}
		sortXY(sim)
		sortXY(mod)
		col := palette[si%len(palette)]
		thumbs := []plot.Thumbnailer{}
		if len(sim) > 0 {
			l, s, err := plotter.NewLinePoints(sim)
			if err != nil {
				return "", false, err
			}
			// Schemes that finish alike draw one over the other: a dash
			// pattern and a mark of their own keep each one visible.
			l.Color, l.Width, l.Dashes = col, vg.Points(1.5), lineDashes[si%len(lineDashes)]
			s.Color, s.Shape, s.Radius = col, glyphs[si%len(glyphs)], vg.Points(3.5-0.4*float64(si%4))
			p.Add(l, s)
			thumbs = append(thumbs, l, s)
		}
		if len(mod) > 0 {
			l, err := plotter.NewLine(mod)
			if err != nil {
				return "", false, err
			}
			l.Color, l.Width, l.Dashes = col, vg.Points(0.8), modelDashes
			p.Add(l)
			haveModel = true
			if len(sim) == 0 {
				thumbs = append(thumbs, l)
			}
		}
		legend.Add(scheme, thumbs...)
	}
	if math.IsInf(ymin, 0) {
		return "", false, nil
	}
	if haveModel {
		legend.Add("model", lineThumb{draw.LineStyle{Color: color.Gray{0x55}, Width: vg.Points(1), Dashes: modelDashes}})
	}
	// Room around the data, so no marker sits on the frame.
	xmin, xmax := xs.Num[0], xs.Num[len(xs.Num)-1]
	if logX {
		p.X.Min, p.X.Max = xmin/1.5, xmax*1.5
	} else {
		pad := (xmax - xmin) * 0.05
		p.X.Min, p.X.Max = xmin-pad, xmax+pad
	}
	p.Y.Min, p.Y.Max = ymin/1.3, ymax*1.3
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &legend.TextStyle.Font} {
		f.Variant = "Sans"
	}
	p.Title.TextStyle.Font.Size = vg.Points(12)
	for _, f := range []*font.Font{&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &legend.TextStyle.Font} {
		f.Size = vg.Points(9)
	}
	p.X.Label.TextStyle.Font.Size, p.Y.Label.TextStyle.Font.Size = vg.Points(10), vg.Points(10)

	out, err := render(plotW, plotH, func(dc draw.Canvas) {
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		legend.Top, legend.Left = true, true
		// The legend is measured in Liberation Sans; leave room for a
		// wider fallback font.
		lw := legend.Rectangle(dc).Size().X*1.25 + 8
		p.Draw(draw.Crop(dc, 0, -lw, 0, 0))
		legend.Draw(draw.Crop(dc, dc.Size().X-lw+8, 0, 0, -30))
	})
	return out, err == nil, err
}

// lineThumb is a legend entry that is a line alone.
type lineThumb struct{ draw.LineStyle }

func (t lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(t.LineStyle, c.Min.X, y, c.Max.X, y)
}

func sortXY(xys plotter.XYs) {
	slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
}

// thin keeps at most n tick labels, evenly spaced, ends included.
func thin(ticks []plot.Tick, n int) []plot.Tick {
	if len(ticks) <= n {
		return ticks
	}
	step := (len(ticks) + n - 1) / n
	out := slices.Clone(ticks)
	for i := range out {
		if i%step != 0 && i != len(out)-1 {
			out[i].Label = ""
		}
	}
	return out
}

// logTicks marks a log axis: every decade, and 2 and 5 between where the
// axis spans less than two decades; minor ticks at the other integers.
type logTicks struct{ format func(float64) string }

func (t logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	dense := math.Log10(hi/lo) < 2
	var out []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for m := 1; m < 10; m++ {
			v := float64(m) * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			tk := plot.Tick{Value: v}
			if m == 1 || dense && (m == 2 || m == 5) {
				tk.Label = t.format(v)
			}
			out = append(out, tk)
		}
	}
	return out
}

// secondsTick writes a time in seconds the short way: 100µs, 20ms, 1s.
func secondsTick(s float64) string {
	return time.Duration(math.Round(s * 1e9)).String()
}

// render draws onto an SVG canvas of w x h points and returns the SVG
// element, ready to inline in HTML.
func render(w, h vg.Length, drawFn func(draw.Canvas)) (template.HTML, error) {
	c := vgsvg.New(w, h)
	drawFn(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return "", err
	}
	return inlineSVG(buf.String())
}

// fontFallback lets a reader without the Liberation fonts, which the
// layout was measured with, see the metric-compatible Arial or Helvetica.
var fontFallback = strings.NewReplacer(
	"font-family:Liberation Sans;", "font-family:Liberation Sans,Arial,Helvetica,sans-serif;",
	"font-family:Liberation Serif;", "font-family:Liberation Serif,Times New Roman,Times,serif;",
	"font-family:Liberation Mono;", "font-family:Liberation Mono,Courier New,Courier,monospace;",
)

// inlineSVG checks that s is an SVG document and returns its <svg>
// element without the XML declaration and comments before it.
func inlineSVG(s string) (template.HTML, error) {
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "<?xml") && !strings.HasPrefix(t, "<svg") {
		return "", fmt.Errorf("report: plot is not SVG: %.40q", t)
	}
	i := strings.Index(t, "<svg")
	if i < 0 {
		return "", fmt.Errorf("report: plot has no <svg> element")
	}
	return template.HTML(fontFallback.Replace(t[i:])), nil
}
