package report

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// table is an HTML table built column by column: a column whose every
// value is zero or absent is left out, and each numeric column writes its
// values in one unit, named in its header.
type table struct {
	Head []string
	Left []bool // text columns, aligned left
	Rows [][]string
}

// column is one column of a table; ok false leaves it out.
type column struct {
	head  string
	left  bool
	cells []string
}

func newTable(n int, cols ...column) table {
	t := table{Rows: make([][]string, n)}
	for _, c := range cols {
		if c.cells == nil {
			continue
		}
		t.Head = append(t.Head, c.head)
		t.Left = append(t.Left, c.left)
		for i := range t.Rows {
			t.Rows[i] = append(t.Rows[i], c.cells[i])
		}
	}
	return t
}

// quantity is how a numeric column writes its values: a unit and its
// size in the base unit.
type quantity struct {
	unit     string
	scale    float64
	decimals int // fixed decimals; 0: four significant digits
}

// timeUnit picks s, ms, µs or ns for durations up to top seconds.
func timeUnit(top float64) quantity {
	switch {
	case top >= 1:
		return quantity{"s", 1, 0}
	case top >= 1e-3:
		return quantity{"ms", 1e-3, 0}
	case top >= 1e-6:
		return quantity{"µs", 1e-6, 0}
	}
	return quantity{"ns", 1e-9, 0}
}

// byteUnit picks B, KiB, MiB or GiB for sizes up to top bytes.
func byteUnit(top float64) quantity {
	for _, q := range []quantity{{"GiB", 1 << 30, 0}, {"MiB", 1 << 20, 0}, {"KiB", 1 << 10, 0}} {
		if top >= q.scale {
			return q
		}
	}
	return quantity{"B", 1, 0}
}

var (
	plain   = func(float64) quantity { return quantity{"", 1, 0} }
	gbps    = func(float64) quantity { return quantity{"Gbit/s", 1e9, 0} }
	percent = func(float64) quantity { return quantity{"%", 0.01, 1} }
)

// numberColumn writes value(c) of every cell in the unit unitFor picks
// for the column's typical (median non-zero) value; a value is absent
// ("-") where value says so, and the column is left out where no cell has
// a value other than zero.
func numberColumn(cells []scenario.Cell, head string, unitFor func(float64) quantity, value func(scenario.Cell) (float64, bool)) column {
	var nonzero []float64
	for _, c := range cells {
		if v, ok := value(c); ok && v != 0 {
			nonzero = append(nonzero, math.Abs(v))
		}
	}
	if len(nonzero) == 0 {
		return column{}
	}
	slices.Sort(nonzero)
	q := unitFor(nonzero[len(nonzero)/2])
	col := column{head: head, cells: make([]string, len(cells))}
	if q.unit != "" {
		col.head += " (" + q.unit + ")"
	}
	for i, c := range cells {
		v, ok := value(c)
		switch {
		case !ok:
			col.cells[i] = "-"
		case q.decimals > 0:
			text := strconv.FormatFloat(v/q.scale, 'f', q.decimals, 64)
			if strings.Trim(text, "-0.") == "" {
				text = strings.TrimPrefix(text, "-") // no -0.0
			}
			col.cells[i] = text
		case q.unit == "" && v == math.Trunc(v):
			col.cells[i] = strconv.FormatFloat(v, 'f', -1, 64)
		default:
			col.cells[i] = significant(v/q.scale, 4)
		}
	}
	return col
}

// significant writes x with n significant digits, no exponent, and no
// more than four decimals: what is smaller reads as "<0.0001".
func significant(x float64, n int) string {
	switch {
	case x == 0:
		return "0"
	case math.Abs(x) < 0.0001:
		if x < 0 {
			return ">-0.0001"
		}
		return "<0.0001"
	}
	digits := min(4, max(0, n-1-int(math.Floor(math.Log10(math.Abs(x))))))
	return strconv.FormatFloat(x, 'f', digits, 64)
}

// textColumn writes text(c) of every cell; left out where every cell's
// is empty.
func textColumn(cells []scenario.Cell, head string, text func(scenario.Cell) string) column {
	col := column{head: head, left: true, cells: make([]string, len(cells))}
	empty := true
	for i, c := range cells {
		col.cells[i] = text(c)
		empty = empty && col.cells[i] == ""
	}
	if empty {
		return column{}
	}
	return col
}

func always(get func(scenario.Cell) float64) func(scenario.Cell) (float64, bool) {
	return func(c scenario.Cell) (float64, bool) { return get(c), true }
}

// tailOf is a percentile of the cell's completion times, absent where its
// runs cannot support it.
func tailOf(q float64, get func(scenario.Cell) float64) func(scenario.Cell) (float64, bool) {
	return func(c scenario.Cell) (float64, bool) { return get(c), q <= supportedQuantile(c.Runs) }
}

func atSender(get func(scenario.Timing) float64, q float64) func(scenario.Cell) (float64, bool) {
	return func(c scenario.Cell) (float64, bool) {
		if c.AtSender == nil || q > supportedQuantile(c.Runs) {
			return 0, false
		}
		return get(*c.AtSender), true
	}
}

func modelOf(get func(scenario.Prediction) float64) func(scenario.Cell) (float64, bool) {
	return func(c scenario.Cell) (float64, bool) {
		if c.Model == nil || c.Model.Mean <= 0 {
			return 0, false
		}
		return get(*c.Model), true
	}
}

// trainingOf reads a training cell's figure; other cells have none.
func trainingOf(get func(scenario.TrainingMetrics) float64) func(scenario.Cell) (float64, bool) {
	return func(c scenario.Cell) (float64, bool) {
		if c.Training == nil {
			return 0, false
		}
		return get(*c.Training), true
	}
}

// resultsTable is the report's table of every cell: the outcomes first,
// then the parameters that vary in the grid.
func resultsTable(cells []scenario.Cell) table {
	cols := []column{
		numberColumn(cells, "runs", plain, always(func(c scenario.Cell) float64 { return float64(c.Runs) })),
		numberColumn(cells, "mean", timeUnit, always(func(c scenario.Cell) float64 { return c.Mean })),
		numberColumn(cells, "± std. error", timeUnit, always(func(c scenario.Cell) float64 { return c.StdErr })),
		numberColumn(cells, "p50", timeUnit, always(func(c scenario.Cell) float64 { return c.P50 })),
		numberColumn(cells, "p99", timeUnit, tailOf(0.99, func(c scenario.Cell) float64 { return c.P99 })),
		numberColumn(cells, "p99.9", timeUnit, tailOf(0.999, func(c scenario.Cell) float64 { return c.P999 })),
		numberColumn(cells, "sender mean", timeUnit, atSender(func(t scenario.Timing) float64 { return t.Mean }, 0)),
		numberColumn(cells, "sender p99.9", timeUnit, atSender(func(t scenario.Timing) float64 { return t.P999 }, 0.999)),
		numberColumn(cells, "goodput", gbps, always(func(c scenario.Cell) float64 { return c.GoodputBps })),
		numberColumn(cells, "bus bw", gbps, always(func(c scenario.Cell) float64 { return c.BusBWBps })),
		numberColumn(cells, "GPU compute", timeUnit, trainingOf(func(t scenario.TrainingMetrics) float64 { return t.ComputeSec })),
		numberColumn(cells, "exposed comm.", timeUnit, trainingOf(func(t scenario.TrainingMetrics) float64 { return t.ExposedSec })),
		numberColumn(cells, "exposed share", percent, trainingOf(func(t scenario.TrainingMetrics) float64 { return t.ExposedShare })),
		numberColumn(cells, "resent", byteUnit, always(func(c scenario.Cell) float64 { return float64(c.RetxBytes) })),
		numberColumn(cells, "parity", byteUnit, always(func(c scenario.Cell) float64 { return float64(c.ParityBytes) })),
		numberColumn(cells, "fallbacks", plain, always(func(c scenario.Cell) float64 { return float64(c.Fallbacks) })),
		numberColumn(cells, "RTOs", plain, always(func(c scenario.Cell) float64 { return float64(c.RTOs) })),
		numberColumn(cells, "start-up", timeUnit, always(func(c scenario.Cell) float64 { return c.StartupSec })),
		numberColumn(cells, "cold goodput", gbps, always(func(c scenario.Cell) float64 { return c.ColdGoodputBps })),
		numberColumn(cells, "warm goodput", gbps, always(func(c scenario.Cell) float64 { return c.WarmGoodputBps })),
		numberColumn(cells, "ATC misses", percent, always(func(c scenario.Cell) float64 { return c.ATCMissRate })),
		numberColumn(cells, "DMA stall", timeUnit, always(func(c scenario.Cell) float64 { return c.DMAStallSec })),
		numberColumn(cells, "pin faults", plain, always(func(c scenario.Cell) float64 { return float64(c.PinFaults) })),
		numberColumn(cells, "model mean", timeUnit, modelOf(func(p scenario.Prediction) float64 { return p.Mean })),
		numberColumn(cells, "sim/model − 1", percent, modelOf(func(p scenario.Prediction) float64 { return p.Error })),
	}
	for _, k := range varying(cells) {
		cols = append(cols, textColumn(cells, k, func(c scenario.Cell) string { return c.Params[k] }))
	}
	// Last, being long: what to know about the model's figure.
	if slices.ContainsFunc(cells, func(c scenario.Cell) bool { return c.Model != nil && c.Model.Mean > 0 }) {
		// (where no cell has a model, the report says why once)
		cols = append(cols, textColumn(cells, "model note", func(c scenario.Cell) string {
			if c.Model == nil {
				return ""
			}
			return c.Model.Note
		}))
	}
	return newTable(len(cells), cols...)
}

// fabricTable is the fabric section's table: per cell, the job's figure,
// what the switches did and each tier's queues.
func fabricTable(cells []scenario.Cell, tiers []string) table {
	tier := func(i int, get func(scenario.TierMetrics) float64) func(scenario.Cell) (float64, bool) {
		return func(c scenario.Cell) (float64, bool) {
			if i >= len(c.Tiers) {
				return 0, false
			}
			return get(c.Tiers[i]), true
		}
	}
	cols := []column{
		textColumn(cells, "cell", func(c scenario.Cell) string { return c.Label }),
		numberColumn(cells, "bus bw", gbps, always(func(c scenario.Cell) float64 { return c.BusBWBps })),
		numberColumn(cells, "mean", timeUnit, always(func(c scenario.Cell) float64 { return c.Mean })),
		numberColumn(cells, "p99", timeUnit, tailOf(0.99, func(c scenario.Cell) float64 { return c.P99 })),
		numberColumn(cells, "drops", plain, always(func(c scenario.Cell) float64 { return float64(c.Drops) })),
		numberColumn(cells, "ECN marks", plain, always(func(c scenario.Cell) float64 { return float64(c.Marked) })),
		numberColumn(cells, "PFC pauses", plain, always(func(c scenario.Cell) float64 { return float64(c.Pauses) })),
		numberColumn(cells, "PFC watchdog trips", plain, always(func(c scenario.Cell) float64 { return float64(c.WatchdogTrips) })),
		numberColumn(cells, "out of order", plain, always(func(c scenario.Cell) float64 { return float64(c.OutOfOrder) })),
		numberColumn(cells, "reorder depth mean", plain, always(func(c scenario.Cell) float64 { return c.ReorderMean })),
		numberColumn(cells, "reorder depth max", plain, always(func(c scenario.Cell) float64 { return float64(c.ReorderMax) })),
		numberColumn(cells, "control wait p50", timeUnit, always(func(c scenario.Cell) float64 { return c.CtrlWaitP50 })),
		numberColumn(cells, "control wait p90", timeUnit, always(func(c scenario.Cell) float64 { return c.CtrlWaitP90 })),
		numberColumn(cells, "control wait p99", timeUnit, always(func(c scenario.Cell) float64 { return c.CtrlWaitP99 })),
		numberColumn(cells, "QP cache misses", percent, always(func(c scenario.Cell) float64 { return c.QPCacheMissRate })),
		numberColumn(cells, "NIC stall", timeUnit, always(func(c scenario.Cell) float64 { return c.NICStallSec })),
		numberColumn(cells, "flow completion p50", timeUnit, always(func(c scenario.Cell) float64 { return c.FCTP50 })),
		numberColumn(cells, "flow completion p99", timeUnit, always(func(c scenario.Cell) float64 { return c.FCTP99 })),
		numberColumn(cells, "fabric util p10", percent, always(func(c scenario.Cell) float64 { return c.UtilP10 })),
		numberColumn(cells, "fabric util p50", percent, always(func(c scenario.Cell) float64 { return c.UtilP50 })),
		numberColumn(cells, "fabric util p90", percent, always(func(c scenario.Cell) float64 { return c.UtilP90 })),
	}
	for i, name := range tiers {
		cols = append(cols,
			numberColumn(cells, name+" queue p50", byteUnit, tier(i, func(t scenario.TierMetrics) float64 { return t.QueueP50Bytes })),
			numberColumn(cells, name+" queue p99", byteUnit, tier(i, func(t scenario.TierMetrics) float64 { return t.QueueP99Bytes })),
			numberColumn(cells, name+" queue peak", byteUnit, tier(i, func(t scenario.TierMetrics) float64 { return float64(t.PeakBytes) })),
			numberColumn(cells, name+" util p50", percent, tier(i, func(t scenario.TierMetrics) float64 { return t.UtilP50 })),
			numberColumn(cells, name+" util max", percent, tier(i, func(t scenario.TierMetrics) float64 { return t.UtilMax })))
	}
	return newTable(len(cells), cols...)
}
