package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestJobCommand: `sdrnet job` writes a Megatron scenario's job as
// Chakra files with its groups; a scenario that replays those files gives
// the generator's results.json, timings and all; a scenario without a
// training job, and a missing --out, are refused.
func TestJobCommand(t *testing.T) {
	dir := t.TempDir()
	const common = `topology:
  kind: leafspine
  leaves: 2
  spines: 2
  hosts_per_leaf: 4
  gpus_per_server: 2
workload:
  kind: training
  count: 2
  layers: 4
  hidden: 512
  seq_len: 256
  micro_batches: 2
  tp: 2
  pp: 2
`
	gen := filepath.Join(dir, "gen.yaml")
	replay := filepath.Join(dir, "replay.yaml")
	if err := os.WriteFile(gen, []byte("name: j\n"+common+"  model: megatron\n  hosts: 8\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(replay, []byte("name: j\n"+common+"  trace: traces/0/job\n  groups: traces/0/groups.json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := execute([]string{"job", gen, "--out", filepath.Join(dir, "traces")}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	if !strings.Contains(out.String(), "8 ranks") {
		t.Errorf("job printed %q", out.String())
	}
	for _, name := range []string{"job.0.et", "job.7.et", "groups.json"} {
		if _, err := os.Stat(filepath.Join(dir, "traces", "0", name)); err != nil {
			t.Error(err)
		}
	}
	results := map[string][]byte{}
	for _, file := range []string{gen, replay} {
		o := filepath.Join(dir, "out-"+filepath.Base(file))
		if err := execute([]string{"sim", file, "--out", o}, &out, &errb); err != nil {
			t.Fatalf("%s: %v\n%s", file, err, errb.String())
		}
		b, err := os.ReadFile(filepath.Join(o, "results.csv"))
		if err != nil {
			t.Fatal(err)
		}
		// The two differ in the parameters that say where the job came
		// from; the figures after them must agree.
		lines := strings.Split(string(b), "\n")
		header, row := strings.Split(lines[0], ","), strings.Split(lines[1], ",")
		i := slices.Index(header, "runs")
		results[file] = []byte(strings.Join(row[i:], ","))
	}
	if !bytes.Equal(results[gen], results[replay]) {
		t.Errorf("replayed from the files:\n%s\ngenerated:\n%s", results[replay], results[gen])
	}
	for _, args := range [][]string{{"job", "sdr-longhaul", "--out", dir}, {"job", gen}} {
		if err := execute(args, &out, &errb); err == nil {
			t.Errorf("%v: no error", args)
		} else {
			t.Log(err)
		}
	}
}
