package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"
	"time"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// WriteHTML writes a self-contained report: what ran, plots of the
// completion times, erasure coding against selective repeat where the
// grid has both, the analytic model's agreement, and every cell's
// results. Plots are inline SVG; the page loads nothing from the network,
// opens offline, and is the same bytes for the same run.
func WriteHTML(w io.Writer, r *Run) error {
	v, err := newView(r)
	if err != nil {
		return err
	}
	return page.Execute(w, v)
}

type view struct {
	*Run
	Keys      []string // every parameter, sorted
	Plots     []figure
	PlotNote  string // why there are no plots
	SDR       *sdrView
	Fabric    *fabricView
	Ours      []ranking
	Agreement agreement
}

func newView(r *Run) (*view, error) {
	v := &view{Run: r, Keys: paramKeys(r.Cells)}
	var err error
	if v.Plots, v.PlotNote, err = linePlots(r.Cells); err != nil {
		return nil, err
	}
	v.SDR = sdr(r.Cells)
	if v.Fabric, err = fabric(r.Cells); err != nil {
		return nil, err
	}
	v.Ours = rank(r.Cells, r.Compare)
	v.Agreement = agree(r.Cells)
	return v, nil
}

// agreement compares every cell with the analytic model.
type agreement struct {
	Rows                          []agreeRow
	Within, Sampling, Outside, NA int
	Tolerance                     string // "5%"
	Summary                       string
	AtSender                      bool // cells are timed until the sender's last ACK
}

type agreeRow struct {
	Label      string
	Sim, Model float64
	Runs       int
	StdErr     float64
	Error      float64
	Paper      *scenario.PaperPrediction
	Verdict    string
	Class      string // CSS class of the verdict
	Note       string
}

// agree judges each cell: within the tolerance of the model, else within
// 3 standard errors of the simulated mean (the samples cannot tell the
// two apart; the standard error is the sample's, or where rare losses
// leave the sample blind to its spread, the model's), else outside.
// Cells timed at the sender are compared with the model's sender timing.
func agree(cells []scenario.Cell) agreement {
	a := agreement{Tolerance: fmt.Sprintf("%g%%", 100*scenario.Tolerance)}
	for _, c := range cells {
		row := agreeRow{Label: c.Label, Sim: c.Mean, Runs: c.Runs, StdErr: c.StdErr}
		if t := c.AtSender; t != nil {
			row.Sim, row.StdErr, a.AtSender = t.Mean, t.StdErr, true
		}
		if row.Label == "" {
			row.Label = fmt.Sprintf("cell %d", c.Index)
		}
		switch {
		case c.Model == nil || c.Model.Mean <= 0 || row.Sim <= 0:
			row.Verdict, row.Class = "model n/a", "na"
			a.NA++
		case math.Abs(c.Model.Error) <= scenario.Tolerance:
			row.Verdict, row.Class = "within "+a.Tolerance, "good"
			a.Within++
		case math.Abs(row.Sim-c.Model.Mean) <= 3*max(row.StdErr, c.Model.StdErr):
			row.Verdict, row.Class = "within 3 std. errors", "good"
			a.Sampling++
		default:
			row.Verdict, row.Class = "outside "+a.Tolerance, "bad"
			a.Outside++
		}
		if c.Model != nil {
			row.Model, row.Error, row.Note, row.Paper = c.Model.Mean, c.Model.Error, c.Model.Note, c.Model.Paper
		}
		a.Rows = append(a.Rows, row)
	}
	a.Summary = fmt.Sprintf("%d of %d cells within %s of the model, %d more within 3 standard errors of it, %d outside, %d where the model does not apply.",
		a.Within, len(cells), a.Tolerance, a.Sampling, a.Outside, a.NA)
	return a
}

func seconds(s float64) string {
	if s == 0 {
		return "-"
	}
	d := time.Duration(s * float64(time.Second))
	if d >= time.Millisecond {
		d = d.Round(time.Microsecond)
	}
	return d.String()
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"seconds": seconds,
	"tail": func(v float64, runs int, q float64) string {
		if q > supportedQuantile(runs) {
			return "-"
		}
		return seconds(v)
	},
	"pct":     func(x float64) string { return fmt.Sprintf("%+.1f%%", 100*x) },
	"percent": func(x float64) string { return fmt.Sprintf("%g%%", 100*x) },
	"gbps":    func(x float64) string { return fmt.Sprintf("%.2f", x) },
	"param":   func(c scenario.Cell, k string) string { return c.Params[k] },
	"join":    strings.Join,
	"bytes":   bytesIEC,
	"ibytes":  func(b int) string { return bytesIEC(float64(b)) },
	"frac":    func(x float64) string { return fmt.Sprintf("%.2f", x) },
	"stderr": func(c agreeRow) string {
		if c.StdErr == 0 && c.Runs > 1 {
			return "0"
		}
		return seconds(c.StdErr)
	},
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>sdrnet: {{.Scenario}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 1240px; padding: 0 1em; color: #222; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f3f3f3; }
td.l, th.l { text-align: left; }
.bad { background: #fde2e2; } .good { background: #e3f6e3; } .na { background: #f3f3f3; color: #666; }
figure { display: inline-block; vertical-align: top; margin: 0 1em 1em 0; }
figure svg { max-width: 100%; height: auto; }
figcaption { font-size: 12px; color: #555; }
nav a { margin-right: 1em; }
ul.cells { font-size: 13px; margin-top: 0; }
</style></head><body>
<h1>{{.Scenario}}</h1>
<p>{{.Description}}</p>
<p>Scenario file <code>{{.File}}</code>, seed {{.Seed}}, {{if .Full}}full grid{{else}}quick subset (run with <code>--full</code> for the whole grid){{end}}, {{len .Cells}} cells.</p>
<nav><a href="#plots">Plots</a>{{if .SDR}}<a href="#ec-vs-sr">EC vs SR</a>{{end}}{{if .Fabric}}<a href="#fabric">Fabric</a>{{end}}<a href="#model">Model agreement</a><a href="#params">Parameters</a><a href="#results">Results</a></nav>

<h2 id="plots">Mean completion time</h2>
{{if .Plots}}<p>Simulated mean completion time, one line per transport scheme (solid, with markers); the analytic model's mean for the same cells is the dashed line of the same colour. Both axes are logarithmic where the values allow.</p>
{{range .Plots}}<figure>{{.SVG}}{{if .Caption}}<figcaption>{{.Caption}}</figcaption>{{end}}</figure>
{{end}}{{else}}<p>{{.PlotNote}}</p>
{{end}}
{{with .SDR}}<h2 id="ec-vs-sr">Erasure coding against selective repeat</h2>
<p>Each square is one (drop rate, message size) cell: a selective-repeat time divided by an erasure-coding time, so above 1 where EC finishes first. Times run until the sender hears the last ACK, as the paper times them. The tail is the highest percentile the cell's runs support (p99.9 from 1000 runs, p99 from 100, p90 from 10). Colour is on a log scale, blue where EC is faster and red where SR is; hover over a square for the schemes and times.</p>
{{range .Facets}}{{if .Title}}<h3>{{.Title}}</h3>
{{end}}<p><strong>{{.Headline}}</strong></p>
<figure>{{.PaperMean}}</figure><figure>{{.PaperTail}}</figure>
<p>Ours beside it: the best SR variant (sr, sr-nack) over the best EC variant (ec, xor).</p>
<figure>{{.Mean}}</figure><figure>{{.P999}}</figure>
<p>{{.Summary}}</p>
<h4>Where EC wins ({{len .ECWins}})</h4>
{{if .ECWins}}<ul class="cells">{{range .ECWins}}<li>{{.}}</li>{{end}}</ul>{{else}}<p>Nowhere.</p>{{end}}
<h4>Where SR wins ({{len .SRWins}})</h4>
{{if .SRWins}}<ul class="cells">{{range .SRWins}}<li>{{.}}</li>{{end}}</ul>{{else}}<p>Nowhere.</p>{{end}}
{{if .Ties}}<h4>Ties ({{len .Ties}})</h4>
<ul class="cells">{{range .Ties}}<li>{{.}}</li>{{end}}</ul>{{end}}
{{if .NA}}<p>No comparison (a family has no time): {{join .NA "; "}}.</p>{{end}}
{{end}}{{end}}
{{if or .Finding .Ours}}<h2 id="finding">The paper's finding and ours</h2>
{{if .Finding}}<p><strong>Paper:</strong> {{.Finding}}</p>{{end}}
{{if .Verdicts}}<p><strong>The paper's claims, judged on this run</strong> (mean completion time of the better setting against the worse, in every setting of the other parameters):</p>
<ul class="cells">{{range .Verdicts}}<li><strong>{{.Claim}}</strong> ({{.Better}} against {{.Worse}}, {{.Metric}}{{if gt .Factor 1.0}} at least {{.Factor}}x lower{{else if gt .Tolerance 0.0}} within {{percent .Tolerance}}{{else}} lower{{end}}): {{.Summary}}.{{if .Groups}}<ul>{{range .Groups}}<li>{{if .Group}}{{.Group}}: {{end}}{{.Figures}}{{end}}</ul>{{end}}</li>
{{end}}</ul>{{end}}
{{if .Ours}}<p><strong>sdrnet</strong> (this run), {{join .Compare " and "}} ranked by mean completion time, fastest first, in brackets the queue p99 over time of the fabric's highest tier:</p>
<ul class="cells">{{range .Ours}}<li>{{if .Group}}{{.Group}}: {{end}}{{range $i, $e := .Entries}}{{if $i}} &lt; {{end}}<strong>{{$e.Name}}</strong> {{seconds $e.Mean}}{{if $e.Queue}} ({{bytes $e.Queue}}){{end}}{{end}}</li>
{{end}}</ul>{{end}}
{{if .Differences}}<p><strong>Where ours differ, and why:</strong> {{.Differences}}</p>{{end}}{{end}}
{{with .Fabric}}<h2 id="fabric">Fabric</h2>
<p>Per cell, the job's figure and each tier's switch queues. Queue depths are sampled at every port at a fixed interval (metrics.queue_sample), so p50 and p99 say how deep queues stay over the run; the peak is the deepest any port of the tier ever got. Utilization is bytes sent over the run's length, per port (p50 and max over the tier's ports). Tier "host" is the switches' ports toward hosts. Drops count every switch buffer and PFC headroom; PFC pauses are PAUSE frames that stopped a port (a host's NIC included); the reorder depth is how many packets behind the furthest packet of its message a first transmission arrived, over those that arrived out of order; the control wait is the time control packets (CTS, ACK, NACK) spent in switch queues on their way.</p>
{{range .Figures}}<figure>{{.SVG}}</figure>
{{end}}
<table><tr><th class="l">cell</th><th>bus bw Gbit/s</th><th>mean</th><th>p99</th><th>drops</th><th>ECN marks</th><th>PFC pauses</th><th>out of order</th><th>reorder depth mean / max</th><th>control wait p50 / p90 / p99</th><th>fabric util p10 / p50 / p90</th>{{range .Tiers}}<th>{{.}} queue p50</th><th>p99</th><th>peak</th><th>util p50</th><th>max</th>{{end}}</tr>
{{range .Cells}}<tr><td class="l">{{.Label}}</td><td>{{gbps .BusBWGbps}}</td><td>{{seconds .Mean}}</td><td>{{tail .P99 .Runs 0.99}}</td><td>{{.Drops}}</td><td>{{.Marked}}</td><td>{{.Pauses}}{{if .WatchdogTrips}} ({{.WatchdogTrips}} watchdog){{end}}</td><td>{{.OutOfOrder}}</td><td>{{printf "%.1f" .ReorderMean}} / {{.ReorderMax}}</td><td>{{seconds .CtrlWaitP50}} / {{seconds .CtrlWaitP90}} / {{seconds .CtrlWaitP99}}</td><td>{{frac .UtilP10}} / {{frac .UtilP50}} / {{frac .UtilP90}}</td>{{range .Tiers}}<td>{{bytes .QueueP50Bytes}}</td><td>{{bytes .QueueP99Bytes}}</td><td>{{ibytes .PeakBytes}}</td><td>{{frac .UtilP50}}</td><td>{{frac .UtilMax}}</td>{{end}}</tr>
{{end}}</table>
{{end}}
<h2 id="model">Model agreement</h2>
{{with .Agreement}}<p><strong>{{.Summary}}</strong></p>
<p>The model is the analytic mean of SDR-RDMA section 4.2 (internal/model) as this implementation works (a receive bitmap that keeps packets across retries, one codeword per packet stripe); the paper's own simulator matched the paper's model within 5%, and the paper's model (whole chunks lost and retried) is shown beside it. {{if .AtSender}}Times run until the sender hears the last ACK, as the paper times them. {{end}}The relative error is (sim &minus; model) / model.</p>
<table><tr><th class="l">cell</th><th>runs</th><th>sim mean</th><th>&plusmn; std. error</th><th>model mean</th><th>rel. error</th><th class="l">verdict</th><th>paper's model</th><th>rel. error</th><th class="l">note</th></tr>
{{range .Rows}}<tr><td class="l">{{.Label}}</td><td>{{.Runs}}</td><td>{{seconds .Sim}}</td><td>{{stderr .}}</td><td>{{seconds .Model}}</td><td>{{if .Model}}{{pct .Error}}{{else}}-{{end}}</td><td class="l {{.Class}}">{{.Verdict}}</td>{{with .Paper}}<td>{{seconds .Mean}}</td><td>{{pct .Error}}</td>{{else}}<td>-</td><td>-</td>{{end}}<td class="l">{{.Note}}</td></tr>
{{end}}</table>
{{end}}
<h2 id="params">Parameters</h2>
<table><tr><th class="l">parameter</th><th class="l">values</th><th class="l">where</th></tr>
{{range .Params}}<tr><td class="l">{{.Path}}</td><td class="l">{{range $i, $v := .Values}}{{if $i}}, {{end}}{{$v}}{{end}}</td><td class="l">{{.Pos}}</td></tr>
{{end}}</table>
<h2 id="results">Results</h2>
<p>Completion times are simulated, from the application's send to the receiver holding every byte. The model column is the analytic mean of SDR-RDMA section 4.2 (internal/model); sim/model is the relative difference.</p>
<table><tr>{{range .Keys}}<th class="l">{{.}}</th>{{end}}<th>runs</th><th>mean</th><th>p50</th><th>p99</th><th>p99.9</th><th>sender mean</th><th>sender p99.9</th><th>goodput Gbit/s</th><th>retx bytes</th><th>parity bytes</th><th>fallbacks</th><th>model mean</th><th>sim/model</th><th class="l">note</th></tr>
{{range $c := .Cells}}<tr>{{range $.Keys}}<td class="l">{{param $c .}}</td>{{end}}<td>{{$c.Runs}}</td><td>{{seconds $c.Mean}}</td><td>{{seconds $c.P50}}</td><td>{{tail $c.P99 $c.Runs 0.99}}</td><td>{{tail $c.P999 $c.Runs 0.999}}</td>{{with $c.AtSender}}<td>{{seconds .Mean}}</td><td>{{tail .P999 $c.Runs 0.999}}</td>{{else}}<td>-</td><td>-</td>{{end}}<td>{{gbps $c.GoodputGbps}}</td><td>{{$c.RetxBytes}}</td><td>{{$c.ParityBytes}}</td><td>{{$c.Fallbacks}}</td>{{with $c.Model}}<td>{{seconds .Mean}}</td><td>{{if .Mean}}{{pct .Error}}{{else}}-{{end}}</td><td class="l">{{.Note}}</td>{{else}}<td>-</td><td>-</td><td></td>{{end}}</tr>
{{end}}</table>
</body></html>
`))
