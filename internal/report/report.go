// Package report writes simulation results: CSV and JSON with every
// metric of every cell, and a self-contained HTML report with SVG plots.
package report

import (
	"encoding/csv"
	"encoding/json"
	"io"
	"slices"
	"strconv"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// Run is a finished scenario run: what was asked and what came out.
type Run struct {
	Scenario    string           `json:"scenario"`
	File        string           `json:"file"`
	Description string           `json:"description"`
	Finding     string           `json:"finding,omitempty"`
	Differences string           `json:"differences,omitempty"`
	Compare     []string         `json:"compare,omitempty"`
	Verdicts    []Verdict        `json:"verdicts,omitempty"` // the finding's claims judged (Judge)
	Seed        uint64           `json:"seed"`
	Full        bool             `json:"full_grid"`
	Params      []scenario.Param `json:"params"`
	Cells       []scenario.Cell  `json:"cells"`
}

// paramKeys returns the parameter paths present in the cells, sorted.
func paramKeys(cells []scenario.Cell) []string {
	seen := map[string]bool{}
	for _, c := range cells {
		for k := range c.Params {
			seen[k] = true
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func f(v float64) string { return strconv.FormatFloat(v, 'g', 8, 64) }

// fq writes percentile q of runs samples, or "" where fewer than 1/(1-q)
// runs cannot support it (three samples make no p99.9).
func fq(v float64, runs int, q float64) string {
	if q > supportedQuantile(runs) {
		return ""
	}
	return f(v)
}
func u(v uint64) string { return strconv.FormatUint(v, 10) }

// WriteCSV writes one row per cell: every parameter, then every metric.
func WriteCSV(w io.Writer, r *Run) error {
	keys := paramKeys(r.Cells)
	cw := csv.NewWriter(w)
	header := append([]string{"index"}, keys...)
	header = append(header, "runs", "mean_s", "stderr_s", "p50_s", "p99_s", "p999_s", "min_s", "max_s",
		"sender_mean_s", "sender_stderr_s", "sender_p99_s", "sender_p999_s", "goodput_gbps", "busbw_gbps", "data_bytes", "retx_bytes", "parity_bytes", "recovered_packets",
		"fallbacks", "rtos", "trunk_lost", "queue_max_bytes", "queue_mean_bytes",
		"queue_p99_bytes", "util_p10", "util_p50", "util_p90", "util_p99", "util_max", "drops", "ecn_marked", "pfc_pauses",
		"pfc_watchdog_trips", "out_of_order", "reorder_mean_pkts", "reorder_max_pkts", "ctrl_wait_p50_s",
		"ctrl_wait_p90_s", "ctrl_wait_p99_s", "unroutable", "model_mean_s", "model_p999_s", "model_rel_error", "model_note", "events", "hops", "sim_time_s", "seed")
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, c := range r.Cells {
		row := []string{strconv.Itoa(c.Index)}
		for _, k := range keys {
			row = append(row, c.Params[k])
		}
		modelMean, modelP999, modelErr, note := "", "", "", ""
		if c.Model != nil {
			modelMean, modelP999, modelErr, note = f(c.Model.Mean), f(c.Model.P999), f(c.Model.Error), c.Model.Note
		}
		sender := []string{"", "", "", ""}
		if t := c.AtSender; t != nil {
			sender = []string{f(t.Mean), f(t.StdErr), fq(t.P99, c.Runs, 0.99), fq(t.P999, c.Runs, 0.999)}
		}
		row = append(row, strconv.Itoa(c.Runs), f(c.Mean), f(c.StdErr), f(c.P50), fq(c.P99, c.Runs, 0.99), fq(c.P999, c.Runs, 0.999),
			f(c.Min), f(c.Max))
		row = append(row, sender...)
		row = append(row, f(c.GoodputGbps), f(c.BusBWGbps), u(c.DataBytes), u(c.RetxBytes), u(c.ParityBytes), u(c.Recovered),
			u(c.Fallbacks), u(c.RTOs), u(c.TrunkLost), strconv.Itoa(c.QueueMaxBytes), f(c.QueueMeanBytes),
			f(c.QueueP99Bytes), f(c.UtilP10), f(c.UtilP50), f(c.UtilP90), f(c.UtilP99), f(c.UtilMax), u(c.Drops), u(c.Marked), u(c.Pauses),
			u(c.WatchdogTrips), u(c.OutOfOrder), f(c.ReorderMean), u(c.ReorderMax), f(c.CtrlWaitP50),
			f(c.CtrlWaitP90), f(c.CtrlWaitP99), u(c.Unroutable), modelMean, modelP999, modelErr, note, u(c.Events), u(c.Hops), f(c.SimTime), u(c.Seed))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJSON writes the whole run, every completion time included.
func WriteJSON(w io.Writer, r *Run) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
