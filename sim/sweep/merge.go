package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/sdrnet/sdrnet/sim/report"
	"github.com/sdrnet/sdrnet/sim/scenario"
)

// Progress is where a sweep stands: how many cells are done, and which
// are missing or failed.
type Progress struct {
	Cells   int
	Done    int
	Missing []int          // cells with no result yet, in grid order
	Failed  map[int]string // cell: its error
	Labels  map[int]string // cell: its name, for the missing and failed
	Tasks   map[int]bool   // tasks that still have cells to run
	results map[int]*scenario.Cell
}

// Status reads where the sweep in dir stands.
func Status(dir string) (*Manifest, *Progress, error) {
	m, err := Load(dir)
	if err != nil {
		return nil, nil, err
	}
	p := &Progress{Cells: len(m.Cells), Failed: map[int]string{}, Labels: map[int]string{}, Tasks: map[int]bool{},
		results: map[int]*scenario.Cell{}}
	for _, c := range m.Cells {
		data, err := os.ReadFile(cellPath(dir, c.Index, "json"))
		if err == nil {
			var cell scenario.Cell
			if err := json.Unmarshal(data, &cell); err != nil {
				return m, nil, fmt.Errorf("%s: %w", cellPath(dir, c.Index, "json"), err)
			}
			if cell.Index != c.Index || cell.Seed != c.Seed || !maps.Equal(cell.Params, c.Params) {
				return m, nil, fmt.Errorf("%s is not the planned cell %d (%s): was the directory shared by two sweeps?",
					cellPath(dir, c.Index, "json"), c.Index, c.Label)
			}
			p.results[c.Index] = &cell
			p.Done++
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return m, nil, err
		}
		p.Labels[c.Index] = c.Label
		p.Tasks[c.Index/m.PerTask] = true
		if msg, err := os.ReadFile(cellPath(dir, c.Index, "err")); err == nil {
			p.Failed[c.Index] = strings.TrimSpace(string(msg))
		} else {
			p.Missing = append(p.Missing, c.Index)
		}
	}
	return m, p, nil
}

// String says how far the sweep is: "34 of 36 cells done; not yet run:
// 4-5; tasks to run (again): 2", with one line per failed cell.
func (p *Progress) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d cells done", p.Done, p.Cells)
	if len(p.Missing) > 0 {
		fmt.Fprintf(&b, "; not yet run: %s", ranges(p.Missing))
	}
	if len(p.Tasks) > 0 {
		fmt.Fprintf(&b, "; tasks to run (again): %s", ranges(slices.Sorted(maps.Keys(p.Tasks))))
	}
	for _, i := range slices.Sorted(maps.Keys(p.Failed)) {
		fmt.Fprintf(&b, "\n  cell %d (%s) failed: %s", i, p.Labels[i], p.Failed[i])
	}
	return b.String()
}

// Merge gathers the finished sweep in dir into its run: the one `sdrnet
// sim` writes for the same scenario, overrides and seed. A sweep with
// cells missing or failed is not merged; the error lists them.
func Merge(dir string) (*report.Run, error) {
	m, p, err := Status(dir)
	if err != nil {
		return nil, err
	}
	if p.Done < p.Cells {
		return nil, fmt.Errorf("%s: not finished: %s", dir, p)
	}
	s, err := m.scenario()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	cells := make([]scenario.Cell, len(m.Cells))
	for i, c := range m.Cells {
		cells[i] = *p.results[c.Index]
	}
	return report.New(s, m.Full, cells), nil
}

// ranges writes sorted ints as "1-3, 7".
func ranges(xs []int) string {
	var parts []string
	for i := 0; i < len(xs); {
		j := i
		for j+1 < len(xs) && xs[j+1] == xs[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(xs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", xs[i], xs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
