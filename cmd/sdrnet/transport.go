package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/sdrnet/sdrnet/internal/autoscheme"
	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/internal/units"
	"github.com/sdrnet/sdrnet/internal/wire"
	"github.com/sdrnet/sdrnet/sdr"
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
	f.mtu = sizeFlag{min: 64, max: 65000, n: 4096, text: "4096"}
	f.chunk = sizeFlag{min: 64, max: 1 << 30, n: 64 << 10, text: "64KiB"}
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
	fl.Var(&f.mtu, "mtu", "payload bytes per packet (64..65000)")
	fl.Var(&f.chunk, "chunk", "bitmap chunk size: a power-of-two multiple of the MTU")
	fl.Var(&f.rate, "rate", "pace data to this rate (like 1Gbps); default: as fast as the socket takes it")
	fl.Var(&f.msg, "msg", "message size a stream is cut into (the receiver's must be at least the sender's)")
	fl.IntVar(&f.depth, "depth", sdr.DefaultStreamDepth, "messages in flight (1..512)")
	fl.Var(&f.handshake, "handshake-timeout", "give up on a peer that does not answer after this long")
	fl.Var(&f.window, "window", "unacknowledged bytes in flight (default: --rate x 100ms where --rate is given; else 128MiB under --cc bbr, the default, 2MiB under the others)")
	fl.StringVar(&f.auth, "auth", sdr.DefaultAuth, "packet protection after a Noise handshake: full (encrypt and authenticate everything), header (authenticate headers only) or none")
	fl.StringVar(&f.psk, "psk", "", "pre-shared key, 64 hex digits, that both ends must hold (authenticates the peer)")
	fl.StringVar(&f.cc, "cc", sdr.DefaultCC, "congestion control: "+strings.Join(cc.Names(), ", "))
	fl.Var(&f.lineRate, "line-rate", "link rate the congestion controller starts from (default: --rate, or 10Gbps)")
	fl.Var(&f.target, "target-delay", "queueing delay nscc steers to: lower leaves more of a shallow shared queue to TCP beside it, higher keeps a lone connection's path fuller (10us..1s)")
	fl.Var(&f.minRTO, "min-rto", "least retransmission timeout")
	fl.IntVar(&f.codec, "codec-workers", 0, "goroutines that code erasure-code parity while the data is sent, for a sender with cores to spare (0: the datapath's own goroutine codes it when due; 0..1024)")
	fl.Var(&f.idle, "idle-timeout", "declare the peer gone after this long without a packet from it (keepalives every third of it; 100ms..1h)")
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
	if f.codec < 0 || f.codec > 1024 {
		return nil, invalidFlag("codec-workers", fmt.Sprint(f.codec), errors.New("want 0..1024"))
	}
	if f.depth < 1 || f.depth > 512 {
		return nil, invalidFlag("depth", fmt.Sprint(f.depth), errors.New("want 1..512"))
	}
	if f.chunk.n%f.mtu.n != 0 || !pow2(f.chunk.n/f.mtu.n) {
		return nil, invalidFlag("chunk", f.chunk.text, fmt.Errorf("want a power-of-two multiple of --mtu %d", f.mtu.n))
	}
	window := f.window.n
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
const minIdleTimeout = 100 * time.Millisecond

// minTargetDelay is the least --target-delay: below it a host's own
// scheduling reads as a queue on every sample.
const minTargetDelay = 10 * time.Microsecond

// stream returns the stream settings; size declares the stream's length
// (0: undeclared).
func (f *transportFlags) stream(size int64) *sdr.StreamConfig {
	return &sdr.StreamConfig{MsgSize: int(f.msg.n), Depth: f.depth, Size: size}
}

func pow2(n int64) bool { return n > 0 && n&(n-1) == 0 }

// interruptible returns a context that ends on Ctrl-C.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

func newRecvCmd() *cobra.Command {
	var tf transportFlags
	var listen, out string
	cmd := &cobra.Command{
		Use:   "recv",
		Short: "Receive one stream over SDR/UDP and write it to a file (or discard it)",
		Long: `Receive one stream over SDR/UDP and write it to a file, to stdout or nowhere.

The stream is complete only when every byte the sender declared arrived and
its SHA-256 matches the sender's; recv then exits 0. Anything else - the
sender interrupted or dead, a close without the end of stream - exits
non-zero and says how much arrived. With --out FILE the bytes go to
FILE.partial and are renamed to FILE only once verified; an incomplete
stream is kept as FILE.partial, so nothing received is lost.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := tf.config()
			if err != nil {
				return err
			}
			// Check --out before listening: a sender should not find out
			// after the transfer that its bytes had nowhere to go.
			sink, err := openSink(out, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			defer sink.discard()
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
			pw := newProgress(cmd.ErrOrStderr(), "recv", 0, start)
			n, err := conn.RecvStream(ctx, io.MultiWriter(sink, pw), tf.stream(0))
			pw.done()
			if err != nil {
				if errors.Is(err, sdr.ErrMessageTooLarge) {
					// Tell the sender why, so both ends name the fix.
					why := fmt.Sprintf("the sender's messages exceed recv's --msg %s: give recv --msg at least the sender's", tf.msg.text)
					_ = conn.CloseWithError(closeTooLarge, why)
					err = fmt.Errorf("%w (%s)", err, why)
				}
				return sink.failed(err)
			}
			if err := sink.commit(); err != nil {
				return err
			}
			// Results go to stdout, unless the stream itself does.
			res := cmd.OutOrStdout()
			if out == "-" {
				res = cmd.ErrOrStderr()
			}
			printReceived(res, n, time.Since(start), conn.Stats())
			return nil
		},
	}
	tf.register(cmd)
	cmd.Flags().StringVar(&listen, "listen", ":4793", "address to listen on (IP:port, :port)")
	cmd.Flags().StringVarP(&out, "out", "o", "", "write the stream to this file, via FILE.partial (- for stdout); default: discard")
	return cmd
}

// sink is where recv writes a stream: a file written as NAME.partial and
// renamed once the stream is verified, stdout, or nothing.
type sink struct {
	io.Writer
	f    *os.File
	name string
	done bool
}

func openSink(out string, stdout io.Writer) (*sink, error) {
	switch out {
	case "":
		return &sink{Writer: io.Discard}, nil
	case "-":
		return &sink{Writer: stdout}, nil
	}
	if st, err := os.Stat(out); err == nil && st.IsDir() {
		return nil, invalidFlag("out", out, errors.New("is a directory; want a file name"))
	}
	f, err := os.Create(out + ".partial")
	if err != nil {
		return nil, invalidFlag("out", out, err)
	}
	return &sink{Writer: f, f: f, name: out}, nil
}

// commit makes a verified stream's file final.
func (s *sink) commit() error {
	s.done = true
	if s.f == nil {
		return nil
	}
	if err := s.f.Sync(); err != nil {
		return err
	}
	if err := s.f.Close(); err != nil {
		return err
	}
	return os.Rename(s.f.Name(), s.name)
}

// failed keeps what arrived of an incomplete stream, and says where.
func (s *sink) failed(err error) error {
	s.done = true
	if s.f == nil {
		return err
	}
	_ = s.f.Close()
	return fmt.Errorf("%w (what arrived is kept in %s)", err, s.f.Name())
}

// discard removes the partial file of a stream that never started.
func (s *sink) discard() {
	if s.f != nil && !s.done {
		_ = s.f.Close()
		_ = os.Remove(s.f.Name())
	}
}

func newSendCmd() *cobra.Command {
	var tf transportFlags
	size := sizeFlag{min: 1, max: 1 << 50}
	cmd := &cobra.Command{
		Use:   "send ADDR [FILE]",
		Short: "Send a file, or --size bytes of synthetic data, to sdrnet recv at ADDR",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := tf.config()
			if err != nil {
				return err
			}
			var r io.Reader
			var total int64
			switch {
			case len(args) == 2 && size.text != "":
				return usageError{errors.New("give a FILE or --size, not both")}
			case len(args) == 2:
				f, err := os.Open(args[1])
				if err != nil {
					return err
				}
				defer f.Close()
				if st, err := f.Stat(); err == nil {
					total = st.Size()
				}
				r = f
			case size.text != "":
				total = size.n
				r = io.LimitReader(zeroReader{}, size.n)
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
			pr := newProgress(cmd.ErrOrStderr(), "send", total, start)
			n, err := conn.SendStream(ctx, io.TeeReader(r, pr), tf.stream(total))
			pr.done()
			st := conn.Stats()
			closeErr := conn.Close()
			if errors.Is(err, context.Canceled) {
				err = errors.New("interrupted")
			}
			if err != nil {
				return fmt.Errorf("%w (the receiver acknowledged %d bytes, %s)", err, n, units.FormatSize(n))
			}
			printSent(cmd.OutOrStdout(), n, time.Since(start), st)
			return closeErr
		},
	}
	tf.register(cmd)
	cmd.Flags().Var(&size, "size", "send this many bytes of synthetic data instead of a file (like 1GiB)")
	return cmd
}

// zeroReader yields zeros: synthetic data costs no disk.
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// closeTooLarge is the code recv closes with when the sender's messages do
// not fit its buffers.
const closeTooLarge = 2

// printReceived is recv's summary: what its own side saw.
func printReceived(w io.Writer, n int64, d time.Duration, st sdr.Stats) {
	fmt.Fprintf(w, "received and verified %s in %v: %s goodput; %d data packets, %d duplicates, %d reordered, "+
		"%d rebuilt by erasure decoding, %d fallback NACKs, %d control packets sent\n",
		units.FormatSize(n), d.Round(time.Millisecond), units.FormatRate(float64(n)*8/d.Seconds()),
		st.RecvPackets, st.DupPackets, st.Reordered, st.RecoveredPackets, st.Fallbacks, st.CtrlPackets)
}

// printSent is send's summary: the sender's counters, and per path when
// it sprayed.
func printSent(w io.Writer, n int64, d time.Duration, st sdr.Stats) {
	gbps := float64(n) * 8 / d.Seconds()
	fmt.Fprintf(w, "sent and verified %s in %v: %s goodput; retransmitted %s, parity %s, %d RTOs (%d probes into silence), RTT %v\n",
		units.FormatSize(n), d.Round(time.Millisecond), units.FormatRate(gbps),
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

// transferBar draws a transfer's progress on a terminal, and nothing
// otherwise.
type transferBar struct {
	w     io.Writer
	verb  string
	total int64
	n     int64
	start time.Time
	last  time.Time
	tty   bool
}

func newProgress(w io.Writer, verb string, total int64, start time.Time) *transferBar {
	f, ok := w.(*os.File)
	return &transferBar{w: w, verb: verb, total: total, start: start, tty: ok && term.IsTerminal(int(f.Fd()))}
}

func (p *transferBar) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if p.tty && time.Since(p.last) > 200*time.Millisecond {
		p.last = time.Now()
		p.draw()
	}
	return len(b), nil
}

func (p *transferBar) draw() {
	rate := float64(p.n) * 8 / time.Since(p.start).Seconds()
	if p.total > 0 {
		const width = 30
		done := min(width*p.n/p.total, width)
		fmt.Fprintf(p.w, "\r%s [%s%s] %s / %s  %s ", p.verb, strings.Repeat("#", int(done)),
			strings.Repeat(".", int(width-done)), units.FormatSize(p.n), units.FormatSize(p.total), units.FormatRate(rate))
		return
	}
	fmt.Fprintf(p.w, "\r%s %s  %s ", p.verb, units.FormatSize(p.n), units.FormatRate(rate))
}

func (p *transferBar) done() {
	if p.tty {
		p.draw()
		fmt.Fprintln(p.w)
	}
}
