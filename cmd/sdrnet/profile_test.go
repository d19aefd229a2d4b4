package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"testing"
)

func TestProfileFlags(t *testing.T) {
	dir := t.TempDir()
	cpu, heap, tr := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "heap.prof"), filepath.Join(dir, "run.trace")
	var out, errb bytes.Buffer
	if err := execute([]string{"model", "--set", "workload.size=1MiB", "--cpuprofile", cpu, "--memprofile", heap, "--trace", tr}, &out, &errb); err != nil {
		t.Fatalf("model with profile flags: %v\n%s", err, errb.String())
	}
	for _, f := range []string{cpu, heap, tr} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: not written (%v)", f, err)
		}
	}
	// The profile was stopped: a new one can start.
	if err := pprof.StartCPUProfile(&bytes.Buffer{}); err != nil {
		t.Fatalf("profile left running: %v", err)
	}
	pprof.StopCPUProfile()

	// A command that fails after the profile and trace started still
	// stops both.
	err := execute([]string{"model", "--set", "no.such=1", "--cpuprofile", cpu, "--trace", tr}, &out, &errb)
	if err == nil {
		t.Fatal("model --set no.such=1 succeeded")
	}
	if trace.IsEnabled() {
		t.Error("trace left running after a failed command")
	}
	if err := pprof.StartCPUProfile(&bytes.Buffer{}); err != nil {
		t.Fatalf("profile left running after a failed command: %v", err)
	}
	pprof.StopCPUProfile()

	// A bad path names the flag.
	err = execute([]string{"model", "--cpuprofile", filepath.Join(dir, "no", "such", "dir")}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Errorf("unwritable profile path: got %v, want an error naming --cpuprofile", err)
	}
	// A profile that could not be written whole (a full disk) fails the
	// command, though the runtime drops its write errors.
	if runtime.GOOS == "linux" {
		for _, flag := range []string{"--trace", "--memprofile"} {
			err = execute([]string{"model", "--set", "workload.size=1MiB", flag, "/dev/full"}, &out, &errb)
			if err == nil || !strings.Contains(err.Error(), flag) {
				t.Errorf("%s to /dev/full: got %v, want an error naming it", flag, err)
			}
		}
	}
}
