package sweep

import (
	"bytes"
	"encoding/json"
	"github.com/sdrnet/sdrnet/internal/buildinfo"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/sim/report"
	"github.com/sdrnet/sdrnet/sim/scenario"
)

// A small lossy grid: six cells of the long-haul model, a fraction of a
// second each, with claims so that the merged report judges them.
const small = `name: small
description: SR over ${topology.loss} loss
finding: selective repeat resends less than go-back-N
claims:
  - claim: SR finishes no later than go-back-N
    better: transport.scheme=sr
    worse: transport.scheme=gbn
topology:
  trunk_delay: 1ms
  loss: [1e-3, 2e-2]
  host_rate: 100Gbps
  trunk_rate: 100Gbps
transport:
  scheme: [sr, gbn, "ec:4,2"]
workload:
  size: 256KiB
  count: 20
quick:
  topology.loss: 1e-3
`

func parse(t *testing.T, src string, sets ...string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse("small.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range sets {
		if err := s.Set(kv); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// files writes a run's output files into memory, by name.
func files(t *testing.T, r *report.Run) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range report.Files(r) {
		var b bytes.Buffer
		if err := f.Write(&b, r); err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		out[f.Name] = b.Bytes()
	}
	return out
}

// TestSweepMergesToLocalRun plans a sweep with overrides and a seed of its
// own, runs its tasks out of order (one twice, as a requeued array element
// would), and checks that the merge is byte for byte the local run's.
func TestSweepMergesToLocalRun(t *testing.T) {
	sets := []string{"workload.count=12"}
	s := parse(t, small, sets...)
	s.Seed = 7
	dir := t.TempDir()
	m, err := Plan(dir, s, sets, true, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Cells) != 6 || m.Tasks != 2 {
		t.Fatalf("plan: %d cells in %d tasks, want 6 in 2", len(m.Cells), m.Tasks)
	}
	if _, err := Merge(dir); err == nil || !strings.Contains(err.Error(), "0 of 6 cells done") {
		t.Fatalf("merge before any task ran: %v", err)
	}
	if r, err := RunTask(dir, 1, 2); err != nil || r.Ran != 2 || r.First != 4 || r.End != 6 {
		t.Fatalf("task 1: %+v, %v", r, err)
	}
	_, err = Merge(dir)
	if err == nil || !strings.Contains(err.Error(), "2 of 6 cells done; not yet run: 0-3; tasks to run (again): 0") {
		t.Fatalf("merge with task 0 missing: %v", err)
	}
	for range 2 {
		if _, err := RunTask(dir, 0, 1); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := RunTask(dir, 1, 1); err != nil || r.Skipped != 2 || r.Ran != 0 {
		t.Fatalf("task 1 again: %+v, %v; want its two cells skipped", r, err)
	}
	merged, err := Merge(dir)
	if err != nil {
		t.Fatal(err)
	}

	local := parse(t, small, sets...)
	local.Seed = 7
	cells, err := scenario.Run(local, scenario.Options{Full: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	want, got := files(t, report.New(local, true, cells)), files(t, merged)
	if len(merged.Verdicts) == 0 {
		t.Fatal("the merged run judged no claim")
	}
	for name, w := range want {
		if !bytes.Equal(got[name], w) {
			t.Errorf("%s: merged sweep differs from the local run", name)
		}
	}
	if len(got) != len(want) {
		t.Errorf("merged %d files, the local run %d", len(got), len(want))
	}
}

// TestSweepFailedCell checks that a cell that cannot run is recorded with
// its error, blocks the merge, is listed, and is tried again.
func TestSweepFailedCell(t *testing.T) {
	src := `name: big
topology:
  kind: fattree
  k: auto
workload:
  kind: alltoall
  hosts: [4, 65536]
  size: 64KiB
  background: 0.1
`
	s := parse(t, src)
	dir := t.TempDir()
	if _, err := Plan(dir, s, nil, false, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := RunTask(dir, 0, 1); err != nil {
		t.Fatal(err)
	}
	_, err := RunTask(dir, 1, 1)
	if err == nil || !strings.Contains(err.Error(), "cell 1 (hosts=65536)") || !strings.Contains(err.Error(), "no fat-tree") {
		t.Fatalf("task of the impossible cell: %v", err)
	}
	_, err = Merge(dir)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 cells done; tasks to run (again): 1\n  cell 1 (hosts=65536) failed:") {
		t.Fatalf("merge: %v", err)
	}
	if _, err := os.Stat(cellPath(dir, 1, "err")); err != nil {
		t.Fatalf("no error file: %v", err)
	}
}

// TestPlanErrors checks the mistakes a user can make around a plan.
func TestPlanErrors(t *testing.T) {
	dir := t.TempDir()
	s := parse(t, small)
	if _, err := Plan(dir, s, nil, false, 0); err == nil {
		t.Error("0 cells per task accepted")
	}
	if _, err := Plan(dir, s, nil, false, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := Plan(dir, s, nil, false, 2); err != nil {
		t.Errorf("planning the same sweep again: %v", err)
	}
	if _, err := Plan(dir, s, nil, true, 2); err == nil || !strings.Contains(err.Error(), "another sweep") {
		t.Errorf("planning another sweep into the same directory: %v", err)
	}
	// The same plan by another build: said so, not "another sweep".
	m, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Build = "v0.0.1 0123abc"
	data, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Plan(dir, s, nil, false, 2); err == nil || !strings.Contains(err.Error(), `made by sdrnet "v0.0.1 0123abc"`) {
		t.Errorf("the same plan made by another build: %v", err)
	}
	if _, err := RunTask(dir, 0, 1); err == nil || !strings.Contains(err.Error(), "was planned by sdrnet") {
		t.Errorf("running another build's plan: %v", err)
	}
	m.Build = buildinfo.Version()
	data, _ = json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	// A plan whose cells directory went missing is planned again.
	if err := os.RemoveAll(filepath.Join(dir, cellsDir)); err != nil {
		t.Fatal(err)
	}
	if _, err := Plan(dir, s, nil, false, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, cellsDir)); err != nil {
		t.Errorf("planning again did not make the cells directory: %v", err)
	}
	if _, err := RunTask(dir, 2, 1); err == nil || !strings.Contains(err.Error(), "the plan has 2 tasks, 0..1") {
		t.Errorf("task out of range: %v", err)
	}
	if _, err := RunTask(t.TempDir(), 0, 1); err == nil || !strings.Contains(err.Error(), "no sweep planned here") {
		t.Errorf("run without a plan: %v", err)
	}
	// Sets the plan records must rebuild its grid.
	if _, err := Plan(t.TempDir(), parse(t, small, "workload.count=3"), nil, false, 1); err == nil {
		t.Error("a plan whose recorded overrides do not rebuild its grid was written")
	}
	// A cell file that is not the planned cell.
	if err := os.WriteFile(cellPath(dir, 0, "json"), []byte(`{"index":0,"seed":1,"params":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Merge(dir); err == nil || !strings.Contains(err.Error(), "not the planned cell 0") {
		t.Errorf("foreign cell file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil {
		t.Error("damaged manifest loaded")
	}
}

func TestTaskFromEnv(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want int
		from string
		err  string
	}{
		{map[string]string{"SLURM_ARRAY_TASK_ID": "3"}, 3, "SLURM_ARRAY_TASK_ID", ""},
		{map[string]string{"JOB_COMPLETION_INDEX": "5"}, 5, "JOB_COMPLETION_INDEX", ""},
		{map[string]string{"SLURM_ARRAY_TASK_ID": "x"}, 0, "SLURM_ARRAY_TASK_ID", "want a task index"},
		{map[string]string{}, 0, "", "no task index"},
	} {
		i, from, err := TaskFromEnv(func(k string) string { return c.env[k] })
		if i != c.want || from != c.from || (err == nil) != (c.err == "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%v: %d from %q, %v", c.env, i, from, err)
		}
	}
}

func TestRanges(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{{nil, ""}, {[]int{4}, "4"}, {[]int{0, 1, 2, 5, 7, 8}, "0-2, 5, 7-8"}} {
		if got := ranges(c.in); got != c.want {
			t.Errorf("ranges(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
