package fidelity

import (
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/scenarios"
	"github.com/sdrnet/sdrnet/sim/report"
	"github.com/sdrnet/sdrnet/sim/scenario"
)

var update = flag.Bool("update", false, "rewrite testdata/claims.json from this run")

// reduced shrinks each built-in scenario's quick grid to what the suite
// can afford, keeping every claim judged. A scenario not named runs its
// quick grid as it is.
var reduced = map[string][]string{
	"sdr-longhaul":     {"workload.size=[128KiB, 16MiB]", "workload.bytes=1GiB", "transport.rto_factor=[2, 8]"},
	"stellar-spray":    {"workload.placement_seed=1"},
	"training-routing": {"workload.count=1", "workload.layers=2", "workload.micro_batches=4"},
	"csaud-training":   {"workload.count=1"},
}

// magnitudeDrift is how far a claim's ratio (worse over better, least and
// greatest over its settings) may move before the suite calls it a moved
// result rather than noise from an unrelated change.
const magnitudeDrift = 0.10

// judged is one claim as the reduced grid judged it: what
// testdata/claims.json records.
type judged struct {
	Scenario string  `json:"scenario"`
	Claim    string  `json:"claim"`
	Outcome  string  `json:"outcome"`
	Holds    int     `json:"holds"`
	Ties     int     `json:"ties"`
	Settings int     `json:"settings"`
	RatioMin float64 `json:"ratio_min"`
	RatioMax float64 `json:"ratio_max"`
}

func (j judged) key() string { return j.Scenario + ": " + j.Claim }

// TestClaimsHold runs every built-in scenario on its reduced grid and
// judges its claims. Each must hold in as many settings as recorded in
// testdata/claims.json, and its ratio's range may not move by more than
// magnitudeDrift; a change that means to move a result reruns the test
// with -update and says why in its commit.
func TestClaimsHold(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every built-in scenario")
	}
	entries, err := scenarios.FS.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var got []judged
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, _ := scenarios.FS.ReadFile(e.Name())
		s, err := scenario.Parse(e.Name(), data)
		if err != nil {
			t.Fatal(err)
		}
		s.Files = scenarios.FS
		for _, kv := range reduced[s.Name] {
			if err := s.Set(kv); err != nil {
				t.Fatalf("%s: %v", s.Name, err)
			}
		}
		cells, err := scenario.Run(s, scenario.Options{})
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		for _, v := range report.Judge(cells, s.Claims) {
			j := judged{Scenario: s.Name, Claim: v.Claim, Outcome: v.Outcome, Holds: v.Holds, Ties: v.Ties, Settings: len(v.Groups),
				RatioMin: math.Inf(1), RatioMax: math.Inf(-1)}
			for _, g := range v.Groups {
				if g.Better > 0 && g.Worse > 0 { // a ratio; none against some counts in Holds
					j.RatioMin, j.RatioMax = min(j.RatioMin, g.Ratio()), max(j.RatioMax, g.Ratio())
				}
			}
			if math.IsInf(j.RatioMin, 0) {
				j.RatioMin, j.RatioMax = 0, 0
			}
			got = append(got, j)
		}
	}
	path := filepath.Join("testdata", "claims.json")
	if *update {
		b, _ := json.MarshalIndent(got, "", "  ")
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []judged
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, w := range want {
		i := slices.IndexFunc(got, func(g judged) bool { return g.key() == w.key() })
		if i < 0 {
			t.Errorf("%s: no longer judged (rerun with -update if the claim was removed)", w.key())
			continue
		}
		g := got[i]
		t.Logf("%s: %s, holds in %d of %d (%d ties), worse/better %.3gx to %.3gx", g.key(), g.Outcome, g.Holds, g.Settings, g.Ties, g.RatioMin, g.RatioMax)
		if g.Holds != w.Holds || g.Settings != w.Settings || g.Ties != w.Ties {
			t.Errorf("%s: holds in %d of %d settings (%d ties), recorded %d of %d (%d ties)", g.key(), g.Holds, g.Settings, g.Ties, w.Holds, w.Settings, w.Ties)
		}
		if g.Outcome != w.Outcome {
			t.Errorf("%s: %s, recorded %s", g.key(), g.Outcome, w.Outcome)
		}
		for _, f := range []struct {
			what      string
			got, want float64
		}{{"least", g.RatioMin, w.RatioMin}, {"greatest", g.RatioMax, w.RatioMax}} {
			if moved(f.got, f.want) {
				t.Errorf("%s: %s ratio %.3gx, recorded %.3gx: moved more than %.0f%%", g.key(), f.what, f.got, f.want, 100*magnitudeDrift)
			}
		}
	}
	for _, g := range got {
		if !slices.ContainsFunc(want, func(w judged) bool { return w.key() == g.key() }) {
			t.Errorf("%s: not recorded in %s (rerun with -update)", g.key(), path)
		}
	}
}

// moved reports whether a ratio moved by more than magnitudeDrift.
func moved(got, want float64) bool {
	if want == 0 {
		return got != 0
	}
	return math.Abs(got-want)/math.Abs(want) > magnitudeDrift
}
