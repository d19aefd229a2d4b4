package report

import (
	"fmt"
	"html/template"
	"io"
	"time"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// WriteHTML writes a self-contained report: what ran, and every cell's
// results beside the analytic model's prediction. It loads nothing from
// the network and opens offline.
func WriteHTML(w io.Writer, r *Run) error {
	return page.Execute(w, struct {
		*Run
		Keys []string
	}{r, paramKeys(r.Cells)})
}

func seconds(s float64) string {
	if s == 0 {
		return "-"
	}
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond).String()
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"seconds": seconds,
	"pct":     func(x float64) string { return fmt.Sprintf("%+.1f%%", 100*x) },
	"gbps":    func(x float64) string { return fmt.Sprintf("%.2f", x) },
	"param":   func(c scenario.Cell, k string) string { return c.Params[k] },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>sdrnet: {{.Scenario}}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; font-size: 12px; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #f3f3f3; }
td.l, th.l { text-align: left; }
.bad { background: #fde2e2; } .good { background: #e3f6e3; }
figure { display: inline-block; margin: 0 1em 1em 0; }
</style></head><body>
<h1>{{.Scenario}}</h1>
<p>{{.Description}}</p>
<p>Scenario file <code>{{.File}}</code>, seed {{.Seed}}, {{if .Full}}full grid{{else}}quick subset (run with <code>--full</code> for the whole grid){{end}}, {{len .Cells}} cells.</p>
<h2>Parameters</h2>
<table><tr><th class="l">parameter</th><th class="l">values</th><th class="l">where</th></tr>
{{range .Params}}<tr><td class="l">{{.Path}}</td><td class="l">{{range $i, $v := .Values}}{{if $i}}, {{end}}{{$v}}{{end}}</td><td class="l">{{.Pos}}</td></tr>
{{end}}</table>
<h2>Results</h2>
<p>Completion times are simulated, from the application's send to the receiver holding every byte. The model column is the analytic mean of SDR-RDMA section 4.2 (internal/model); sim/model is the relative difference.</p>
<table><tr>{{range .Keys}}<th class="l">{{.}}</th>{{end}}<th>runs</th><th>mean</th><th>p50</th><th>p99</th><th>p99.9</th><th>goodput Gbit/s</th><th>retx bytes</th><th>parity bytes</th><th>fallbacks</th><th>model mean</th><th>sim/model</th><th class="l">note</th></tr>
{{range $c := .Cells}}<tr>{{range $.Keys}}<td class="l">{{param $c .}}</td>{{end}}<td>{{$c.Runs}}</td><td>{{seconds $c.Mean}}</td><td>{{seconds $c.P50}}</td><td>{{seconds $c.P99}}</td><td>{{seconds $c.P999}}</td><td>{{gbps $c.GoodputGbps}}</td><td>{{$c.RetxBytes}}</td><td>{{$c.ParityBytes}}</td><td>{{$c.Fallbacks}}</td>{{with $c.Model}}<td>{{seconds .Mean}}</td><td>{{pct .Error}}</td><td class="l">{{.Note}}</td>{{else}}<td>-</td><td>-</td><td></td>{{end}}</tr>
{{end}}</table>
</body></html>
`))
