package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sdrnet/sdrnet/internal/autoscheme"
	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/internal/units"
	"github.com/sdrnet/sdrnet/internal/wire"
	"github.com/sdrnet/sdrnet/sdr"
	"github.com/sdrnet/sdrnet/sdr/transfer"
)

// transportFlags are the connection settings send, recv and bench share.
type transportFlags struct {
	scheme    string
	paths     int
	sel       string
	mtu       sizeFlag
	chunk     sizeFlag
	rate      rateFlag
	msg       sizeFlag
	depth     int
	handshake durationFlag
	window    sizeFlag
	cc        string
	lineRate  rateFlag
	target    durationFlag
	minRTO    durationFlag
	idle      durationFlag
	auth      string
	psk       string
	codec     int
}

func (f *transportFlags) register(cmd *cobra.Command) {
	f.mtu = sizeFlag{min: 64, max: 65000, text: "auto", auto: true}
	f.chunk = sizeFlag{min: 64, max: 1 << 30, text: "auto", auto: true}
	f.msg = sizeFlag{min: sdr.MinStreamMsgSize, max: 1 << 30, n: 8 << 20, text: "8MiB"}
	f.handshake = durationFlag{max: time.Hour, d: 10 * time.Second, text: "10s"}
	f.window = sizeFlag{min: 4096, max: 1 << 40}
	f.minRTO = durationFlag{max: time.Minute, d: sdr.DefaultMinRTO, text: sdr.DefaultMinRTO.String()}
	f.target = durationFlag{max: time.Second, text: "1ms, or RTT/20 where more"}
	f.idle = durationFlag{max: time.Hour, d: sdr.DefaultIdleTimeout, text: sdr.DefaultIdleTimeout.String()}
	fl := cmd.Flags()
	fl.StringVar(&f.scheme, "scheme", "sr-nack", "reliability scheme: sr, sr-nack, ec:K,M, xor:K,M, gbn, csaud, none, or auto (SR-NACK or a Reed-Solomon code per message, from the measured loss, RTT and --rate)")
	fl.IntVar(&f.paths, "paths", 1, "UDP source ports to spray each connection over (1..128)")
	fl.StringVar(&f.sel, "select", "obs", "path selection: obs, rr, bestrtt, dwrr or single")
	fl.Var(&f.mtu, "mtu", "payload bytes per packet (64..65000), or auto: what the route to the peer carries in one IP packet, at most 8192")
	fl.Var(&f.chunk, "chunk", "bitmap chunk size: a power-of-two multiple of the MTU, or auto: the largest within 64KiB")
	fl.Var(&f.rate, "rate", "pace data to this rate (like 1Gbps); default: as fast as the socket takes it")
	fl.Var(&f.msg, "msg", "message size a stream is cut into (the receiver's must be at least the sender's)")
	fl.IntVar(&f.depth, "depth", sdr.DefaultStreamDepth, "messages in flight (1..512)")
	fl.Var(&f.handshake, "handshake-timeout", "give up on a peer that does not answer after this long")
	fl.Var(&f.window, "window", "unacknowledged bytes in flight (default: --rate x 100ms where --rate is given; else 16MiB, the socket buffer asked for, under --cc bbr, the default, 2MiB under the others)")
	fl.StringVar(&f.auth, "auth", sdr.DefaultAuth, "packet protection after a Noise handshake: full (encrypt and authenticate everything), header (authenticate headers only) or none")
	fl.StringVar(&f.psk, "psk", "", "pre-shared key, 64 hex digits, that both ends must hold (authenticates the peer)")
	fl.StringVar(&f.cc, "cc", sdr.DefaultCC, "congestion control: "+strings.Join(cc.Names(), ", "))
	fl.Var(&f.lineRate, "line-rate", "link rate the congestion controller starts from (default: --rate, or 10Gbps)")
	fl.Var(&f.target, "target-delay", "queueing delay nscc steers to: lower leaves more of a shallow shared queue to TCP beside it, higher keeps a lone connection's path fuller (10us..1s)")
	fl.Var(&f.minRTO, "min-rto", "least retransmission timeout")
	fl.IntVar(&f.codec, "codec-workers", 0, "goroutines that code erasure-code parity while the data is sent, for a sender with cores to spare (0: the datapath's own goroutine codes it when due; 0..1024)")
	fl.Var(&f.idle, "idle-timeout", "declare the peer gone after this long without a packet from it (keepalives every third of it; 1s..1h)")
}

// config checks the flags and returns the sdr configuration.
func (f *transportFlags) config() (*sdr.Config, error) {
	if _, _, err := autoscheme.Parse(f.scheme); err != nil {
		return nil, invalidFlag("scheme", f.scheme, errors.New("want sr, sr-nack, ec:K,M, xor:K,M, gbn, csaud, none or auto"))
	}
	if f.paths < 1 || f.paths > path.MaxPaths {
		return nil, invalidFlag("paths", fmt.Sprint(f.paths), fmt.Errorf("want 1..%d", path.MaxPaths))
	}
	if _, err := path.ParseKind(f.sel); err != nil {
		return nil, invalidFlag("select", f.sel, errors.New("want obs, rr, bestrtt, dwrr or single"))
	}
	if _, ok := wire.ParseProtection(f.auth); !ok {
		return nil, invalidFlag("auth", f.auth, errors.New("want full, header or none"))
	}
	var psk []byte
	if f.psk != "" {
		var err error
		if psk, err = hex.DecodeString(f.psk); err != nil || len(psk) != sdr.PSKLen {
			return nil, invalidFlag("psk", "(hidden)", fmt.Errorf("want %d hex digits", 2*sdr.PSKLen))
		}
	}
	if _, err := cc.Parse(f.cc); err != nil {
		return nil, invalidFlag("cc", f.cc, fmt.Errorf("want %s", strings.Join(cc.Names(), ", ")))
	}
	if f.idle.d < minIdleTimeout {
		return nil, invalidFlag("idle-timeout", f.idle.text, fmt.Errorf("want %v..%v", minIdleTimeout, f.idle.max))
	}
	if f.target.d != 0 && f.target.d < minTargetDelay {
		return nil, invalidFlag("target-delay", f.target.text, fmt.Errorf("want %v..%v", minTargetDelay, f.target.max))
	}
	if f.target.d != 0 && f.cc != "nscc" {
		return nil, invalidFlag("target-delay", f.target.text, fmt.Errorf("only --cc nscc steers to a target delay (--cc is %s)", f.cc))
	}
	if f.codec < 0 || f.codec > 1024 {
		return nil, invalidFlag("codec-workers", fmt.Sprint(f.codec), errors.New("want 0..1024"))
	}
	if f.depth < 1 || f.depth > 512 {
		return nil, invalidFlag("depth", fmt.Sprint(f.depth), errors.New("want 1..512"))
	}
	switch {
	case f.chunk.n == 0:
	case f.mtu.n == 0 && (f.chunk.n < sdr.MaxAutoMTU || !pow2(f.chunk.n)):
		return nil, invalidFlag("chunk", f.chunk.text, fmt.Errorf("want a power of two of at least %d under --mtu auto (the route may lower the MTU, and the chunk with it), or set --mtu", sdr.MaxAutoMTU))
	case f.mtu.n != 0 && (f.chunk.n%f.mtu.n != 0 || !pow2(f.chunk.n/f.mtu.n)):
		return nil, invalidFlag("chunk", f.chunk.text, fmt.Errorf("want a power-of-two multiple of --mtu %d", f.mtu.n))
	}
	window := f.window.n
	if chunk := cmp.Or(f.chunk.n, sdr.DefaultChunkSize); window != 0 && window < chunk {
		return nil, invalidFlag("window", f.window.text, fmt.Errorf("want at least one chunk (--chunk %s, %s): a window below one chunk can never send one", f.chunk.text, units.FormatSize(chunk)))
	}
	if window == 0 && f.rate.bps > 0 {
		// Enough for a 100 ms round trip at the paced rate.
		window = max(int64(f.rate.bps/8*0.1), sdr.DefaultWindow)
	}
	return &sdr.Config{Scheme: f.scheme, Paths: f.paths, Select: f.sel, MTU: int(f.mtu.n),
		ChunkSize: int(f.chunk.n), Rate: f.rate.bps, HandshakeTimeout: f.handshake.d,
		MaxBytesInFlight: window, Auth: f.auth, PSK: psk, CC: f.cc, LineRate: f.lineRate.bps, MinRTO: f.minRTO.d,
		IdleTimeout: f.idle.d, TargetDelay: f.target.d, CodecWorkers: f.codec}, nil
}

// minIdleTimeout is the least --idle-timeout: keepalives every third of
// it must not flood the peer, and a shorter silence is a scheduling
// hiccup on a busy host, not a dead peer.
const minIdleTimeout = time.Second

// minTargetDelay is the least --target-delay: below it a host's own
// scheduling reads as a queue on every sample.
const minTargetDelay = 10 * time.Microsecond

func pow2(n int64) bool { return n > 0 && n&(n-1) == 0 }

// interruptible returns a context that ends on Ctrl-C.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

func newRecvCmd() *cobra.Command {
	var tf transportFlags
	var listen, out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "recv",
		Short: "Receive a file over SDR/UDP (resumable), or take it to stdout or nowhere",
		Long: `Receive a file over SDR/UDP and write it to a file, to stdout or nowhere.

The file is complete only when every byte the sender offered arrived and
its SHA-256 matches the sender's; recv then exits 0. Anything else - the
sender interrupted or dead, a close before the end - exits non-zero and
says how much arrived.

With --out FILE the bytes go to FILE.partial, with the receive bitmap (the
blocks held, each with its SHA-256) in FILE.partial.state; FILE appears
only once the bytes on disk are verified. Rerunning the same recv and send
moves only the missing blocks. A FILE.partial that is not of the sender's
file is set aside as FILE.partial.stale and named, never mixed in. A
second recv on the same --out refuses at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := tf.config()
			if err != nil {
				return err
			}
			// Check --out before listening: a sender should not find out
			// after the transfer that its bytes had nowhere to go.
			target, file, err := openTarget(out, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			if file != nil {
				defer file.Close()
			}
			ctx, cancel := interruptible()
			defer cancel()
			l, err := sdr.Listen(listen, cfg)
			if err != nil {
				return err
			}
			defer l.Close()
			fmt.Fprintf(cmd.ErrOrStderr(), "sdrnet recv: listening on %v (%d paths)\n", l.Addr(), tf.paths)
			conn, err := l.Accept(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			// One peer per recv: any other is refused from now on (and a
			// spoofed HELLO never gets past the listener's Retry).
			l.StopAccepting()
			start := time.Now()
			pw := newProgress(cmd.ErrOrStderr(), "recv", start, conn.Stats)
			res, err := transfer.Receive(ctx, conn, target, tf.transfer(pw))
			pw.done()
			if file != nil && file.SetAside() != "" {
				fmt.Fprintf(cmd.ErrOrStderr(), "sdrnet recv: %s\n", file.SetAside())
			}
			if err != nil {
				if errors.Is(err, sdr.ErrMessageTooLarge) {
					err = fmt.Errorf("%w: give recv --msg at least the sender's (it is --msg %s)", err, tf.msg.text)
				}
				if file != nil && errors.Is(err, sdr.ErrIncomplete) {
					err = fmt.Errorf("%w (what arrived is kept in %s.partial: rerun recv and send to resume)", err, out)
				}
				if asJSON {
					writeSummary(cmd.OutOrStdout(), res, time.Since(start), err)
				}
				return err
			}
			// Results go to stdout, unless the file itself does.
			w := cmd.OutOrStdout()
			if out == "-" {
				w = cmd.ErrOrStderr()
			}
			if asJSON {
				return writeSummary(w, res, time.Since(start), nil)
			}
			printReceived(w, res, time.Since(start), conn.Stats())
			return nil
		},
	}
	tf.register(cmd)
	cmd.Flags().StringVar(&listen, "listen", ":4793", "address to listen on (IP:port, :port)")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the file or directory here (a new name), via NAME.partial, resumably (- for stdout: files only); default: discard")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return cmd
}

// openTarget is where recv puts the file: --out FILE (locked, resumable),
// stdout, or nowhere.
func openTarget(out string, stdout io.Writer) (transfer.Target, *transfer.File, error) {
	switch out {
	case "":
		return transfer.Writer(io.Discard), nil, nil
	case "-":
		return transfer.Writer(stdout), nil, nil
	}
	f, err := transfer.OpenFile(out)
	if err != nil {
		return nil, nil, invalidFlag("out", out, err)
	}
	return f, f, nil
}

// transfer returns the transfer settings, with progress drawn on p.
func (f *transportFlags) transfer(p *transferBar) transfer.Options {
	return transfer.Options{MsgSize: int(f.msg.n), Depth: f.depth, Progress: p.set, Stall: f.idle.d}
}

// summary is send's and recv's --json.
type summary struct {
	OK           bool    `json:"ok"`
	Error        string  `json:"error,omitempty"`
	Bytes        int64   `json:"bytes"`         // the file's length
	MovedBytes   int64   `json:"moved_bytes"`   // carried by this transfer
	ResumedBytes int64   `json:"resumed_bytes"` // held by the receiver from before
	Seconds      float64 `json:"seconds"`
	GoodputBps   float64 `json:"goodput_bps"` // moved bytes over the time, in bits
}

func writeSummary(w io.Writer, res transfer.Result, d time.Duration, err error) error {
	s := summary{OK: err == nil, Bytes: res.Size, MovedBytes: res.Moved, ResumedBytes: res.Resumed, Seconds: d.Seconds(),
		GoodputBps: float64(res.Moved) * 8 / d.Seconds()}
	if err != nil {
		s.Error = err.Error()
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

func newSendCmd() *cobra.Command {
	var tf transportFlags
	var asJSON, follow bool
	size := sizeFlag{min: 1, max: 1 << 50}
	cmd := &cobra.Command{
		Use:   "send ADDR [FILE|DIR]",
		Short: "Send a file or a directory, or --size bytes of synthetic data, to sdrnet recv at ADDR",
		Long: `Send a file or a directory, or --size bytes of synthetic data, to sdrnet recv at ADDR.

send exits 0 only once the receiver has checked the whole file's length
and SHA-256 against the bytes on its disk. Where the receiver holds blocks
of this file from an earlier transfer, only the missing ones move.

A directory moves as its tree: directories, files and symbolic links, with
their permissions and modification times (set-user and set-group bits are
dropped). Links are sent as links unless --follow-symlinks; devices,
sockets and pipes are left out, each named. The receiver lays the tree
out under its --out name once every byte is verified.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := tf.config()
			if err != nil {
				return err
			}
			var src transfer.Source
			var file *os.File
			switch {
			case len(args) == 2 && size.text != "":
				return usageError{errors.New("give a FILE or --size, not both")}
			case len(args) == 2:
				if st, err := os.Stat(args[1]); err == nil && st.IsDir() {
					var skipped []string
					if src, skipped, err = transfer.ReadDir(args[1], follow); err != nil {
						return err
					}
					for _, s := range skipped {
						fmt.Fprintf(cmd.ErrOrStderr(), "sdrnet send: left out %s\n", s)
					}
					break
				}
				if file, err = os.Open(args[1]); err != nil {
					return err
				}
				defer file.Close()
				st, err := file.Stat()
				if err != nil {
					return err
				}
				if !st.Mode().IsRegular() {
					return usageError{fmt.Errorf("%s is not a regular file", args[1])}
				}
				src = transfer.Source{R: file, Size: st.Size(), ModTime: st.ModTime(), Mode: st.Mode()}
			case size.text != "":
				src = transfer.Source{R: zeroReader{}, Size: size.n}
			default:
				return usageError{errors.New("nothing to send: give a FILE or --size")}
			}
			ctx, cancel := interruptible()
			defer cancel()
			conn, err := sdr.Dial(ctx, args[0], cfg)
			if err != nil {
				return err
			}
			start := time.Now()
			pr := newProgress(cmd.ErrOrStderr(), "send", start, conn.Stats)
			res, err := transfer.Send(ctx, conn, src, tf.transfer(pr))
			pr.done()
			switch {
			case err != nil:
			case file != nil:
				err = unchanged(file, src)
			case src.Manifest != nil:
				err = treeUnchanged(args[1], follow, src)
			}
			st := conn.Stats()
			if errors.Is(err, context.Canceled) {
				err = errors.New("interrupted")
			}
			if err != nil {
				_ = conn.CloseWithError(sdr.CodeAborted, "sender stopped: "+err.Error())
				if !errors.Is(err, sdr.ErrPeerAborted) { // else the receiver's reason says what it holds
					err = fmt.Errorf("%w (the receiver acknowledged %s of %s)", err, units.FormatSize(res.Resumed+res.Moved), units.FormatSize(src.Size))
				}
				if asJSON {
					writeSummary(cmd.OutOrStdout(), res, time.Since(start), err)
				}
				return err
			}
			closeErr := conn.Close()
			if asJSON {
				return errors.Join(writeSummary(cmd.OutOrStdout(), res, time.Since(start), nil), closeErr)
			}
			printSent(cmd.OutOrStdout(), res, time.Since(start), st)
			return closeErr
		},
	}
	tf.register(cmd)
	cmd.Flags().Var(&size, "size", "send this many bytes of synthetic data instead of a file (like 1GiB)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	cmd.Flags().BoolVar(&follow, "follow-symlinks", false, "in a directory, send what symbolic links point to instead of the links")
	return cmd
}

// unchanged checks that the file sent is still the one offered: what the
// receiver verified is what send read, which for a file written meanwhile
// may be neither version.
func unchanged(f *os.File, src transfer.Source) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Size() != src.Size || !st.ModTime().Equal(src.ModTime) {
		return fmt.Errorf("%s changed while it was sent (now %d bytes, modified %v): rerun to send it as it is now", f.Name(), st.Size(), st.ModTime())
	}
	return nil
}

// treeUnchanged checks that a directory sent is still as it was read: the
// same entries with the same sizes and times.
func treeUnchanged(dir string, follow bool, src transfer.Source) error {
	now, _, err := transfer.ReadDir(dir, follow)
	if err != nil {
		return err
	}
	if !bytes.Equal(now.Manifest, src.Manifest) {
		return fmt.Errorf("%s changed while it was sent (an entry was added, removed or written): rerun to send it as it is now", dir)
	}
	return nil
}

// zeroReader yields zeros: synthetic data costs no disk.
type zeroReader struct{}

func (zeroReader) ReadAt(p []byte, _ int64) (int, error) {
	clear(p)
	return len(p), nil
}

// printReceived is recv's summary: what its own side saw.
func printReceived(w io.Writer, res transfer.Result, d time.Duration, st sdr.Stats) {
	fmt.Fprintf(w, "received and verified %s in %v: %s goodput%s; %d data packets, %d duplicates, %d reordered, "+
		"%d rebuilt by erasure decoding, %d fallback NACKs, %d control packets sent\n",
		units.FormatSize(res.Size), d.Round(time.Millisecond), units.FormatRate(float64(res.Moved)*8/d.Seconds()), resumed(res),
		st.RecvPackets, st.DupPackets, st.Reordered, st.RecoveredPackets, st.Fallbacks, st.CtrlPackets)
}

// resumed says how much a transfer did not have to move.
func resumed(res transfer.Result) string {
	if res.Resumed == 0 {
		return ""
	}
	return fmt.Sprintf(" (resumed: %s were already there, %s moved)", units.FormatSize(res.Resumed), units.FormatSize(res.Moved))
}

// printSent is send's summary: the sender's counters, and per path when
// it sprayed.
func printSent(w io.Writer, res transfer.Result, d time.Duration, st sdr.Stats) {
	gbps := float64(res.Moved) * 8 / d.Seconds()
	fmt.Fprintf(w, "sent and verified %s in %v: %s goodput%s; retransmitted %s, parity %s, %d RTOs (%d probes into silence), RTT %v\n",
		units.FormatSize(res.Size), d.Round(time.Millisecond), units.FormatRate(gbps), resumed(res),
		units.FormatSize(int64(st.RetxBytes)), units.FormatSize(int64(st.ParityBytes)), st.RTOs, st.SilentProbes,
		st.SmoothedRTT.Round(time.Microsecond))
	fmt.Fprintln(w, sendTimes(st.Busy, st.WindowLimited, st.CreditLimited, st.InflightLimited))
	if len(st.Paths) > 1 {
		var b strings.Builder
		for i, p := range st.Paths {
			fmt.Fprintf(&b, "  path %3d: sent %8d  acked %8d  lost %6d  srtt %10v  %s\n", i, p.Sent, p.Acked, p.Lost,
				p.SRTT.Round(time.Microsecond), p.State)
		}
		fmt.Fprint(w, b.String())
	}
}

// sendTimes says where a sender's time went (sdr.ConnStats.Busy and the
// limited times), as a line of send's and bench's summaries.
func sendTimes(busy, window, credit, inflight time.Duration) string {
	r := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	return fmt.Sprintf("sender: busy %v, held by the congestion window %v, by the receiver %v, by --window %v",
		r(busy), r(window), r(credit), r(inflight))
}
