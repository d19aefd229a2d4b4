package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/sdrnet/sdrnet/internal/linkem"
)

func newLinkemCmd() *cobra.Command {
	var listen, target, spec string
	var every time.Duration
	cmd := &cobra.Command{
		Use:   "linkem --listen ADDR --target ADDR [--spec SPEC]",
		Short: "Run a user-space link emulator: a UDP proxy that delays, rate-limits, drops, reorders and duplicates",
		Long: `linkem forwards UDP datagrams from --listen to --target and back, impairing
them on the way (the kernel here has no netem). Each client source port is
a path, so a connection sprayed over many ports sees per-path faults. The
target may answer from several ports of its own (recv --paths N): a path
takes replies from any port of the target's host, and drops the rest.

SPEC is a list of clauses, [selector:]key=value,... with selectors path[N],
path[N-M], port[P], port[P-Q]; keys apply to both directions unless
prefixed fwd. or rev.:
  delay=25ms jitter=1ms rate=1Gbps burst=64KiB queue=4MiB loss=1e-3
  ge=P/R[/BAD[/GOOD]] reorder=PROB/DELAY dup=0.001 fail=FROM[-TO] seed=N
Example: "delay=10ms,rate=1Gbps,loss=1% path[3]:fail=2s"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if listen == "" || target == "" {
				return usageError{fmt.Errorf("linkem needs --listen and --target")}
			}
			cfg, err := linkem.ParseSpec(spec)
			if err != nil {
				return invalidFlag("spec", spec, err)
			}
			p, err := linkem.Listen(listen, target, cfg)
			if err != nil {
				return err
			}
			defer p.Close()
			w := cmd.ErrOrStderr()
			fmt.Fprintf(w, "sdrnet linkem: %v -> %v: %s\n", p.Addr(), p.Target(), cfg)
			ctx, cancel := interruptible()
			defer cancel()
			tick := time.NewTicker(every)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					printLinkem(w, p.Stats())
					return nil
				case <-tick.C:
					printLinkem(w, p.Stats())
				}
			}
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address clients send to (IP:port)")
	cmd.Flags().StringVar(&target, "target", "", "address datagrams are forwarded to (IP:port)")
	cmd.Flags().StringVar(&spec, "spec", "", "impairments (see above); empty forwards untouched")
	cmd.Flags().DurationVar(&every, "stats", 5*time.Second, "print counters this often")
	return cmd
}

func printLinkem(w io.Writer, s linkem.Stats) {
	for _, d := range []struct {
		name string
		s    linkem.DirStats
		late linkem.Lateness
	}{{"forward", s.Forward, s.ForwardLate}, {"reverse", s.Reverse, s.ReverseLate}} {
		// Lateness is the emulator's own delay noise: a user reading RTTs
		// through it needs to know how much of their spread it adds.
		fmt.Fprintf(w, "%s: received %d, forwarded %d, dropped %d (loss %d, queue %d, failed path %d), duplicated %d, reordered %d; late writes %d of %d over 100us, %d over 1ms, max %v\n",
			d.name, d.s.Received, d.s.Forwarded, d.s.Dropped(), d.s.DroppedLoss, d.s.DroppedQueue, d.s.DroppedFail,
			d.s.Duplicated, d.s.Reordered, d.late.Over100us, d.late.Writes, d.late.Over1ms, d.late.Max.Round(time.Microsecond))
		if d.s.Queued > 0 {
			fmt.Fprintf(w, "%s: queue wait mean %v over %d datagrams, max %v\n", d.name,
				d.s.MeanQueueWait().Round(time.Microsecond), d.s.Queued, d.s.MaxQueueWait.Round(time.Microsecond))
		}
	}
	if s.Rejected > 0 || s.Foreign > 0 {
		fmt.Fprintf(w, "refused: %d from clients beyond the path limit, %d from hosts other than the target\n",
			s.Rejected, s.Foreign)
	}
}
