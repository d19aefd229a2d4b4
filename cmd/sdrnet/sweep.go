package main

import (
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/sdrnet/sdrnet/sim/sweep"
)

func newSweepCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Spread a scenario's grid over machines: plan, run cells, merge",
		Long: `sweep runs a scenario's grid on many machines that share a directory, as
a Slurm job array (deploy/slurm) or a Kubernetes Indexed Job
(deploy/kubernetes):

  sdrnet sweep plan csaud --full --out DIR    # the manifest: cells, seeds, tasks
  sdrnet sweep run DIR --index I              # task I's cells, one file each
  sdrnet sweep merge DIR                      # results.csv/json, report.html

The merge is byte for byte what sdrnet sim writes for the same scenario,
overrides and seed. A task skips the cells already done, so rerun it after
a failure or a preemption; sweep status says what is left.`,
	}
	cmd.AddCommand(newSweepPlanCmd(), newSweepRunCmd(), newSweepStatusCmd(), newSweepMergeCmd())
	return cmd
}

func newSweepPlanCmd() *cobra.Command {
	var (
		o       simOptions
		perTask int
	)
	cmd := &cobra.Command{
		Use:   "plan [FILE|NAME] --out DIR",
		Short: "Write a sweep's manifest: the grid's cells with their seeds, divided into tasks",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.out == "" {
				return usageError{fmt.Errorf("--out DIR is required: the directory every task shares")}
			}
			if perTask < 1 || perTask > 1<<20 {
				return invalidFlag("cells-per-task", fmt.Sprint(perTask), fmt.Errorf("want 1..%d", 1<<20))
			}
			s, err := scenarioArgs(args, o.seed, o.sets)
			if err != nil {
				return err
			}
			m, err := sweep.Plan(o.out, s, o.sets, o.full, perTask)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "planned %s: %d cells in %d tasks (0..%d) in %s\n", m.Scenario, len(m.Cells), m.Tasks, m.Tasks-1, o.out)
			fmt.Fprintf(cmd.OutOrStdout(), "run each:  sdrnet sweep run %s --index I\n", o.out)
			fmt.Fprintf(cmd.OutOrStdout(), "on Slurm:  sbatch --array=0-%d deploy/slurm/sweep.sbatch %s\n", m.Tasks-1, o.out)
			fmt.Fprintf(cmd.OutOrStdout(), "then:      sdrnet sweep merge %s\n", o.out)
			return nil
		},
	}
	f := cmd.Flags()
	o.addGridFlags(f)
	f.StringVar(&o.out, "out", "", "the sweep's directory, shared by every task (required)")
	f.IntVar(&perTask, "cells-per-task", 1, "cells each task runs")
	return cmd
}

func newSweepRunCmd() *cobra.Command {
	var (
		index     int
		workers   int
		hugePages bool
	)
	cmd := &cobra.Command{
		Use:   "run DIR [--index I]",
		Short: "Run one task's cells of a planned sweep (I from --index, SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			task, from := index, "--index"
			if !cmd.Flags().Changed("index") {
				var err error
				if task, from, err = sweep.TaskFromEnv(os.Getenv); err != nil {
					return err
				}
			} else if index < 0 {
				return invalidFlag("index", fmt.Sprint(index), fmt.Errorf("want a task index, 0 or more"))
			}
			if err := checkJobs(workers); err != nil {
				return err
			}
			prepareHeap(cmd.ErrOrStderr(), hugePages)
			start := time.Now()
			r, err := sweep.RunTask(args[0], task, workers)
			if r.End > r.First {
				fmt.Fprintf(cmd.ErrOrStderr(), "sdrnet sweep: task %d (%s): cells %d..%d: ran %d, found %d done, %d failed, in %v\n",
					task, from, r.First, r.End-1, r.Ran, r.Skipped, len(r.Failed), time.Since(start).Round(time.Millisecond))
			}
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&index, "index", 0, "the task to run (default: from SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX)")
	f.IntVarP(&workers, "jobs", "j", runtime.NumCPU(), "the task's cells run in parallel")
	f.BoolVar(&hugePages, "huge-pages", false, hugePagesUsage)
	return cmd
}

func newSweepStatusCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "status DIR",
		Short: "Say how many cells of a sweep are done, and which tasks still have cells to run",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, p, err := sweep.Status(args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", m.Scenario, p)
			return nil
		},
	}
}

func newSweepMergeCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "merge DIR",
		Short: "Merge a finished sweep into results.csv, results.json and report.html",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := sweep.Merge(args[0])
			if err != nil {
				return err
			}
			if out == "" {
				out = args[0]
			}
			return emitRun(cmd, out, r, "")
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "output directory (default: the sweep's)")
	return cmd
}
