package main

import (
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/cobra"
)

// profiles writes a CPU profile (for `go tool pprof`) or an execution
// trace (for `go tool trace`) of one command's run: the way to see where
// a slow bench or sim spends its time, or waits, without rebuilding.
type profiles struct {
	path, tracePath string
	file, traceFile *os.File
}

func (p *profiles) register(root *cobra.Command) {
	root.PersistentFlags().StringVar(&p.path, "cpuprofile", "", "write a CPU profile of the run to this file (read it with go tool pprof)")
	root.PersistentFlags().StringVar(&p.tracePath, "trace", "", "write an execution trace of the run to this file (read it with go tool trace)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return p.start() }
}

func (p *profiles) start() error {
	if p.path != "" {
		f, err := os.Create(p.path)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		p.file = f
	}
	if p.tracePath != "" {
		f, err := os.Create(p.tracePath)
		if err != nil {
			return fmt.Errorf("--trace: %w", err)
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			return fmt.Errorf("--trace: %w", err)
		}
		p.traceFile = f
	}
	return nil
}

// stop ends the profile and the trace, whether the command succeeded or not.
func (p *profiles) stop() error {
	var errs []error
	if p.file != nil {
		pprof.StopCPUProfile()
		if err := p.file.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--cpuprofile: %w", err))
		}
		p.file = nil
	}
	if p.traceFile != nil {
		trace.Stop()
		if err := p.traceFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--trace: %w", err))
		}
		p.traceFile = nil
	}
	return errors.Join(errs...)
}
