package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/sdrnet/sdrnet/sim/chakra"
	"github.com/sdrnet/sdrnet/sim/scenario"
)

func newJobCmd() *cobra.Command {
	var o simOptions
	cmd := &cobra.Command{
		Use:   "job [FILE|NAME] --out DIR",
		Short: "Write a training scenario's jobs as Chakra execution traces",
		Long: `job writes the training job of every grid point of a scenario (its quick
subset unless --full) as MLCommons Chakra execution traces: DIR/INDEX/job.R.et
for each rank R of grid point INDEX, and DIR/INDEX/groups.json, its process
groups as ASTRA-sim reads them. A scenario with workload.trace: INDEX/job
and workload.groups: INDEX/groups.json replays the same job (docs/scenarios.md).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.out == "" {
				return invalidFlag("out", "", fmt.Errorf("want the folder to write the traces in"))
			}
			s, err := scenarioArgs(args, o.seed, o.sets)
			if err != nil {
				return err
			}
			for _, pt := range s.Grid(o.full) {
				job, err := scenario.Job(s, pt)
				if err != nil {
					return fmt.Errorf("grid point %d (%s): %w", pt.Index, pt.Label(), err)
				}
				dir := filepath.Join(o.out, fmt.Sprint(pt.Index))
				if err := writeJob(dir, job); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %d ranks (%s)\n", dir, len(job.Ranks), pt.Label())
			}
			return nil
		},
	}
	f := cmd.Flags()
	o.addGridFlags(f)
	f.StringVar(&o.out, "out", "", "folder to write the traces in")
	return cmd
}

// writeJob writes job's traces and named groups into dir.
func writeJob(dir string, job *chakra.Job) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	write := func(name string, fn func(f *os.File) error) error {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			f.Close()
			return fmt.Errorf("%s: %w", f.Name(), err)
		}
		return f.Close()
	}
	for r, tr := range job.Ranks {
		if err := write(fmt.Sprintf("job.%d.et", r), func(f *os.File) error { return chakra.Write(f, tr) }); err != nil {
			return err
		}
	}
	named := chakra.Groups{}
	for g, ranks := range job.Groups {
		if g != chakra.AllRanks {
			named[g] = ranks
		}
	}
	return write("groups.json", func(f *os.File) error { return named.Write(f) })
}
