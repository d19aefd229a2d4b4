package report

import (
	"encoding/csv"
	"html/template"
	"image/color"
	"io"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/sdrnet/sdrnet/internal/units"
	"github.com/sdrnet/sdrnet/sim/scenario"
)

// fabricView is the report's datacenter section: per cell, the job's
// figures and every tier's queue depths over time and utilization.
type fabricView struct {
	Tiers   []string
	Table   table
	Legend  template.HTML // the compared variants' marks and lines, shared by every figure
	Figures []figure
	Queues  []figure // the top tier's deepest port over time, one panel per group
	QueueOf string   // what the panels show
}

// fabric returns the datacenter section, or nil when no cell ran on a
// fabric. Figures compare the variants of the compared parameters in
// each setting of the others.
func fabric(all []scenario.Cell, compare []string) (*fabricView, error) {
	v := &fabricView{}
	var cells []scenario.Cell
	for _, c := range all {
		if len(c.Tiers) == 0 {
			continue
		}
		cells = append(cells, c)
		if len(c.Tiers) > len(v.Tiers) {
			v.Tiers = v.Tiers[:0]
			for _, t := range c.Tiers {
				v.Tiers = append(v.Tiers, t.Name)
			}
		}
	}
	if len(cells) == 0 {
		return nil, nil
	}
	v.Table = fabricTable(cells, v.Tiers)
	l := newLayout(cells, compare)
	if len(l.Variants) > 1 {
		v.Legend = legendHTML(l)
	}
	job := metric{"bus bandwidth", "Gbit/s", func(c scenario.Cell) float64 { return c.BusBWBps / 1e9 }}
	if !slices.ContainsFunc(cells, func(c scenario.Cell) bool { return c.BusBWBps > 0 }) {
		job = metric{"mean completion time", "µs", func(c scenario.Cell) float64 { return c.Mean * 1e6 }}
	}
	metrics := []metric{job,
		{"fabric link utilization spread, p90 - p10 over ports", "% of line rate", func(c scenario.Cell) float64 { return 100 * (c.UtilP90 - c.UtilP10) }},
		{"drops", "packets", func(c scenario.Cell) float64 { return float64(c.Drops) }},
		{"PFC pauses", "PAUSE frames", func(c scenario.Cell) float64 { return float64(c.Pauses) }},
		{"control packets' wait in switch queues, p90", "µs", func(c scenario.Cell) float64 { return c.CtrlWaitP90 * 1e6 }},
		{"reorder depth at the receivers", "packets, mean over reordered first transmissions", func(c scenario.Cell) float64 { return c.ReorderMean }},
		{"connection contexts that missed the NIC's cache", "% of packets", func(c scenario.Cell) float64 { return 100 * c.QPCacheMissRate }},
		{"NIC stall fetching contexts, summed over hosts", "µs", func(c scenario.Cell) float64 { return c.NICStallSec * 1e6 }},
	}
	for i, name := range v.Tiers {
		metrics = append(metrics, metric{"queue depth p99 over time, " + name + " tier", "KiB", func(c scenario.Cell) float64 {
			if i < len(c.Tiers) {
				return c.Tiers[i].QueueP99Bytes / 1024
			}
			return 0
		}})
	}
	for _, m := range metrics {
		if fig, ok := metricFigure(cells, l, m); ok {
			v.Figures = append(v.Figures, fig)
		}
	}
	var err error
	v.Queues, err = queuePanels(cells, l, v.Tiers)
	if len(v.Queues) > 0 {
		v.QueueOf = "deepest " + v.Tiers[len(v.Tiers)-1] + " port over time (KiB against µs)"
	}
	return v, err
}

// queuePanels plots the deepest queue of the fabric's top tier over time:
// a panel per setting of the other parameters, a line per compared
// variant, every panel on the same axes so that they compare at a glance.
func queuePanels(cells []scenario.Cell, l *layout, tiers []string) ([]figure, error) {
	top := len(tiers) - 1
	var with []scenario.Cell
	var tmax, qmax float64
	for _, c := range cells {
		if top < len(c.Tiers) && len(c.Tiers[top].QueueSeries) > 0 {
			with = append(with, c)
			t := c.Tiers[top]
			tmax = max(tmax, float64(len(t.QueueSeries))*t.QueueSeriesBinSec*1e6)
			for _, b := range t.QueueSeries {
				qmax = max(qmax, float64(b)/1024)
			}
		}
	}
	if len(with) == 0 || qmax == 0 {
		return nil, nil
	}
	var figs []figure
	for g, name := range l.Groups {
		p := plot.New()
		p.Title.Text = name
		p.X.Label.Text = "µs"
		p.Y.Label.Text = "KiB"
		drawn := false
		for _, c := range with {
			if l.group[c.Index] != g {
				continue
			}
			t := c.Tiers[top]
			xys := make(plotter.XYs, len(t.QueueSeries))
			for k, b := range t.QueueSeries {
				xys[k] = plotter.XY{X: (float64(k) + 0.5) * t.QueueSeriesBinSec * 1e6, Y: float64(b) / 1024}
			}
			line, err := plotter.NewLine(xys)
			if err != nil {
				return nil, err
			}
			vi := l.variant[c.Index]
			line.Color, line.Width, line.Dashes = palette[vi%len(palette)], vg.Points(1.2), lineDashes[vi%len(lineDashes)]
			p.Add(line)
			drawn = true
		}
		if !drawn {
			continue
		}
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, tmax, 0, qmax*1.05
		svg, err := renderPanel(p)
		if err != nil {
			return nil, err
		}
		figs = append(figs, figure{Title: name, SVG: svg})
	}
	return figs, nil
}

// lineDashes tells lines apart where they overlap: solid, then dashes of
// growing length.
var lineDashes = [][]vg.Length{nil, {vg.Points(6), vg.Points(3)}, {vg.Points(2), vg.Points(2)},
	{vg.Points(8), vg.Points(3), vg.Points(2), vg.Points(3)}, {vg.Points(12), vg.Points(4)}}

// renderPanel draws a small multiple.
func renderPanel(p *plot.Plot) (template.HTML, error) {
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font} {
		f.Variant = "Sans"
	}
	p.Title.TextStyle.Font.Size = vg.Points(9)
	p.X.Tick.Label.Font.Size, p.Y.Tick.Label.Font.Size = vg.Points(8), vg.Points(8)
	p.X.Label.TextStyle.Font.Size, p.Y.Label.TextStyle.Font.Size = vg.Points(8), vg.Points(8)
	return render(290, 170, func(dc draw.Canvas) {
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		p.Draw(dc)
	})
}

// WriteTiersCSV writes one row per cell and fabric tier: queue depths
// sampled over time, the exact peak, utilization, drops, ECN marks and
// PFC's pauses. Files leaves it out for runs without a fabric.
func WriteTiersCSV(w io.Writer, r *Run) error {
	cols := paramColumns(r.Cells)
	cw := csv.NewWriter(w)
	header := []string{"index", "label"}
	for _, p := range cols {
		header = append(header, p.Name)
	}
	header = append(header, "tier", "ports", "queue_p50_bytes", "queue_p99_bytes", "queue_max_bytes",
		"peak_bytes", "util_p10", "util_p50", "util_p90", "util_p99", "util_max", "drops", "ecn_marked",
		"pfc_headroom_drops", "pfc_pauses", "pfc_paused_s", "pfc_watchdog_trips")
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, c := range r.Cells {
		for _, t := range c.Tiers {
			row := []string{strconv.Itoa(c.Index), c.Label}
			for _, p := range cols {
				row = append(row, p.value(c))
			}
			row = append(row, t.Name, strconv.Itoa(t.Ports), f(t.QueueP50Bytes), f(t.QueueP99Bytes), f(t.QueueMaxBytes),
				strconv.Itoa(t.PeakBytes), f(t.UtilP10), f(t.UtilP50), f(t.UtilP90), f(t.UtilP99), f(t.UtilMax), u(t.Drops), u(t.Marked),
				u(t.HeadroomDrops), u(t.Pauses), f(t.PausedSec), u(t.WatchdogTrips))
			if err := cw.Write(row); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// bytesIEC writes a byte count the short way: 0, 12KiB, 1.5MiB.
func bytesIEC(b float64) string {
	if b == 0 {
		return "0"
	}
	return units.FormatSize(int64(b))
}
