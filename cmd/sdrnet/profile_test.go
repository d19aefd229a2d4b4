package main

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
)

func TestProfileFlags(t *testing.T) {
	dir := t.TempDir()
	cpu, tr := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "run.trace")
	var out, errb bytes.Buffer
	if err := execute([]string{"model", "--set", "workload.size=1MiB", "--cpuprofile", cpu, "--trace", tr}, &out, &errb); err != nil {
		t.Fatalf("model with profile flags: %v\n%s", err, errb.String())
	}
	for _, f := range []string{cpu, tr} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: not written (%v)", f, err)
		}
	}
	// The profile was stopped: a new one can start.
	if err := pprof.StartCPUProfile(&bytes.Buffer{}); err != nil {
		t.Fatalf("profile left running: %v", err)
	}
	pprof.StopCPUProfile()

	// A failed command still stops the profile, and a bad path names the flag.
	err := execute([]string{"model", "--cpuprofile", filepath.Join(dir, "no", "such", "dir")}, &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Errorf("unwritable profile path: got %v, want an error naming --cpuprofile", err)
	}
}
