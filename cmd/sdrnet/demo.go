package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/units"
)

// Demo defaults: a 64 MiB message over a 10 Gbit/s long-haul link with a
// 25 ms round trip and 1% loss, with each of the paper's schemes.
const (
	defaultSize    = "64MiB"
	defaultLoss    = "0.01"
	defaultRTT     = "25ms"
	defaultRate    = "10Gbps"
	defaultSchemes = "sr,sr-nack,ec:32,8,xor:32,8,gbn"
)

// Limits of the demo's flags.
const (
	maxSize = 4 << 30
	maxRTT  = time.Minute
	// maxSerialization bounds size/rate: the demo simulates one message,
	// not a day of traffic.
	maxSerialization = time.Hour
)

// demoOptions are the demo's flags.
type demoOptions struct {
	size    sizeFlag
	loss    probFlag
	rtt     durationFlag
	rate    rateFlag
	schemes schemesFlag
	seed    seedFlag
	burst   burstFlag
	json    bool
}

func newDemoCmd() *cobra.Command {
	o := &demoOptions{
		size: sizeFlag{min: 1, max: maxSize},
		rtt:  durationFlag{max: maxRTT},
	}
	mustSet(&o.size, defaultSize)
	mustSet(&o.loss, defaultLoss)
	mustSet(&o.rtt, defaultRTT)
	mustSet(&o.rate, defaultRate)
	mustSet(&o.schemes, defaultSchemes)
	mustSet(&o.seed, "1")
	mustSet(&o.burst, "0")
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Move one message over a simulated lossy link with each reliability scheme",
		Long: `demo moves one message from one protocol endpoint to another over an
in-memory link with a fixed rate, delay and random loss, in simulated time,
once per reliability scheme, and prints how long each took against the
ideal. Every byte is checked on arrival (SHA-256). The run is deterministic:
the same flags give the same simulated results.

Sizes are bytes (64MiB, 1GiB, 4KiB, 1e6), rates bits per second (400Gbps,
10Gbit/s, 1e9), durations like 25ms or 100us. Schemes: sr (selective repeat
with timeouts), sr-nack, ec:K,M (Reed-Solomon), xor:K,M, gbn (go-back-N),
csaud (CSA-UD), and none on a lossless link.`,
		Example: `  sdrnet demo
  sdrnet demo --size 1GiB --rate 100Gbps --rtt 50ms --loss 0.001
  sdrnet demo --schemes sr-nack,ec:16,4 --loss 0.05 --burst 8 --json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Errorf("demo takes no arguments, got %q", args[0])}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.OutOrStdout(), o)
		},
	}
	f := cmd.Flags()
	f.Var(&o.size, "size", "message size, 1B to 4GiB")
	f.Var(&o.loss, "loss", "packet loss probability in [0, 1) on each direction (0.01 or 1%)")
	f.Var(&o.rtt, "rtt", "round-trip time; each direction delays packets by half")
	f.Var(&o.rate, "rate", "link rate in bits/s, each direction")
	f.Var(&o.schemes, "schemes", "comma list of reliability schemes to run")
	f.Var(&o.seed, "seed", "seed of the loss pattern and the message bytes")
	f.Var(&o.burst, "burst", "mean loss-burst length in packets (Gilbert-Elliott); 0: independent losses")
	f.BoolVar(&o.json, "json", false, "print the results as JSON")
	return cmd
}

// demoReport is the demo's result, and its JSON output. Times are seconds.
type demoReport struct {
	Size             int64          `json:"size_bytes"`
	Loss             float64        `json:"loss"`
	Burst            float64        `json:"burst"`
	RTT              float64        `json:"rtt_s"`
	Rate             float64        `json:"rate_bps"`
	Seed             uint64         `json:"seed"`
	Ideal            float64        `json:"ideal_completion_s"`
	IdealRecv        float64        `json:"ideal_receiver_completion_s"`
	Results          []schemeResult `json:"results"`
	Wall             float64        `json:"wall_s"`
	rtt, oneWay      monotime.Duration
	ideal, idealRecv monotime.Duration
	serialize        monotime.Duration // size/rate
	schemeWidth      int               // of the table's first column
}

// schemeResult is one scheme's transfer.
type schemeResult struct {
	Scheme         string  `json:"scheme"`
	Completion     float64 `json:"completion_s"`          // Send to the sender's done event
	RecvCompletion float64 `json:"receiver_completion_s"` // Send to the receiver's done event
	Goodput        float64 `json:"goodput_bps"`           // size*8/completion, bits per second (as bench's goodput_bps)
	RetxBytes      uint64  `json:"retransmitted_bytes"`
	ParityBytes    uint64  `json:"parity_bytes"`
	Recovered      uint64  `json:"ec_recovered_packets"`
	RTOs           uint64  `json:"rtos"`
	Fallbacks      uint64  `json:"fallbacks"`
	DataPackets    uint64  `json:"data_packets"` // first transmissions
	LostPackets    uint64  `json:"lost_packets"` // dropped by the link, both directions
	Wall           float64 `json:"wall_s"`
	Error          string  `json:"error,omitempty"`

	completion, recvCompletion monotime.Duration
	wall                       time.Duration
}

// check rejects flag combinations that are each valid but cannot run.
func (o *demoOptions) check() error {
	if g := o.burst.n; g > 0 && o.loss.p > g/(g+1) {
		// Bursty's good-to-bad probability loss/burst/(1-loss) must not
		// exceed 1.
		return invalidFlag("burst", o.burst.text, fmt.Errorf(
			"a mean burst of %g packets cannot give --loss %g; want loss <= burst/(burst+1) = %.4g", g, o.loss.p, g/(g+1)))
	}
	for _, s := range o.schemes.schemes {
		if s.Kind() == reliability.KindNone && o.loss.p > 0 {
			return invalidFlag("schemes", o.schemes.text, errors.New(
				"scheme none repairs no loss, so it never completes with --loss > 0"))
		}
	}
	if secs := float64(o.size.n) * 8 / o.rate.bps; secs > maxSerialization.Seconds() {
		return invalidFlag("rate", o.rate.text, fmt.Errorf(
			"sending %s at %s takes longer than %v; want a faster --rate or a smaller --size",
			units.FormatSize(o.size.n), units.FormatRate(o.rate.bps), maxSerialization))
	}
	return nil
}

func runDemo(w io.Writer, o *demoOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	start := time.Now()
	rtt := monotime.FromStd(o.rtt.d)
	rep := &demoReport{
		Size: o.size.n, Loss: o.loss.p, Burst: o.burst.n, RTT: o.rtt.d.Seconds(),
		Rate: o.rate.bps, Seed: o.seed.n,
		rtt: rtt, oneWay: rtt / 2,
		serialize: monotime.TransmitTime(int(o.size.n), o.rate.bps),
	}
	// The ideal completion time, with no loss and no header bytes:
	// Transfer posts the receive before the send, so the receiver's CTS
	// (clear-to-send) leaves at once and reaches the sender one one-way
	// delay later; the sender then streams size/rate, and its last packet
	// lands one one-way delay after that. The receiver is thus done after
	// the CTS round trip plus size/rate, and the sender, which learns it
	// from the final ACK, one more one-way delay later:
	//
	//	receiver: RTT + size/rate
	//	sender:   one-way + RTT + size/rate
	rep.idealRecv = rtt + rep.serialize
	rep.ideal = rep.oneWay + rep.idealRecv
	rep.Ideal, rep.IdealRecv = rep.ideal.Seconds(), rep.idealRecv.Seconds()
	rep.schemeWidth = len("scheme")
	for _, s := range o.schemes.schemes {
		rep.schemeWidth = max(rep.schemeWidth, len(reliability.Name(s)))
	}

	msg := make([]byte, o.size.n)
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], o.seed.n)
	rand.NewChaCha8(key).Read(msg)

	if !o.json {
		rep.printHeader(w)
	}
	var failed []string
	for _, s := range o.schemes.schemes {
		r := runScheme(o, s, msg, rep.ideal)
		rep.Results = append(rep.Results, r)
		if r.Error != "" {
			failed = append(failed, r.Scheme+": "+r.Error)
		}
		if !o.json {
			rep.printRow(w, &r)
		}
	}
	wall := time.Since(start)
	rep.Wall = wall.Seconds()
	if o.json {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		rep.printFooter(w, wall)
	}
	switch len(failed) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("transfer failed: %s", failed[0])
	}
	return fmt.Errorf("%d of %d transfers failed: %s", len(failed), len(rep.Results), strings.Join(failed, "; "))
}

// runScheme moves msg once over a fresh pair with scheme s.
func runScheme(o *demoOptions, s reliability.Scheme, msg []byte, ideal monotime.Duration) schemeResult {
	rtt := monotime.FromStd(o.rtt.d)
	link := coretest.LinkConfig{Delay: rtt / 2, Rate: o.rate.bps, Loss: o.loss.p}
	if o.burst.n > 0 {
		link.Burst = coretest.Bursty(o.loss.p, o.burst.n)
	}
	conn := core.Config{Scheme: s, InitialRTT: rtt, Rate: o.rate.bps}
	r := schemeResult{Scheme: reliability.Name(s)}
	p, err := coretest.NewPair(coretest.Config{Seed: o.seed.n, Link: link, A: conn, B: conn})
	if err != nil {
		r.Error = err.Error()
		return r
	}
	start := time.Now()
	// Far more simulated time than any scheme needs at the flags' limits,
	// so only a stuck protocol runs out of it.
	res, err := p.Transfer(msg, len(msg), s, coretest.Limits{Time: 1000*monotime.Second + 20*ideal})
	r.wall = time.Since(start)
	r.Wall = r.wall.Seconds()
	ab, ba := p.LinkStats()
	r.LostPackets = ab.Lost + ba.Lost
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.completion, r.recvCompletion = res.Duration, res.RecvAt
	r.Completion, r.RecvCompletion = res.Duration.Seconds(), res.RecvAt.Seconds()
	if res.Duration > 0 {
		r.Goodput = float64(len(msg)) * 8 / res.Duration.Seconds()
	}
	r.RetxBytes = res.A.RetxBytes
	r.ParityBytes = res.A.ParityBytes
	r.Recovered = res.B.RecoveredPackets
	r.RTOs = res.A.RTOs
	r.Fallbacks = res.B.Fallbacks
	r.DataPackets = res.A.DataPackets
	return r
}

// The table's columns after the scheme: header and width.
var demoColumns = []struct {
	name  string
	width int
}{
	{"completion", 11}, {"recv done", 11}, {"goodput", 13}, {"retx", 10}, {"parity", 10},
	{"ec recovered", 13}, {"RTOs", 5}, {"fallbacks", 10}, {"wall", 9},
}

func (rep *demoReport) printHeader(w io.Writer) {
	lossText := strconv.FormatFloat(rep.Loss*100, 'g', -1, 64) + "% loss, independent (Bernoulli)"
	if rep.Burst > 0 {
		lossText = fmt.Sprintf("%s%% loss in bursts of %g packets on average (Gilbert-Elliott)",
			strconv.FormatFloat(rep.Loss*100, 'g', -1, 64), rep.Burst)
	}
	fmt.Fprintf(w, "sdrnet demo: one %s message over a simulated %s link, RTT %v, %s, seed %d\n",
		units.FormatSize(rep.Size), units.FormatRate(rep.Rate), fmtDur(rep.rtt), lossText, rep.Seed)
	fmt.Fprintf(w, "ideal (no loss, no headers): completion %v = one-way %v + CTS round trip %v + size/rate %v; receiver done at %v\n\n",
		fmtDur(rep.ideal), fmtDur(rep.oneWay), fmtDur(rep.rtt), fmtDur(rep.serialize), fmtDur(rep.idealRecv))
	fmt.Fprintf(w, "%-*s", rep.schemeWidth, "scheme")
	for _, c := range demoColumns {
		fmt.Fprintf(w, " %*s", c.width, c.name)
	}
	fmt.Fprintln(w)
}

func (rep *demoReport) printRow(w io.Writer, r *schemeResult) {
	fmt.Fprintf(w, "%-*s", rep.schemeWidth, r.Scheme)
	if r.Error != "" {
		fmt.Fprintf(w, " FAILED after %v wall: %s\n", r.wall.Round(time.Millisecond), r.Error)
		return
	}
	cells := []string{
		fmtDur(r.completion),
		fmtDur(r.recvCompletion),
		units.FormatRate(r.Goodput),
		units.FormatSize(int64(r.RetxBytes)),
		units.FormatSize(int64(r.ParityBytes)),
		strconv.FormatUint(r.Recovered, 10),
		strconv.FormatUint(r.RTOs, 10),
		strconv.FormatUint(r.Fallbacks, 10),
		r.wall.Round(time.Millisecond).String(),
	}
	for i, c := range demoColumns {
		fmt.Fprintf(w, " %*s", c.width, cells[i])
	}
	fmt.Fprintln(w)
}

func (rep *demoReport) printFooter(w io.Writer, wall time.Duration) {
	fmt.Fprintf(w, `
completion: simulated time from Send to the sender's done event (recv done: the receiver's);
goodput = size*8/completion; retx, parity: bytes the sender retransmitted and sent as parity;
ec recovered: packets rebuilt by erasure decoding; RTOs: sender timeouts; fallbacks: EC
fallback NACKs; wall: real time the simulation took.
wall time: %v
`, wall.Round(time.Millisecond))
}

// fmtDur rounds d for a table: to the nanosecond below 1 ms, the
// microsecond below 1 s, the millisecond from there.
func fmtDur(d monotime.Duration) string {
	t := d.Std()
	switch {
	case t >= time.Second:
		t = t.Round(time.Millisecond)
	case t >= time.Millisecond:
		t = t.Round(time.Microsecond)
	}
	return t.String()
}
