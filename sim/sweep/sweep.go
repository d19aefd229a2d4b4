// Package sweep spreads a scenario's grid over machines that share a
// directory. Plan writes the directory's manifest: the scenario's text,
// its overrides and seed, every cell with its seed, and the cells'
// division into tasks. Each task (an element of a Slurm job array, a pod
// of a Kubernetes Indexed Job, or a shell loop) runs its block of cells
// with RunTask, and each cell's result lands in a file of its own. Merge
// gathers them into the run `sdrnet sim` writes for the same scenario
// and seed, byte for byte: a cell's result depends only on the scenario,
// the cell and its seed, never on where or beside what it ran.
//
// A task skips the cells already done, so a task that was killed or
// requeued is simply run again; a cell that failed leaves its error in a
// file, which Merge lists, and is tried again when its task is rerun.
package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sdrnet/sdrnet/internal/buildinfo"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strconv"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// ManifestFile is the manifest's name in a sweep directory.
const ManifestFile = "manifest.json"

// manifestFormat changes when the directory's layout does.
const manifestFormat = 1

// Manifest describes a planned sweep.
type Manifest struct {
	Format int `json:"format"`
	// Build names the sdrnet build that planned the sweep
	// (buildinfo.Version: module version, VCS revision where the binary
	// records one, Go version and architecture): a cell run by another
	// build might differ, so RunTask refuses to.
	Build    string `json:"build"`
	Scenario string `json:"scenario"`
	// File and Source are the name the scenario was parsed under and its
	// YAML; Sets are the --set overrides applied on top, in order.
	File    string   `json:"file"`
	Source  string   `json:"source"`
	Sets    []string `json:"sets"`
	Seed    uint64   `json:"seed"`
	Full    bool     `json:"full_grid"`
	PerTask int      `json:"cells_per_task"`
	Tasks   int      `json:"tasks"`
	Cells   []Cell   `json:"cells"`
}

// Cell is one planned cell: its place in the grid, its name, the seed it
// runs with and its parameters.
type Cell struct {
	Index  int               `json:"index"`
	Label  string            `json:"label"`
	Seed   uint64            `json:"seed"`
	Params map[string]string `json:"params"`
}

// Plan writes the manifest of a sweep of s into dir: s's grid (whole when
// full, else the quick subset), perTask cells to a task. sets are the
// overrides already applied to s, recorded so that every machine applies
// them again. Planning the same sweep into dir again changes nothing;
// planning another is refused, so that no finished cell is mixed into a
// different sweep.
func Plan(dir string, s *scenario.Scenario, sets []string, full bool, perTask int) (*Manifest, error) {
	if perTask < 1 {
		return nil, fmt.Errorf("cells per task %d: want at least 1", perTask)
	}
	m := &Manifest{Format: manifestFormat, Build: buildinfo.Version(), Scenario: s.Name, File: s.File, Source: string(s.Source),
		Sets: sets, Seed: s.Seed, Full: full, PerTask: perTask}
	for _, pt := range s.Grid(full) {
		m.Cells = append(m.Cells, Cell{Index: pt.Index, Label: pt.Label(), Seed: s.CellSeed(pt), Params: pt.Values})
	}
	m.Tasks = (len(m.Cells) + perTask - 1) / perTask
	// What another machine will rebuild from the manifest must be this
	// very grid: parse it back now rather than find out there.
	if _, err := m.scenario(); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	if err := os.MkdirAll(filepath.Join(dir, cellsDir), 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ManifestFile)
	old, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return m, writeAtomic(path, data)
	case err != nil:
		return nil, err
	case bytes.Equal(old, data):
		return m, nil
	}
	var prev Manifest
	if json.Unmarshal(old, &prev) == nil && prev.Build != m.Build {
		planner := prev.Build
		prev.Build = m.Build
		if same, err := json.MarshalIndent(&prev, "", "  "); err == nil && bytes.Equal(append(same, '\n'), data) {
			return nil, fmt.Errorf("%s holds this sweep's plan, made by sdrnet %q; this is %q: run the planning build, or plan into another directory", dir, planner, m.Build)
		}
	}
	return nil, fmt.Errorf("%s holds the plan of another sweep: plan into an empty directory, or remove it", dir)
}

// Load reads the manifest of the sweep in dir.
func Load(dir string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: no sweep planned here (no %s): run sdrnet sweep plan first", dir, ManifestFile)
		}
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestFile), err)
	}
	if m.Format != manifestFormat {
		return nil, fmt.Errorf("%s: manifest format %d; this sdrnet reads format %d", dir, m.Format, manifestFormat)
	}
	if m.PerTask < 1 || m.Tasks != (len(m.Cells)+m.PerTask-1)/m.PerTask {
		return nil, fmt.Errorf("%s: manifest damaged: %d cells, %d per task, %d tasks", dir, len(m.Cells), m.PerTask, m.Tasks)
	}
	return &m, nil
}

// scenario parses the manifest's scenario again, with its overrides and
// seed, and checks that its grid is the planned one.
func (m *Manifest) scenario() (*scenario.Scenario, error) {
	s, err := scenario.Parse(m.File, []byte(m.Source))
	if err != nil {
		return nil, err
	}
	s.Seed = m.Seed
	for _, kv := range m.Sets {
		if err := s.Set(kv); err != nil {
			return nil, err
		}
	}
	points := s.Grid(m.Full)
	if len(points) != len(m.Cells) {
		return nil, fmt.Errorf("the scenario makes %d cells here, the plan has %d: plan and run with the same sdrnet", len(points), len(m.Cells))
	}
	for i, pt := range points {
		c := m.Cells[i]
		if c.Index != pt.Index || c.Seed != s.CellSeed(pt) || !maps.Equal(c.Params, pt.Values) {
			return nil, fmt.Errorf("cell %d (%s) differs from the plan: plan and run with the same sdrnet", i, c.Label)
		}
	}
	return s, nil
}

// Block returns the cells of task: [first, end) in grid order.
func (m *Manifest) Block(task int) (first, end int, err error) {
	if task < 0 || task >= m.Tasks {
		return 0, 0, fmt.Errorf("task %d: the plan has %d tasks, 0..%d", task, m.Tasks, m.Tasks-1)
	}
	first = task * m.PerTask
	return first, min(first+m.PerTask, len(m.Cells)), nil
}

// TaskFromEnv finds a task's index where a batch system puts it: Slurm's
// job arrays in SLURM_ARRAY_TASK_ID, Kubernetes' Indexed Jobs in
// JOB_COMPLETION_INDEX. It returns the index and the variable it came
// from.
func TaskFromEnv(getenv func(string) string) (int, string, error) {
	for _, name := range []string{"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"} {
		v := getenv(name)
		if v == "" {
			continue
		}
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 {
			return 0, name, fmt.Errorf("%s=%q: want a task index, 0 or more", name, v)
		}
		return i, name, nil
	}
	return 0, "", errors.New("no task index: give --index, or run under a Slurm job array (SLURM_ARRAY_TASK_ID) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX)")
}
