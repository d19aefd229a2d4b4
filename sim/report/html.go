package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
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
	Plots     []figure
	SDR       *sdrView
	Host      *hostView
	Fabric    *fabricView
	Ours      []ranking
	NoiseRule string
	// BoxNoiseRule is the tie rule the verdict box states: NoiseRule, and
	// the median's where a claim is judged on medians.
	BoxNoiseRule string
	// Box is the verdict box the report opens with: every claim, what
	// fails first; Tally counts them by outcome.
	Box       []Verdict
	Tally     string
	MatchRule string
	Agreement agreement
	Results   table
}

func newView(r *Run) (*view, error) {
	v := &view{Run: r, NoiseRule: NoiseRule, Results: resultsTable(r.Cells)}
	var err error
	if v.Plots, err = linePlots(r.Cells); err != nil {
		return nil, err
	}
	v.SDR = sdr(r.Cells)
	v.Host = host(r.Cells)
	if v.Fabric, err = fabric(r.Cells, r.Compare); err != nil {
		return nil, err
	}
	v.Ours = rank(r.Cells, r.Compare)
	v.Box, v.Tally, v.MatchRule = SortedVerdicts(r.Verdicts), tally(r.Verdicts), MatchRule
	v.BoxNoiseRule = NoiseRule
	if slices.ContainsFunc(r.Verdicts, func(v Verdict) bool { return v.Metric == "median" }) {
		v.BoxNoiseRule += "; " + MedianNoiseRule
	}
	v.Agreement = agree(r.Cells)
	return v, nil
}

// agreement compares every cell with the analytic model.
type agreement struct {
	Rows                          []agreeRow
	Within, Sampling, Outside, NA int
	Tolerance                     string // "5%"
	Summary                       string
	NANotes                       []string // why the model does not apply, where it does not
	AtSender                      bool     // cells are timed until the sender's last ACK
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
			if c.Model.Mean <= 0 && row.Note != "" && !slices.Contains(a.NANotes, row.Note) {
				a.NANotes = append(a.NANotes, row.Note)
			}
		}
		if row.Class != "na" {
			a.Rows = append(a.Rows, row)
		}
	}
	a.Summary = fmt.Sprintf("%d of %d cells within %s of the model, %d more within 3 standard errors of it, %d outside, %d where the model does not apply.",
		a.Within, len(cells), a.Tolerance, a.Sampling, a.Outside, a.NA)
	return a
}

func seconds(s float64) string {
	if s == 0 {
		return "-"
	}
	if s >= 1 { // 377.5s, not 6m17.529s
		if s >= 1000 {
			return strconv.FormatFloat(s, 'f', 0, 64) + "s"
		}
		return strconv.FormatFloat(s, 'g', 4, 64) + "s"
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
	"pct": func(x float64) string {
		if math.Abs(x) < 0.0005 {
			return "0.0%" // not -0.0%
		}
		return fmt.Sprintf("%+.1f%%", 100*x)
	},
	"percent": func(x float64) string { return fmt.Sprintf("%g%%", 100*x) },
	"mark":    outcomeMark,
	"whose": func(source string) string {
		if source == "sdrnet" {
			return "ours"
		}
		return "paper"
	},
	"gbps":   func(x float64) string { return fmt.Sprintf("%.2f", x) },
	"param":  func(c scenario.Cell, k string) string { return c.Params[k] },
	"join":   strings.Join,
	"bytes":  bytesIEC,
	"ibytes": func(b int) string { return bytesIEC(float64(b)) },
	"frac":   func(x float64) string { return fmt.Sprintf("%.2f", x) },
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
th { background: #f3f3f3; position: sticky; top: 0; }
td.l, th.l { text-align: left; }
.scroll td.l { white-space: nowrap; }
.scroll { max-width: 100%; max-height: 80vh; overflow: auto; margin-bottom: 1em; }
.box { border: 2px solid #888; padding: 0.2em 1em; margin-bottom: 1em; }
.box ul { list-style: none; padding-left: 0; }
.bad { background: #fde2e2; } .good { background: #e3f6e3; } .na { background: #f3f3f3; color: #666; }
figure { display: inline-block; vertical-align: top; margin: 0 1em 1em 0; }
figure svg { max-width: 100%; height: auto; }
figure.panel { margin: 0 0.5em 0.5em 0; }
figcaption { font-size: 12px; color: #555; }
nav a { margin-right: 1em; }
ul.cells { font-size: 13px; margin-top: 0; }
.legend .key { display: inline-block; margin-right: 1.5em; font-size: 13px; white-space: nowrap; }
.legend svg { vertical-align: middle; margin-right: 0.3em; }
</style></head><body>
<h1>{{.Scenario}}</h1>
{{if .Box}}<div class="box" id="verdicts"><p><strong>Claims judged on this run: {{.Tally}}.</strong> Direction: the better setting's figure is lower in each setting of the other parameters, and a tie ({{.BoxNoiseRule}}) is no win. Magnitude: the worse figure over the better against the figure the claim states ({{.MatchRule}}).</p>
<ul>{{range .Box}}<li class="{{mark .Outcome}}">{{if eq .Outcome "holds"}}&#10003;{{else if eq .Outcome "not judged"}}?{{else}}&#10007;{{end}} <strong>{{.Outcome}}</strong> ({{whose .Source}}): {{.Claim}}: {{.Summary}}.</li>
{{end}}</ul></div>
{{end}}<p>{{.Description}}</p>
<p>Scenario file <code>{{.File}}</code>, seed {{.Seed}}, {{if .Full}}full grid{{else}}quick subset (run with <code>--full</code> for the whole grid){{end}}, {{len .Cells}} cells.</p>
<nav>{{if or .Finding .Ours}}<a href="#finding">Finding</a>{{end}}{{if .Plots}}<a href="#plots">Plots</a>{{end}}{{if .SDR}}<a href="#ec-vs-sr">EC vs SR</a>{{end}}{{if .Host}}<a href="#host">Host memory</a>{{end}}{{if .Fabric}}<a href="#fabric">Fabric</a>{{end}}{{if .Agreement.Rows}}<a href="#model">Model agreement</a>{{end}}<a href="#results">Results</a><a href="#params">Parameters</a></nav>
{{if or .Finding .Ours}}<h2 id="finding">The paper's finding and ours</h2>
{{if .Finding}}<p><strong>Paper:</strong> {{.Finding}}</p>{{end}}
{{if .Verdicts}}<p><strong>The claims, judged on this run</strong> (the paper's, or ours where marked; the better setting's figure against the worse's, in every setting of the other parameters):</p>
<ul class="cells">{{range .Verdicts}}<li><strong>{{.Claim}}</strong> ({{whose .Source}}; {{.Better}} against {{.Worse}}, {{.Metric}}{{if gt .Tolerance 0.0}} within {{percent .Tolerance}}{{else}} lower{{end}}{{with .Magnitude}}, {{.}}{{end}}): {{.Summary}}.{{if .Groups}}<ul>{{range .Groups}}<li>{{if .Group}}{{.Group}}: {{end}}{{.Figures}}{{end}}</ul>{{end}}</li>
{{end}}</ul>{{end}}
{{if .Ours}}<p><strong>sdrnet</strong> (this run), {{join .Compare " and "}} ranked by mean completion time, fastest first; &asymp; marks a tie ({{.NoiseRule}}); in brackets the queue p99 over time of the fabric's highest tier:</p>
<ul class="cells">{{range .Ours}}<li>{{if .Group}}{{.Group}}: {{end}}{{range $i, $e := .Entries}}{{if $i}}{{if $e.Tie}} &asymp; {{else}} &lt; {{end}}{{end}}<strong>{{$e.Name}}</strong> {{seconds $e.Mean}}{{if $e.Queue}} ({{bytes $e.Queue}}){{end}}{{end}}</li>
{{end}}</ul>{{end}}
{{if .Differences}}<p><strong>Where ours differ, and why:</strong> {{.Differences}}</p>{{end}}{{end}}
{{if .Plots}}<h2 id="plots">Mean completion time</h2>
<p>Simulated mean completion time, one line per transport scheme (a colour, a mark and a dash pattern each); the analytic model's mean for the same cells is the thin dotted line of the same colour. Messages are timed as the model times them: until the sender hears the last ACK where the cells have that timing, else until the receiver holds every byte. Both axes are logarithmic where the values allow.</p>
{{range .Plots}}<figure>{{.SVG}}{{if .Caption}}<figcaption>{{.Caption}}</figcaption>{{end}}</figure>
{{end}}{{end}}
{{with .SDR}}<h2 id="ec-vs-sr">Erasure coding against selective repeat</h2>
<p>Each square is one (drop rate, message size) cell: a selective-repeat time divided by an erasure-coding time, so above 1 where EC finishes first. Messages are timed until the sender hears the last ACK, as the paper times them (collectives until the last byte is in place). The tail is the highest percentile the cell's runs support (p99.9 from 1000 runs, p99 from 100, p90 from 10). Colour is on a log scale, blue where EC is faster and red where SR is; hover over a square for the schemes and times. A cell is a tie where the two means are {{$.NoiseRule}}.</p>
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
{{with .Host}}<h2 id="host">The host memory path, beside Stellar</h2>
{{with .Translation}}<h3>Translation: ATS against eMTT</h3>
<p>{{.Paper}}</p>
<p><strong>{{.Ours}}</strong></p>
<p>{{.Knee}}</p>
<div class="scroll">{{template "table" .Table}}</div>
{{end}}{{with .Pinning}}<h3>Pinning: all at boot against PVDMA</h3>
<p>{{.Paper}}</p>
<p><strong>{{.Ours}}</strong></p>
{{if .Cold}}<p>{{.Cold}}</p>{{end}}
<p>Start-up time is computed from the constants in the host section (docs/scenarios.md), not simulated; the passes over memory are.</p>
<div class="scroll">{{template "table" .Table}}</div>
{{end}}{{end}}
{{with .Fabric}}<h2 id="fabric">Fabric</h2>
<p>Per cell, the job's figure (percentages are of the link's line rate) and each tier's switch queues. Queue depths are sampled at every port at a fixed interval (metrics.queue_sample), so p50 and p99 say how deep queues stay over the run; the peak is the deepest any port of the tier ever got. Utilization is bytes sent over the run's length, per port (p50 and max over the tier's ports). Tier "host" is the switches' ports toward hosts. Drops count every switch buffer and PFC headroom; PFC pauses are PAUSE frames that stopped a port (a host's NIC included); the reorder depth is how many packets behind the furthest packet of its message a first transmission arrived, over those that arrived out of order; the control wait is the time control packets (CTS, ACK, NACK) spent in switch queues on their way. A figure is left out where every cell's value is zero; where many cells are compared, each row is one setting of the other parameters and each mark one compared variant (hover for its value; the table below has them all).</p>
{{if .Legend}}<p class="legend">{{.Legend}}</p>{{end}}
{{range .Figures}}<figure>{{.SVG}}</figure>
{{end}}
{{if .Queues}}<h3>{{.QueueOf}}</h3>
<p>One panel per setting of the other parameters, every panel on the same axes; a line per compared variant, in the colours above.</p>
{{range .Queues}}<figure class="panel">{{.SVG}}</figure>{{end}}
{{end}}
<div class="scroll">{{template "table" .Table}}</div>
{{end}}
{{with .Agreement}}{{if .Rows}}<h2 id="model">Model agreement</h2>
<p><strong>{{.Summary}}</strong>{{if .NANotes}} Where it does not: {{join .NANotes "; "}}.{{end}}</p>
<p>The model is the analytic mean of SDR-RDMA section 4.2 (internal/model) as this implementation works (a receive bitmap that keeps packets across retries, one codeword per packet stripe); the paper's own simulator matched the paper's model within 5%, and the paper's model (whole chunks lost and retried) is shown beside it. {{if .AtSender}}Times run until the sender hears the last ACK, as the paper times them. {{end}}The relative error is (sim &minus; model) / model.</p>
<div class="scroll"><table><tr><th class="l">cell</th><th>runs</th><th>sim mean</th><th>&plusmn; std. error</th><th>model mean</th><th>rel. error</th><th class="l">verdict</th><th>paper's model</th><th>rel. error</th><th class="l">note</th></tr>
{{range .Rows}}<tr><td class="l">{{.Label}}</td><td>{{.Runs}}</td><td>{{seconds .Sim}}</td><td>{{stderr .}}</td><td>{{seconds .Model}}</td><td>{{if .Model}}{{pct .Error}}{{else}}-{{end}}</td><td class="l {{.Class}}">{{.Verdict}}</td>{{with .Paper}}<td>{{seconds .Mean}}</td><td>{{pct .Error}}</td>{{else}}<td>-</td><td>-</td>{{end}}<td class="l">{{.Note}}</td></tr>
{{end}}</table></div>
{{end}}{{end}}
<h2 id="results">Results</h2>
<p>One row per cell: the outcomes first, then the parameters that vary in this grid (every parameter is in the next section). Completion times are simulated, from the application's send to the receiver holding every byte; sender times run until the sender hears the last ACK. A tail percentile shows only where the cell's runs support it. Columns whose every value is zero are left out; results.csv and results.json have them all.{{if not .Agreement.Rows}}{{with .Agreement.NANotes}} The analytic model does not apply to these cells ({{join . "; "}}).{{end}}{{end}}</p>
<div class="scroll">{{template "table" .Results}}</div>
<h2 id="params">Parameters</h2>
{{if .Grid}}<p>The values this run ran; this is the quick grid, and the scenario declares the full one beside them (<code>--full</code> runs it).</p>
{{end}}<table><tr><th class="l">parameter</th><th class="l">values run</th>{{if .Grid}}<th class="l">full grid</th>{{end}}<th class="l">where</th></tr>
{{range $i, $p := .Params}}<tr><td class="l">{{$p.Path}}</td><td class="l">{{join $p.Values ", "}}</td>{{if $.Grid}}<td class="l">{{with index $.Grid $i}}{{join .Values ", "}}{{end}}</td>{{end}}<td class="l">{{$p.Pos}}</td></tr>
{{end}}</table>
</body></html>
{{define "table"}}<table><tr>{{range $i, $h := .Head}}<th{{if index $.Left $i}} class="l"{{end}}>{{$h}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range $i, $v := .}}<td{{if index $.Left $i}} class="l"{{end}}>{{$v}}</td>{{end}}</tr>
{{end}}</table>{{end}}`))
