package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"

	"github.com/spf13/cobra"
)

// profiles writes a CPU profile or a heap profile (for `go tool pprof`)
// or an execution trace (for `go tool trace`) of one command's run: the
// way to see where a slow bench or sim spends its time or memory, or
// waits, without rebuilding.
type profiles struct {
	cpu, heap, trace profileFile
}

// profileFile is one of them: the flag that asks for it, its file, and
// how it starts and stops.
type profileFile struct {
	flag, path string
	start      func(io.Writer) error
	stop       func()
	out        *errWriter
	file       *os.File
}

// errWriter keeps the first write error: runtime/pprof and runtime/trace
// drop them, and a profile cut short by a full disk must not pass as
// written.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.err = err
	return n, err
}

func (p *profiles) register(root *cobra.Command) {
	p.cpu = profileFile{flag: "--cpuprofile", start: pprof.StartCPUProfile, stop: pprof.StopCPUProfile}
	p.trace = profileFile{flag: "--trace", start: trace.Start, stop: trace.Stop}
	p.heap = heapProfile()
	root.PersistentFlags().StringVar(&p.cpu.path, "cpuprofile", "", "write a CPU profile of the run to this file (read it with go tool pprof)")
	root.PersistentFlags().StringVar(&p.heap.path, "memprofile", "", "write a heap profile at the end of the run to this file: alloc_space shows what the run allocated, setup included (read it with go tool pprof)")
	root.PersistentFlags().StringVar(&p.trace.path, "trace", "", "write an execution trace of the run to this file (read it with go tool trace)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return p.start() }
}

func (p *profiles) start() error {
	if err := p.cpu.begin(); err != nil {
		return err
	}
	if err := p.heap.begin(); err != nil {
		return errors.Join(err, p.cpu.end())
	}
	if err := p.trace.begin(); err != nil {
		return errors.Join(err, p.cpu.end(), p.heap.end())
	}
	return nil
}

// stop ends the profile and the trace, whether the command succeeded or
// not, and says if either was not written whole.
func (p *profiles) stop() error { return errors.Join(p.cpu.end(), p.heap.end(), p.trace.end()) }

// heapProfile writes the heap profile when the run ends: the profile is
// of the whole run, so there is nothing to start. The runtime's profile
// stops at the last collection, so one runs first.
func heapProfile() profileFile {
	var out io.Writer
	f := profileFile{flag: "--memprofile", start: func(w io.Writer) error { out = w; return nil }}
	f.stop = func() {
		runtime.GC()
		_ = pprof.Lookup("heap").WriteTo(out, 0) // a write error is kept by errWriter
	}
	return f
}

func (f *profileFile) begin() error {
	if f.path == "" {
		return nil
	}
	file, err := os.Create(f.path)
	if err != nil {
		return fmt.Errorf("%s: %w", f.flag, err)
	}
	out := &errWriter{w: file}
	if err := f.start(out); err != nil {
		file.Close()
		return fmt.Errorf("%s: %w", f.flag, err)
	}
	f.file, f.out = file, out
	return nil
}

func (f *profileFile) end() error {
	if f.file == nil {
		return nil
	}
	f.stop()
	err := errors.Join(f.out.err, f.file.Close())
	f.file, f.out = nil, nil
	if err != nil {
		return fmt.Errorf("%s %s: %w", f.flag, f.path, err)
	}
	return nil
}
