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
	Cells   []scenario.Cell
	Figures []figure
}

// fabric returns the datacenter section, or nil when no cell ran on a
// fabric.
func fabric(cells []scenario.Cell) (*fabricView, error) {
	v := &fabricView{}
	for _, c := range cells {
		if len(c.Tiers) == 0 {
			continue
		}
		v.Cells = append(v.Cells, c)
		if len(c.Tiers) > len(v.Tiers) {
			v.Tiers = v.Tiers[:0]
			for _, t := range c.Tiers {
				v.Tiers = append(v.Tiers, t.Name)
			}
		}
	}
	if len(v.Cells) == 0 {
		return nil, nil
	}
	busbw := func(c scenario.Cell) float64 { return c.BusBWGbps }
	title, xlabel := "bus bandwidth", "Gbit/s (NCCL bus bandwidth)"
	if v.Cells[0].BusBWGbps == 0 {
		busbw = func(c scenario.Cell) float64 { return c.P99 * 1e6 }
		title, xlabel = "flow completion p99", "µs"
	}
	fig, err := barFigure(v.Cells, title, xlabel, busbw)
	if err != nil {
		return nil, err
	}
	v.Figures = append(v.Figures, fig)
	for _, extra := range []struct {
		title, xlabel string
		value         func(scenario.Cell) float64
	}{
		{"fabric link utilization spread, p90 - p10 over ports", "fraction of line rate", func(c scenario.Cell) float64 { return c.UtilP90 - c.UtilP10 }},
		{"PFC pauses", "PAUSE frames", func(c scenario.Cell) float64 { return float64(c.Pauses) }},
		{"control packets' wait in switch queues, p90", "µs", func(c scenario.Cell) float64 { return c.CtrlWaitP90 * 1e6 }},
		{"reorder depth at the receivers", "packets (mean over reordered first transmissions)", func(c scenario.Cell) float64 { return c.ReorderMean }},
	} {
		if !slices.ContainsFunc(v.Cells, func(c scenario.Cell) bool { return extra.value(c) > 0 }) {
			continue
		}
		fig, err := barFigure(v.Cells, extra.title, extra.xlabel, extra.value)
		if err != nil {
			return nil, err
		}
		v.Figures = append(v.Figures, fig)
	}
	series, err := seriesFigures(v.Cells, v.Tiers)
	if err != nil {
		return nil, err
	}
	v.Figures = append(v.Figures, series...)
	for i, name := range v.Tiers {
		depth := func(c scenario.Cell) float64 {
			if i < len(c.Tiers) {
				return c.Tiers[i].QueueP99Bytes / 1024
			}
			return 0
		}
		fig, err := barFigure(v.Cells, "queue depth p99 over time, "+name+" tier", "KiB", depth)
		if err != nil {
			return nil, err
		}
		v.Figures = append(v.Figures, fig)
	}
	return v, nil
}

// seriesPerFigure is how many cells share one queue-over-time plot: more
// lines than that are unreadable.
const seriesPerFigure = 5

// seriesFigures plots the deepest queue of the fabric's top tier over time,
// a line per cell: how deep and how steady, where the table gives only
// percentiles.
func seriesFigures(cells []scenario.Cell, tiers []string) ([]figure, error) {
	top := len(tiers) - 1
	var with []scenario.Cell
	for _, c := range cells {
		if top < len(c.Tiers) && len(c.Tiers[top].QueueSeries) > 0 {
			with = append(with, c)
		}
	}
	var figs []figure
	for from := 0; from < len(with); from += seriesPerFigure {
		group := with[from:min(from+seriesPerFigure, len(with))]
		p := plot.New()
		p.Title.Text = "deepest " + tiers[top] + " port over time"
		p.X.Label.Text = "time (µs)"
		p.Y.Label.Text = "KiB"
		p.Legend.Top = true
		deepest := 0.0
		for i, c := range group {
			t := c.Tiers[top]
			xys := make(plotter.XYs, len(t.QueueSeries))
			for k, b := range t.QueueSeries {
				xys[k] = plotter.XY{X: (float64(k) + 0.5) * t.QueueSeriesBinSec * 1e6, Y: float64(b) / 1024}
				deepest = max(deepest, xys[k].Y)
			}
			line, err := plotter.NewLine(xys)
			if err != nil {
				return nil, err
			}
			line.Color = palette[i%len(palette)]
			line.Width = vg.Points(1)
			p.Add(line)
			p.Legend.Add(c.Label, line)
		}
		p.X.Min, p.Y.Min = 0, 0
		p.Y.Max = deepest * 1.4 // room for the legend above the lines
		p.Legend.TextStyle.Font.Size = vg.Points(7)
		svg, err := renderPlot(p, plotH)
		if err != nil {
			return nil, err
		}
		figs = append(figs, figure{Title: p.Title.Text, SVG: svg})
	}
	return figs, nil
}

// barFigure draws one horizontal bar per cell.
func barFigure(cells []scenario.Cell, title, xlabel string, value func(scenario.Cell) float64) (figure, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	vals := make(plotter.Values, len(cells))
	names := make([]string, len(cells))
	for i, c := range cells {
		// Bars go bottom up; list the first cell on top.
		vals[len(cells)-1-i] = value(c)
		names[len(cells)-1-i] = c.Label
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(9))
	if err != nil {
		return figure{}, err
	}
	bars.Horizontal = true
	bars.Color = palette[0]
	bars.LineStyle.Color = color.White
	p.Add(bars)
	p.NominalY(names...)
	p.X.Min = 0
	p.X.Tick.Label.Font.Size, p.Y.Tick.Label.Font.Size = vg.Points(8), vg.Points(8)
	svg, err := renderPlot(p, vg.Length(60+13*len(cells)))
	return figure{Title: title, SVG: svg}, err
}

// renderPlot draws a fabric figure, h points high, in the report's sans
// font on white.
func renderPlot(p *plot.Plot, h vg.Length) (template.HTML, error) {
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		f.Variant = "Sans"
	}
	p.Title.TextStyle.Font.Size = vg.Points(12)
	return render(plotW+60, h, func(dc draw.Canvas) {
		dc.SetColor(color.White)
		dc.Fill(dc.Rectangle.Path())
		p.Draw(dc)
	})
}

// WriteTiersCSV writes one row per cell and fabric tier: queue depths
// sampled over time, the exact peak, utilization, drops, ECN marks and
// PFC's pauses. Scenarios
// without a fabric give the header alone.
func WriteTiersCSV(w io.Writer, r *Run) error {
	keys := paramKeys(r.Cells)
	cw := csv.NewWriter(w)
	header := append([]string{"index"}, keys...)
	header = append(header, "tier", "ports", "queue_p50_bytes", "queue_p99_bytes", "queue_max_bytes",
		"peak_bytes", "util_p10", "util_p50", "util_p90", "util_p99", "util_max", "drops", "ecn_marked",
		"pfc_headroom_drops", "pfc_pauses", "pfc_paused_s", "pfc_watchdog_trips")
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, c := range r.Cells {
		for _, t := range c.Tiers {
			row := []string{strconv.Itoa(c.Index)}
			for _, k := range keys {
				row = append(row, c.Params[k])
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
