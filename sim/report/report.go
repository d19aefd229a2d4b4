// Package report writes simulation results: CSV and JSON with every
// metric of every cell, and a self-contained HTML report with SVG plots.
package report

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// Run is a finished scenario run: what was asked and what came out.
type Run struct {
	Scenario    string    `json:"scenario"`
	File        string    `json:"file"`
	Description string    `json:"description"`
	Finding     string    `json:"finding"`
	Differences string    `json:"differences"`
	Compare     []string  `json:"compare"`
	Verdicts    []Verdict `json:"verdicts"` // the finding's claims judged (Judge)
	Seed        uint64    `json:"seed"`
	Full        bool      `json:"full_grid"`
	// Params are the parameters with the values some cell ran; Grid,
	// where that is less than the scenario declares (the quick grid),
	// the declared ones.
	Params []scenario.Param `json:"params"`
	Grid   []scenario.Param `json:"grid,omitempty"`
	Cells  []scenario.Cell  `json:"cells"`
}

// New gathers the run of s (its whole grid when full, else its quick
// subset) from its cells: the prose with the run's values filled in and
// the claims judged.
func New(s *scenario.Scenario, full bool, cells []scenario.Cell) *Run {
	r := &Run{Scenario: s.Name, File: s.File, Description: scenario.Expand(s.Description, cells), Seed: s.Seed, Full: full,
		Finding: s.Finding, Differences: scenario.Expand(s.Differences, cells), Compare: s.Compare, Params: ranParams(s.Params, cells), Cells: cells,
		Verdicts: Judge(cells, s.Claims)}
	if !slices.EqualFunc(r.Params, s.Params, func(a, b scenario.Param) bool { return slices.Equal(a.Values, b.Values) }) {
		r.Grid = s.Params
	}
	return r
}

// ranParams returns params with only the values some cell ran, in the
// scenario's order; a parameter no cell names keeps its values.
func ranParams(params []scenario.Param, cells []scenario.Cell) []scenario.Param {
	out := make([]scenario.Param, len(params))
	for i, p := range params {
		out[i] = p
		ran := slices.DeleteFunc(slices.Clone(p.Values), func(v string) bool {
			return !slices.ContainsFunc(cells, func(c scenario.Cell) bool { return c.Params[p.Path] == v })
		})
		if len(ran) > 0 {
			out[i].Values = ran
		}
	}
	return out
}

// File is one output file of a run.
type File struct {
	Name  string
	Write func(io.Writer, *Run) error
}

// Files lists the files a run writes: the results as CSV and JSON, the
// fabric tiers as CSV where a cell ran on a fabric, each training cell's
// timeline (a Chrome trace, named after the cell's index), and the
// report.
func Files(r *Run) []File {
	out := []File{{"results.csv", WriteCSV}, {"results.json", WriteJSON}}
	if slices.ContainsFunc(r.Cells, func(c scenario.Cell) bool { return len(c.Tiers) > 0 }) {
		out = append(out, File{"tiers.csv", WriteTiersCSV})
	}
	for _, c := range r.Cells {
		if c.Training != nil && c.Training.Timeline != nil {
			res := c.Training.Timeline
			out = append(out, File{fmt.Sprintf("timeline-%d.json", c.Index), func(w io.Writer, _ *Run) error { return res.WriteTimeline(w) }})
		}
	}
	return append(out, File{"report.html", WriteHTML})
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

// paramColumn is how the data files write one parameter: as a number in
// the unit its name ends with (workload.size_bytes) where every cell's
// value is one in the same unit, else as the scenario wrote it.
type paramColumn struct {
	Key, Name string
	numeric   bool
}

func paramColumns(cells []scenario.Cell) []paramColumn {
	var out []paramColumn
	for _, k := range paramKeys(cells) {
		col := paramColumn{Key: k, Name: k, numeric: true}
		unit := ""
		for i, c := range cells {
			_, u, ok := scenario.Number(k, c.Params[k])
			if !ok || i > 0 && u != unit {
				col.numeric = false
				break
			}
			unit = u
		}
		if col.numeric && unit != "" {
			col.Name = k + "_" + unit
		}
		out = append(out, col)
	}
	return out
}

// value writes the column's value for cell c.
func (p paramColumn) value(c scenario.Cell) string {
	if !p.numeric {
		return c.Params[p.Key]
	}
	x, _, _ := scenario.Number(p.Key, c.Params[p.Key])
	return exact(x)
}

// exact writes x with every digit it has, whole numbers without an
// exponent: a size of 1GiB is 1073741824.
func exact(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e15 {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
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

// WriteCSV writes one row per cell: its index and label, every
// parameter, then every metric; a figure the cell has not (a tail its
// runs cannot support, a model that does not apply) is empty.
func WriteCSV(w io.Writer, r *Run) error {
	cols := paramColumns(r.Cells)
	cw := csv.NewWriter(w)
	header := []string{"index", "label"}
	for _, p := range cols {
		header = append(header, p.Name)
	}
	header = append(header, csvMetrics...)
	if err := cw.Write(header); err != nil {
		return err
	}
	for _, c := range r.Cells {
		row := []string{strconv.Itoa(c.Index), c.Label}
		for _, p := range cols {
			row = append(row, p.value(c))
		}
		modelMean, modelP999, modelErr, note := "", "", "", ""
		if c.Model != nil {
			note = c.Model.Note
			if c.Model.Mean > 0 { // empty where the model does not apply
				modelMean, modelP999, modelErr = f(c.Model.Mean), f(c.Model.P999), f(c.Model.Error)
			}
		}
		sender := []string{"", "", "", ""}
		if t := c.AtSender; t != nil {
			sender = []string{f(t.Mean), f(t.StdErr), fq(t.P99, c.Runs, 0.99), fq(t.P999, c.Runs, 0.999)}
		}
		row = append(row, strconv.Itoa(c.Runs), f(c.Mean), f(c.StdErr), f(c.P50), fq(c.P99, c.Runs, 0.99), fq(c.P999, c.Runs, 0.999),
			f(c.Min), f(c.Max))
		row = append(row, sender...)
		training := []string{"", "", ""}
		if t := c.Training; t != nil {
			training = []string{f(t.ComputeSec), f(t.ExposedSec), f(t.ExposedShare)}
		}
		row = append(row, f(c.GoodputBps), f(c.BusBWBps))
		row = append(row, training...)
		row = append(row, u(c.DataBytes), u(c.RetxBytes), u(c.ParityBytes), u(c.Recovered),
			u(c.Fallbacks), u(c.RTOs), u(c.TrunkLost), strconv.Itoa(c.QueueMaxBytes), f(c.QueueMeanBytes),
			f(c.QueueP99Bytes), f(c.UtilP10), f(c.UtilP50), f(c.UtilP90), f(c.UtilP99), f(c.UtilMax), u(c.Drops), u(c.Marked), u(c.Pauses),
			u(c.WatchdogTrips), u(c.OutOfOrder), f(c.ReorderMean), u(c.ReorderMax), f(c.CtrlWaitP50),
			f(c.CtrlWaitP90), f(c.CtrlWaitP99), u(c.Unroutable), f(c.QPCacheMissRate), f(c.NICStallSec), f(c.FCTP50), f(c.FCTP99),
			f(c.StartupSec), f(c.ATCMissRate), f(c.DMAStallSec), u(c.PinFaults), f(c.ColdGoodputBps), f(c.WarmGoodputBps), modelMean, modelP999, modelErr, note, u(c.Events), u(c.Hops), f(c.SimTime), u(c.Seed))
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// csvMetrics names results.csv's metric columns, after the parameters;
// docs/reports.md says what each is.
var csvMetrics = []string{"runs", "mean_s", "stderr_s", "p50_s", "p99_s", "p999_s", "min_s", "max_s",
	"sender_mean_s", "sender_stderr_s", "sender_p99_s", "sender_p999_s", "goodput_bps", "busbw_bps", "compute_s", "exposed_s", "exposed_share", "data_bytes", "retx_bytes",
	"parity_bytes", "recovered_packets", "fallbacks", "rtos", "trunk_lost", "queue_max_bytes", "queue_mean_bytes",
	"queue_p99_bytes", "util_p10", "util_p50", "util_p90", "util_p99", "util_max", "drops", "ecn_marked", "pfc_pauses",
	"pfc_watchdog_trips", "out_of_order", "reorder_mean_pkts", "reorder_max_pkts", "ctrl_wait_p50_s",
	"ctrl_wait_p90_s", "ctrl_wait_p99_s", "unroutable", "qp_cache_miss_rate", "nic_stall_s", "fct_p50_s", "fct_p99_s",
	"startup_s", "atc_miss_rate", "dma_stall_s", "pin_faults", "cold_goodput_bps", "warm_goodput_bps", "model_mean_s", "model_p999_s", "model_rel_error", "model_note",
	"events", "hops", "sim_time_s", "seed"}

// WriteJSON writes the whole run, every completion time included. Every
// key is present in every cell (null where a cell has no such part, as a
// model where none applies); each cell's param_numbers gives its numeric
// parameters as numbers, named as results.csv names them.
func WriteJSON(w io.Writer, r *Run) error {
	cols := paramColumns(r.Cells)
	out := struct {
		*Run
		Cells []cellJSON `json:"cells"`
	}{Run: r, Cells: make([]cellJSON, len(r.Cells))}
	for i, c := range r.Cells {
		cj := cellJSON{Cell: c, ParamNumbers: map[string]float64{}, Tiers: c.Tiers}
		if cj.Tiers == nil {
			cj.Tiers = []scenario.TierMetrics{}
		}
		for _, p := range cols {
			if p.numeric {
				cj.ParamNumbers[p.Name], _, _ = scenario.Number(p.Key, c.Params[p.Key])
			}
		}
		out.Cells[i] = cj
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// cellJSON is a cell as results.json writes it.
type cellJSON struct {
	scenario.Cell
	ParamNumbers map[string]float64     `json:"param_numbers"`
	Tiers        []scenario.TierMetrics `json:"tiers"`
}
