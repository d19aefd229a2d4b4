package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

func newModelCmd() *cobra.Command {
	var sets []string
	var full bool
	cmd := &cobra.Command{
		Use:   "model [FILE]",
		Short: "Print the analytic completion-time model's prediction for a scenario's grid",
		Long: `model evaluates SDR-RDMA's analytic completion-time model (selective repeat
with geometric retries; erasure coding with decode and fallback
probabilities) for every point of a scenario's grid, without simulating.
Without FILE it uses the built-in SDR-RDMA long-haul scenario.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := scenarioArgs(args, seedFlag{}, sets)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "cell\tmodel mean\tmodel p99.9\tnote\t")
			for _, c := range scenario.Predict(s, full) {
				mean, p999 := "-", "-"
				if c.Model.Mean > 0 {
					mean, p999 = fmtSeconds(c.Model.Mean), fmtSeconds(c.Model.P999)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", c.Label, mean, p999, c.Model.Note)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a parameter: key=value or key=[v1,v2] (repeatable)")
	cmd.Flags().BoolVar(&full, "full", false, "the whole grid, not the scenario's quick subset")
	return cmd
}
