package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

const tinyScenario = `name: tiny
topology:
  trunk_delay: 1ms
  host_rate: 100Gbps
  trunk_rate: 100Gbps
  loss: [1e-3, 1e-2]
transport:
  scheme: [sr, "ec:32,8"]
workload:
  size: 256KiB
  count: 20
`

// TestSimOutputsDeterministic runs the same scenario twice, with different
// worker counts, the second on huge pages: every output file must be
// byte-identical.
func TestSimOutputsDeterministic(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(file, []byte(tinyScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, jobs := range []string{"1", "2"} {
		var out, errb bytes.Buffer
		args := []string{"sim", file, "-j", jobs, "--out", filepath.Join(dir, "out"+jobs)}
		if jobs == "2" {
			args = append(args, "--huge-pages")
		}
		if err := execute(args, &out, &errb); err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, errb.String())
		}
		if !strings.Contains(out.String(), "scheme=ec:32,8") {
			t.Fatalf("summary lacks the cells:\n%s", out.String())
		}
	}
	for _, name := range []string{"results.csv", "results.json", "report.html"} {
		a, errA := os.ReadFile(filepath.Join(dir, "out1", name))
		b, errB := os.ReadFile(filepath.Join(dir, "out2", name))
		if errA != nil || errB != nil {
			t.Fatal(errA, errB)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between runs", name)
		}
		if len(a) < 100 {
			t.Errorf("%s is suspiciously short: %q", name, a)
		}
	}
}

func TestSimErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\ntopology:\n  loss: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"sim", bad}, "bad.yaml:3:9: topology.loss"},
		{[]string{"sim", filepath.Join(dir, "missing.yaml")}, "no such file"},
		{[]string{"sim", "no-such-scenario"}, "nor a built-in scenario (those are: csaud-training, csaud, incast-buffers, megatron-trace, meta-cc, meta-control"},
		{[]string{"sim", "--set", "workload.count=0"}, "want an integer in 1..1000000"},
		{[]string{"sim", "--set", "bogus=1"}, `unknown parameter "bogus"`},
		{[]string{"sim", "-j", "0"}, "invalid --jobs 0"},
		{[]string{"sim", "--threads", "-1"}, "invalid --threads -1: want auto or 0..1024"},
		{[]string{"sim", "--threads", "2000"}, "invalid --threads 2000: want auto or 0..1024"},
		{[]string{"sim", "--threads", "many"}, "invalid --threads many: want auto or 0..1024"},
		{[]string{"model", "--set", "topology.loss=x"}, "want a probability"},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		err := execute(tt.args, &out, &errb)
		if err == nil || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: error %v, stderr %q; want it to contain %q", tt.args, err, errb.String(), tt.want)
		}
	}
}

func TestModelCommand(t *testing.T) {
	var out, errb bytes.Buffer
	if err := execute([]string{"model", "--set", "workload.size=1MiB"}, &out, &errb); err != nil {
		t.Fatal(err, errb.String())
	}
	if !strings.Contains(out.String(), "scheme=xor:32,8") || !strings.Contains(out.String(), "ms") {
		t.Fatalf("model output:\n%s", out.String())
	}
}

// TestBuiltinScenarios lists the embedded scenarios and runs one by name.
func TestBuiltinScenarios(t *testing.T) {
	var out, errb bytes.Buffer
	if err := execute([]string{"sim", "--list"}, &out, &errb); err != nil {
		t.Fatal(err, errb.String())
	}
	for _, want := range []string{"stellar-spray", "meta-routing", "sdr-longhaul", "Alibaba Stellar's path selection study"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--list lacks %q:\n%s", want, out.String())
		}
	}
	dir := t.TempDir()
	out.Reset()
	if err := execute([]string{"sim", "meta-control", "--out", dir, "--set", "workload.size=1MiB", "--set", "workload.count=1",
		"--set", "workload.bg_until=100us"}, &out, &errb); err != nil {
		t.Fatal(err, errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "report.html")); err != nil {
		t.Fatal(err)
	}
}

// TestSimThreadsOnSites: --threads on a scenario with no fabric says it
// splits nothing, and keeps a worker per CPU.
func TestSimThreadsOnSites(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tiny.yaml")
	if err := os.WriteFile(file, []byte(tinyScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := execute([]string{"sim", file, "--threads", "2", "--out", filepath.Join(dir, "out")}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(errb.String(), fmt.Sprintf("on %d workers (threads 2: no point runs on a fabric", runtime.NumCPU())) {
		t.Errorf("stderr %q: want it to say threads split no point here", errb.String())
	}
}
