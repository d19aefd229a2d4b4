package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/sdrnet/sdrnet/internal/units"
	"github.com/sdrnet/sdrnet/scenarios"
	"github.com/sdrnet/sdrnet/sim/report"
	"github.com/sdrnet/sdrnet/sim/scenario"
)

type simOptions struct {
	seed    seedFlag
	out     string
	sets    []string
	workers int
	threads string
	full    bool
	list    bool
	// hugePages: see useHugePages.
	hugePages bool
}

func newSimCmd() *cobra.Command {
	var o simOptions
	cmd := &cobra.Command{
		Use:   "sim [FILE|NAME]",
		Short: "Run a simulation scenario and write CSV, JSON and an HTML report",
		Long: `sim runs a scenario file (YAML; every key in docs/scenarios.md) through the
packet-level simulator, in which every host runs sdrnet's real protocol
core. Parameters given as lists expand to a grid; grid points run in
parallel. NAME runs a built-in scenario (--list shows them: the papers'
reproductions). Without either it runs the built-in SDR-RDMA long-haul
scenario (its quick subset unless --full).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.list {
				return listScenarios(cmd.OutOrStdout())
			}
			return runSim(cmd, args, &o)
		},
	}
	f := cmd.Flags()
	o.addGridFlags(f)
	f.StringVar(&o.out, "out", "", "output directory (default out/<scenario name>)")
	f.IntVarP(&o.workers, "jobs", "j", runtime.NumCPU(), "grid points run in parallel (1..1024; with --threads, the CPUs over the threads)")
	f.StringVar(&o.threads, "threads", "", "how each fabric point runs: split by racks on this many threads, the same output on any number (1..1024); 0: one engine; auto: split on one thread where the fabric has 1,024 hosts or more (default: the scenario's threads, auto unless it says)")
	f.BoolVar(&o.list, "list", false, "list the built-in scenarios")
	f.BoolVar(&o.hugePages, "huge-pages", false, hugePagesUsage)
	return cmd
}

// addGridFlags registers the flags that choose a scenario's grid: --seed,
// --set and --full.
func (o *simOptions) addGridFlags(f *pflag.FlagSet) {
	f.Var(&o.seed, "seed", "random seed (default: the scenario's)")
	f.StringArrayVar(&o.sets, "set", nil, "override a parameter: key=value or key=[v1,v2] (repeatable)")
	f.BoolVar(&o.full, "full", false, "the whole grid, not the scenario's quick subset")
}

// checkJobs says whether -j is in range.
func checkJobs(n int) error {
	if n < 1 || n > 1024 {
		return invalidFlag("jobs", fmt.Sprint(n), fmt.Errorf("want 1..1024"))
	}
	return nil
}

// loadScenario reads FILE, the built-in scenario NAME (when no such file
// exists), or the built-in default scenario.
func loadScenario(args []string) (*scenario.Scenario, error) {
	name := scenarios.Default
	if len(args) == 1 {
		arg := args[0]
		builtin := strings.TrimSuffix(arg, ".yaml") + ".yaml"
		if _, err := os.Stat(arg); err == nil || !fs.ValidPath(builtin) || strings.Contains(builtin, "/") {
			return scenario.Load(arg)
		}
		if _, err := fs.Stat(scenarios.FS, builtin); err != nil {
			return nil, fmt.Errorf("%s: no such file, nor a built-in scenario (those are: %s)", arg, strings.Join(builtinNames(), ", "))
		}
		name = builtin
	}
	data, err := scenarios.FS.ReadFile(name)
	if err != nil {
		return nil, err
	}
	s, err := scenario.Parse("scenarios/"+name+" (built in)", data)
	if s != nil {
		s.Files = scenarios.FS
	}
	return s, err
}

// builtinNames lists the embedded scenarios by name.
func builtinNames() []string {
	entries, _ := scenarios.FS.ReadDir(".")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, n)
		}
	}
	return names
}

// listScenarios prints each built-in scenario's name and what it runs.
func listScenarios(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, n := range builtinNames() {
		data, err := scenarios.FS.ReadFile(n + ".yaml")
		if err != nil {
			return err
		}
		s, err := scenario.Parse(n+".yaml", data)
		if err != nil {
			return err
		}
		var quick []scenario.Cell
		for _, pt := range s.Grid(false) {
			quick = append(quick, scenario.Cell{Params: pt.Values})
		}
		desc, _, _ := strings.Cut(strings.TrimSpace(scenario.Expand(s.Description, quick)), ". ")
		fmt.Fprintf(tw, "%s\t%s\n", n, desc)
	}
	return tw.Flush()
}

// scenarioArgs loads the scenario args name, with --seed and every --set
// applied.
func scenarioArgs(args []string, seed seedFlag, sets []string) (*scenario.Scenario, error) {
	s, err := loadScenario(args)
	if err != nil {
		return nil, err
	}
	if seed.text != "" {
		s.Seed = seed.n
	}
	for _, kv := range sets {
		if err := s.Set(kv); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func runSim(cmd *cobra.Command, args []string, o *simOptions) error {
	s, err := scenarioArgs(args, o.seed, o.sets)
	if err != nil {
		return err
	}
	if err := checkJobs(o.workers); err != nil {
		return err
	}
	if f := cmd.Flags(); f.Changed("threads") {
		n, err := scenario.ParseThreads(o.threads)
		if err != nil {
			return invalidFlag("threads", o.threads, err)
		}
		s.Threads = n
	}
	out := o.out
	if out == "" {
		out = filepath.Join("out", s.Name)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	prepareHeap(stderr, o.hugePages)
	grid := s.Grid(o.full)
	fabric := 0
	for _, pt := range grid {
		if pt.OnFabric() {
			fabric++
		}
	}
	if s.Threads > 1 && fabric > 0 && !cmd.Flags().Changed("jobs") {
		o.workers = max(1, runtime.NumCPU()/s.Threads) // a point's threads share the CPUs
	}
	plural := ""
	if s.Threads > 1 {
		plural = "s"
	}
	threads := ""
	switch {
	case s.Threads > 0 && fabric == len(grid):
		threads = fmt.Sprintf(", each split by racks on %d thread%s", s.Threads, plural)
	case s.Threads > 0 && fabric > 0:
		threads = fmt.Sprintf(", the %d on fabrics split by racks on %d thread%s", fabric, s.Threads, plural)
	case s.Threads > 0:
		threads = fmt.Sprintf(" (threads %d: no point runs on a fabric, which is what threads split; sites run on one engine)", s.Threads)
	}
	fmt.Fprintf(stderr, "sdrnet sim: %s: %d grid points on %d workers%s\n", s.Name, len(grid), o.workers, threads)
	start := time.Now()
	cells, err := scenario.Run(s, scenario.Options{Full: o.full, Workers: o.workers, Progress: progress(stderr, start)})
	if err != nil {
		return err
	}
	return emitRun(cmd, out, report.New(s, o.full, cells), fmt.Sprintf(" in %v", time.Since(start).Round(time.Millisecond)))
}

// emitRun writes r's files into out and prints its summary and verdicts;
// note follows the line that names the files.
func emitRun(cmd *cobra.Command, out string, r *report.Run, note string) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	names, err := writeOutputs(out, r)
	if err != nil {
		return err
	}
	printSummary(cmd.OutOrStdout(), r.Cells)
	printVerdicts(cmd.OutOrStdout(), r.Verdicts)
	fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s/{%s}%s\n", filepath.Clean(out), strings.Join(names, ","), note)
	return nil
}

// writeOutputs writes the run's files into dir, removing a tiers.csv or
// timelines an earlier run left there, and returns their names.
func writeOutputs(dir string, r *report.Run) ([]string, error) {
	var names []string
	for _, file := range report.Files(r) {
		f, err := os.Create(filepath.Join(dir, file.Name))
		if err != nil {
			return nil, err
		}
		if err := file.Write(f, r); err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", file.Name, err)
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		names = append(names, file.Name)
	}
	stale, _ := filepath.Glob(filepath.Join(dir, "timeline-*.json"))
	stale = append(stale, filepath.Join(dir, "tiers.csv"))
	for _, path := range stale {
		if slices.Contains(names, filepath.Base(path)) {
			continue
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return names, nil
}

// progress returns a progress printer: a bar redrawn in place on a
// terminal, nothing otherwise.
func progress(w io.Writer, start time.Time) func(done, total int) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return func(done, total int) {
		const width = 40
		filled := width * done / total
		elapsed := time.Since(start)
		eta := time.Duration(float64(elapsed) / float64(done) * float64(total-done))
		fmt.Fprintf(w, "\r[%s%s] %d/%d  %v elapsed, ~%v left ", strings.Repeat("#", filled),
			strings.Repeat(".", width-filled), done, total, elapsed.Round(time.Second), eta.Round(time.Second))
		if done == total {
			fmt.Fprintln(w)
		}
	}
}

func printSummary(w io.Writer, cells []scenario.Cell) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// Messages are timed twice: at the receiver (every byte in place) and
	// at the sender (the last ACK back, the paper's T); the model is
	// compared with the latter where there is one.
	fmt.Fprintln(tw, "cell\truns\tmean\tp99.9\tsender mean\tsender p99.9\tgoodput|busbw|exposed\tretx\tparity\tmodel mean\tsim/model\t")
	for _, c := range cells {
		model, ratio := "-", "-"
		if c.Model != nil && c.Model.Mean > 0 {
			model = fmtSeconds(c.Model.Mean)
			ratio = fmt.Sprintf("%+.1f%%", 100*c.Model.Error)
		}
		// A percentile needs the runs to support it: three samples make
		// no p99.9.
		p999, sMean, sP999 := "-", "-", "-"
		if c.Runs >= 1000 {
			p999 = fmtSeconds(c.P999)
		}
		if t := c.AtSender; t != nil {
			sMean = fmtSeconds(t.Mean)
			if c.Runs >= 1000 {
				sP999 = fmtSeconds(t.P999)
			}
		}
		rate := units.FormatRate(c.GoodputBps)
		if c.BusBWBps > 0 {
			rate = "busbw " + units.FormatRate(c.BusBWBps)
		}
		if c.Training != nil {
			rate = fmt.Sprintf("exposed %.0f%%", 100*c.Training.ExposedShare)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", c.Label, c.Runs, fmtSeconds(c.Mean), p999,
			sMean, sP999, rate, units.FormatSize(int64(c.RetxBytes)), units.FormatSize(int64(c.ParityBytes)), model, ratio)
	}
	tw.Flush()
}

// printVerdicts says how the claims fared, failing ones first: direction
// and magnitude, with the range of the worse/better ratios.
func printVerdicts(w io.Writer, vs []report.Verdict) {
	for _, v := range report.SortedVerdicts(vs) {
		whose := "paper"
		if v.Source == "sdrnet" {
			whose = "ours"
		}
		fmt.Fprintf(w, "claim %s (%s): %s (%s against %s, %s): %s\n", strings.ToUpper(v.Outcome), whose, v.Claim, v.Better, v.Worse, v.Metric, v.Summary())
	}
}

func fmtSeconds(s float64) string {
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond).String()
}
