package main

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestBenchJSON(t *testing.T) {
	var out, errb bytes.Buffer
	if err := execute([]string{"bench", "--size", "16MiB", "--msg", "1MiB", "--paths", "4", "--scheme", "ec:32,8", "--json"}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var r benchResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if r.Bytes != 16<<20 || r.Messages != 16 || r.GoodputBps <= 0 || r.Completion.P50 <= 0 ||
		r.ParityBytes == 0 || len(r.PathStats) != 4 {
		t.Fatalf("bench result: %+v", r)
	}
	// iperf3's -J layout, read the way a tool that reads iperf3 would.
	var j struct {
		Start struct {
			TestStart struct {
				NumStreams int   `json:"num_streams"`
				Bytes      int64 `json:"bytes"`
			} `json:"test_start"`
		} `json:"start"`
		Intervals []struct {
			Sum struct {
				Bytes         int64   `json:"bytes"`
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum"`
		} `json:"intervals"`
		End struct {
			SumSent     iperfSum `json:"sum_sent"`
			SumReceived iperfSum `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	var inIntervals int64
	for _, iv := range j.Intervals {
		inIntervals += iv.Sum.Bytes
	}
	if j.Start.TestStart.NumStreams != 1 || j.Start.TestStart.Bytes != 16<<20 || len(j.Intervals) == 0 ||
		inIntervals != 16<<20 || j.End.SumSent.Bytes != 16<<20 || j.End.SumSent.BitsPerSecond != r.GoodputBps ||
		j.End.SumReceived.Bytes != 16<<20 {
		t.Fatalf("iperf3 layout: %+v\n%s", j, out.String())
	}
}

// TestBenchCompletions: --completions writes a row per message, in the
// order posted, whose sizes add up to --size and whose completion times
// give the percentiles bench reports.
func TestBenchCompletions(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.csv")
	var out, errb bytes.Buffer
	// The last message is short: 10 MiB in 3 MiB messages.
	if err := execute([]string{"bench", "--size", "10MiB", "--msg", "3MiB", "--auth", "none", "--json", "--completions", file}, &out, &errb); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
	var r benchResult
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(data)), "\n")
	if rows[0] != "message,posted_s,completion_s,bytes" || len(rows) != 1+r.Messages || r.Messages != 4 {
		t.Fatalf("%d messages, file:\n%s", r.Messages, data)
	}
	var total int64
	var took []float64
	for i, row := range rows[1:] {
		var n int
		var posted, completion float64
		var size int64
		if _, err := fmt.Sscanf(row, "%d,%g,%g,%d", &n, &posted, &completion, &size); err != nil || n != i {
			t.Fatalf("row %q: %v", row, err)
		}
		if posted < 0 || completion <= 0 || posted+completion > r.Seconds+1e-3 {
			t.Fatalf("row %q outside the run's %gs", row, r.Seconds)
		}
		total += size
		took = append(took, completion)
	}
	slices.Sort(took)
	if total != 10<<20 || took[len(took)/2] != roundMicro(r.Completion.P50) || took[len(took)-1] != roundMicro(r.Completion.Max) {
		t.Fatalf("bytes %d, completions %v, reported p50 %g max %g", total, took, r.Completion.P50, r.Completion.Max)
	}
}

// roundMicro rounds s to the microsecond, as the CSV writes times.
func roundMicro(s float64) float64 { return math.Round(s*1e6) / 1e6 }

// TestBenchIntervals: bench prints a line per interval, then its summary.
func TestBenchIntervals(t *testing.T) {
	var out bytes.Buffer
	if err := execute([]string{"bench", "--size", "64MiB", "--msg", "1MiB", "--rate", "1Gbps", "-i", "100ms"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var intervals int
	for _, l := range lines {
		if strings.HasPrefix(l, "[") && strings.Contains(l, " s]") && strings.Contains(l, "messages") {
			intervals++
		}
	}
	// 64 MiB at 1 Gbit/s is over half a second: several 100 ms lines,
	// each with the controller's window (nscc is the default).
	if intervals < 3 || !strings.Contains(out.String(), "goodput") || strings.Count(out.String(), "cwnd ") != intervals {
		t.Errorf("%d interval lines:\n%s", intervals, out.String())
	}

	// In JSON each interval carries the controller's state, as iperf3's
	// carry TCP's snd_cwnd.
	out.Reset()
	if err := execute([]string{"bench", "--size", "64MiB", "--msg", "1MiB", "--rate", "1Gbps", "-i", "100ms", "--json"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Intervals []struct{ Sum iperfSum } `json:"intervals"`
		BusyS     float64                  `json:"busy_s"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil || len(r.Intervals) < 3 {
		t.Fatalf("%d intervals (%v):\n%s", len(r.Intervals), err, out.String())
	}
	sending := 0
	for _, iv := range r.Intervals {
		if iv.Sum.SndCwnd <= 0 || iv.Sum.CCRate <= 0 {
			t.Errorf("interval %.2f-%.2f s: snd_cwnd %d, cc_rate_bps %g; want both set", iv.Sum.Start, iv.Sum.End, iv.Sum.SndCwnd, iv.Sum.CCRate)
		}
		if iv.Sum.SentBps > 0 && iv.Sum.BusyS > 0 {
			sending++
		}
	}
	// And the sender's rate on the wire, and where its time went.
	if sending < 3 || r.BusyS <= 0 {
		t.Errorf("%d intervals with sent_bps and busy_s, busy_s %g in all; want at least 3 and more than 0", sending, r.BusyS)
	}
}

// TestSendRecvFile moves a file from `sdrnet send` to `sdrnet recv`, both
// in this process, and compares it.
func TestSendRecvFile(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in"), filepath.Join(dir, "out")
	data := make([]byte, 5<<20+77)
	_, _ = rand.Read(data)
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	const addr = "127.0.0.1:47931"
	recvErr := make(chan error, 1)
	var recvLog, recvOut lockedBuffer
	go func() {
		recvErr <- execute([]string{"recv", "--listen", addr, "--out", out, "--msg", "1MiB"}, &recvOut, &recvLog)
	}()
	// Send once recv listens: a sender that tried earlier and gave up
	// could leave a HELLO behind that recv would take for its peer.
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(recvLog.String(), "listening"); {
		if time.Now().After(deadline) {
			t.Fatalf("recv never listened:\n%s", recvLog.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var sendLog, sendOut bytes.Buffer
	sendErr := execute([]string{"send", addr, in, "--msg", "1MiB", "--paths", "3", "--handshake-timeout", "1s"},
		&sendOut, &sendLog)
	if sendErr != nil {
		t.Fatalf("send: %v\n%s", sendErr, sendLog.String())
	}
	if err := <-recvErr; err != nil {
		t.Fatalf("recv: %v\n%s", err, recvLog.String())
	}
	got, err := os.ReadFile(out)
	if err != nil || sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("file differs (%d bytes, %v)", len(got), err)
	}
	// Results on stdout, each end its own side's; diagnostics on stderr.
	if !strings.Contains(sendOut.String(), "sent and verified 5MiB") || !strings.Contains(sendOut.String(), "RTOs") ||
		!strings.Contains(recvOut.String(), "received and verified 5MiB") || !strings.Contains(recvOut.String(), "data packets") ||
		strings.Contains(recvOut.String(), "RTOs") || !strings.Contains(recvLog.String(), "listening") {
		t.Fatalf("stdout:\n%s\n%s\nstderr:\n%s\n%s", sendOut.String(), recvOut.String(), sendLog.String(), recvLog.String())
	}
}

// TestVersion: --version names the build.
func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := execute([]string{"--version"}, &out, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, "sdrnet ") || !strings.Contains(got, runtime.Version()) {
		t.Errorf("--version printed %q: want \"sdrnet VERSION ..., %s\"", got, runtime.Version())
	}
}

func TestTransportFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--paths", "0"}, "invalid --paths 0: want 1..128"},
		{[]string{"bench", "--scheme", "tcp"}, "invalid --scheme tcp"},
		{[]string{"bench", "--select", "best"}, "invalid --select best"},
		{[]string{"bench", "--mtu", "10"}, "invalid --mtu 10"},
		{[]string{"bench", "--mtu", "4096", "--chunk", "5000"}, "invalid --chunk 5000: want a power-of-two multiple of --mtu 4096"},
		{[]string{"bench", "--chunk", "4KiB"}, "invalid --chunk 4KiB: want a power of two of at least 8192 under --mtu auto"},
		{[]string{"bench", "--mtu", "fast"}, "or auto"},
		{[]string{"bench", "--rate", "fast"}, "invalid --rate fast"},
		{[]string{"bench", "--target-delay", "5us"}, "invalid --target-delay 5us: want 10µs..1s"},
		{[]string{"bench", "--target-delay", "2s"}, "invalid --target-delay 2s: want a duration from 0 to 1s"},
		{[]string{"bench", "--target-delay", "2ms"}, "invalid --target-delay 2ms: only --cc nscc steers to a target delay (--cc is bbr)"},
		{[]string{"send", "127.0.0.1:1", "--size", "1MiB", "--window", "4KiB"}, "invalid --window 4KiB: want at least one chunk (--chunk auto, 64KiB)"},
		{[]string{"recv", "--idle-timeout", "500ms"}, "invalid --idle-timeout 500ms: want 1s..1h0m0s"},
		{[]string{"send", "127.0.0.1:1"}, "nothing to send"},
		{[]string{"send", "nowhere", "--size", "1KiB"}, "want IP:port"},
		{[]string{"linkem", "--listen", "127.0.0.1:0", "--target", "127.0.0.1:9", "--spec", "delay=x"}, "invalid --spec"},
	} {
		var out, errb bytes.Buffer
		err := execute(tt.args, &out, &errb)
		if err == nil || !strings.Contains(errb.String(), tt.want) {
			t.Errorf("%v: %v, stderr %q; want %q", tt.args, err, errb.String(), tt.want)
		}
	}
}

// lockedBuffer is a bytes.Buffer one goroutine writes while another reads.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
