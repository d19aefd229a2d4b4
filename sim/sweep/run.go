package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sdrnet/sdrnet/internal/buildinfo"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

// cellsDir holds one file per finished cell: NNNNNN.json, its result, or
// NNNNNN.err, why it failed.
const cellsDir = "cells"

func cellPath(dir string, index int, ext string) string {
	return filepath.Join(dir, cellsDir, fmt.Sprintf("%06d.%s", index, ext))
}

// TaskResult says what a task did.
type TaskResult struct {
	First, End int // its cells, [First, End)
	Ran        int // cells run now
	Skipped    int // cells found done
	Failed     []string
}

// RunTask runs task's block of cells of the sweep in dir on workers
// goroutines (zero: one per CPU), writing each result as it finishes.
// Cells already done are skipped; cells that failed before are tried
// again. The error says which cells failed, if any did.
func RunTask(dir string, task, workers int) (TaskResult, error) {
	m, err := Load(dir)
	if err != nil {
		return TaskResult{}, err
	}
	if b := buildinfo.Version(); m.Build != "" && b != m.Build {
		return TaskResult{}, fmt.Errorf("%s was planned by sdrnet %s, this is %s: a cell run by another build may differ; run the planning build on every machine", dir, m.Build, b)
	}
	first, end, err := m.Block(task)
	if err != nil {
		return TaskResult{}, err
	}
	s, err := m.scenario()
	if err != nil {
		return TaskResult{}, fmt.Errorf("%s: %w", dir, err)
	}
	r := TaskResult{First: first, End: end}
	points := s.Grid(m.Full)
	var todo []scenario.Point
	for i := first; i < end; i++ {
		if _, err := os.Stat(cellPath(dir, i, "json")); err == nil {
			r.Skipped++
			continue
		}
		todo = append(todo, points[i])
	}
	var writeErr error
	scenario.RunEach(s, todo, workers, func(i int, c scenario.Cell, err error) {
		pt := todo[i]
		if err == nil {
			err = writeCell(dir, c)
		}
		if err != nil {
			r.Failed = append(r.Failed, fmt.Sprintf("cell %d (%s): %v", pt.Index, pt.Label(), err))
			if werr := writeAtomic(cellPath(dir, pt.Index, "err"), []byte(err.Error()+"\n")); werr != nil && writeErr == nil {
				writeErr = werr
			}
			return
		}
		r.Ran++
	})
	if len(r.Failed) > 0 {
		failed := fmt.Errorf("task %d: %d of its %d cells failed:\n  %s", task, len(r.Failed), end-first, strings.Join(r.Failed, "\n  "))
		return r, errors.Join(failed, writeErr)
	}
	return r, nil
}

// writeCell stores a finished cell, and clears the error an earlier try
// left.
func writeCell(dir string, c scenario.Cell) error {
	data, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := writeAtomic(cellPath(dir, c.Index, "json"), data); err != nil {
		return err
	}
	if err := os.Remove(cellPath(dir, c.Index, "err")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// writeAtomic writes data to path through a temporary file beside it, so
// that a reader on any machine sees the whole file or none of it.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
