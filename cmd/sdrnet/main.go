// Command sdrnet is the one binary of the sdrnet project: an SDR-RDMA style
// transport that moves large messages over lossy, long-haul links with a
// receive bitmap and pluggable reliability (selective repeat, erasure
// coding, go-back-N), in a real UDP datapath and in a simulator that drive
// the same sans-IO protocol core.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/sdrnet/sdrnet/internal/buildinfo"
)

func main() {
	if err := execute(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		os.Exit(1)
	}
}

// execute runs the command line args, writing results to stdout. An error
// is reported on stderr as "sdrnet: <error>", followed by the usage when
// the command line itself was malformed, and returned.
func execute(args []string, stdout, stderr io.Writer) error {
	root := newRootCmd()
	var prof profiles
	prof.register(root)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	err = errors.Join(err, prof.stop())
	if err == nil {
		return nil
	}
	fmt.Fprintf(stderr, "sdrnet: %v\n", err)
	if _, ok := errors.AsType[usageError](err); ok {
		fmt.Fprint(stderr, cmd.UsageString())
	}
	return err
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "sdrnet",
		Short: "An SDR-RDMA style transport for large messages over lossy, long-haul links",
		Long: `sdrnet moves large messages over lossy, long-haul links the way SDR-RDMA
does: the receiver posts a buffer and tracks arrival in a bitmap of chunks,
and a pluggable reliability scheme repairs losses (selective repeat with
timeouts or NACKs, Reed-Solomon or XOR erasure coding, or the go-back-N of
RoCE RC). One sans-IO protocol core drives both real UDP sockets and the
simulator.`,
		// Errors are printed once, by execute; the usage only follows
		// command-line mistakes (see flagError), not failed runs.
		SilenceErrors: true,
		SilenceUsage:  true,
		Version:       buildinfo.Version(),
	}
	root.SetVersionTemplate("sdrnet {{.Version}}\n")
	root.SetFlagErrorFunc(flagError)
	root.AddCommand(newDemoCmd(), newSimCmd(), newJobCmd(), newSweepCmd(), newModelCmd(), newSendCmd(), newRecvCmd(), newBenchCmd(), newLinkemCmd())
	return root
}
