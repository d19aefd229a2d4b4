package main

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// allSchemes are the demo's default schemes, as their rows name them.
var allSchemes = []string{"sr", "sr-nack", "ec:32,8", "xor:32,8", "gbn"}

// runCLI runs the command line in-process, as main would.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = execute(args, &out, &errb)
	return out.String(), errb.String(), err
}

func TestDemoTable(t *testing.T) {
	out, errOut, err := runCLI(t, "demo", "--size", "1MiB")
	if err != nil {
		t.Fatalf("demo: %v\nstderr: %s", err, errOut)
	}
	if errOut != "" {
		t.Errorf("stderr = %q, want nothing", errOut)
	}
	lines := strings.Split(out, "\n")
	ideal := parseIdeal(t, out)
	for _, s := range allSchemes {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, s+" ") })
		if i < 0 {
			t.Errorf("no row for %s in\n%s", s, out)
			continue
		}
		f := strings.Fields(lines[i])
		if len(f) != 1+len(demoColumns) {
			t.Errorf("row %q has %d fields, want %d", lines[i], len(f), 1+len(demoColumns))
			continue
		}
		done, err1 := time.ParseDuration(f[1])
		recv, err2 := time.ParseDuration(f[2])
		if err1 != nil || err2 != nil {
			t.Errorf("row %q: times do not parse: %v, %v", lines[i], err1, err2)
			continue
		}
		if done < ideal || recv > done {
			t.Errorf("%s: completion %v, receiver %v; want ideal %v <= completion and receiver <= completion", s, done, recv, ideal)
		}
		if !strings.HasSuffix(f[3], "bit/s") {
			t.Errorf("%s: goodput %q is not a rate", s, f[3])
		}
	}
	for _, want := range []string{"1MiB message", "10Gbit/s", "RTT 25ms", "1% loss", "wall time:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// parseIdeal reads the sender's ideal completion time from the table's
// header.
func parseIdeal(t *testing.T, out string) time.Duration {
	t.Helper()
	_, rest, ok := strings.Cut(out, "ideal (no loss, no headers): completion ")
	if !ok {
		t.Fatalf("no ideal line in\n%s", out)
	}
	d, err := time.ParseDuration(strings.Fields(rest)[0])
	if err != nil {
		t.Fatalf("ideal: %v", err)
	}
	return d
}

func TestDemoJSON(t *testing.T) {
	const size = 1 << 20
	out, errOut, err := runCLI(t, "demo", "--size", "1MiB", "--json")
	if err != nil {
		t.Fatalf("demo --json: %v\nstderr: %s", err, errOut)
	}
	var rep demoReport
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("output is not the report's JSON: %v\n%s", err, out)
	}
	if rep.Size != size || rep.Loss != 0.01 || rep.RTT != 0.025 || rep.Rate != 10e9 || rep.Seed != 1 || rep.Burst != 0 {
		t.Errorf("parameters = size %d loss %g rtt %g rate %g seed %d burst %g; want the defaults with 1MiB",
			rep.Size, rep.Loss, rep.RTT, rep.Rate, rep.Seed, rep.Burst)
	}
	// one-way + RTT + size/rate
	if want := 0.0125 + 0.025 + size*8/10e9; math.Abs(rep.Ideal-want) > 1e-9 {
		t.Errorf("ideal = %g s, want %g", rep.Ideal, want)
	}
	if want := 0.025 + size*8/10e9; math.Abs(rep.IdealRecv-want) > 1e-9 {
		t.Errorf("ideal at the receiver = %g s, want %g", rep.IdealRecv, want)
	}
	var names []string
	for _, r := range rep.Results {
		names = append(names, r.Scheme)
		if r.Error != "" {
			t.Errorf("%s failed: %s", r.Scheme, r.Error)
			continue
		}
		if r.Completion < rep.Ideal || r.RecvCompletion < rep.IdealRecv || r.RecvCompletion > r.Completion {
			t.Errorf("%s: completion %g s, receiver %g s; want at least the ideal %g s, %g s and receiver first",
				r.Scheme, r.Completion, r.RecvCompletion, rep.Ideal, rep.IdealRecv)
		}
		if want := size * 8 / r.Completion; math.Abs(r.Goodput-want) > 1e-9*want || r.Goodput > 10e9 {
			t.Errorf("%s: goodput %g bit/s, want %g, at most the link's 10e9", r.Scheme, r.Goodput, want)
		}
		if ec := strings.Contains(r.Scheme, ":"); ec != (r.ParityBytes > 0) || !ec && r.Recovered+r.Fallbacks > 0 {
			t.Errorf("%s: %d parity bytes, %d recovered, %d fallbacks; want parity and recovery for EC only",
				r.Scheme, r.ParityBytes, r.Recovered, r.Fallbacks)
		}
		if r.DataPackets < size/4096 {
			t.Errorf("%s: %d data packets, want at least %d", r.Scheme, r.DataPackets, size/4096)
		}
		if r.LostPackets > 0 && r.RetxBytes+r.Recovered == 0 && r.Scheme != "gbn" {
			// A lost data packet must be repaired somehow; lost
			// control packets need no repair, so this is only a hint.
			t.Logf("%s: %d packets lost, none retransmitted or recovered", r.Scheme, r.LostPackets)
		}
	}
	if !slices.Equal(names, allSchemes) {
		t.Errorf("schemes = %q, want %q", names, allSchemes)
	}
}

// demo --json names its goodput as bench --json does: goodput_bps, a number
// of bits per second, size*8/completion_s.
func TestDemoJSONGoodputBits(t *testing.T) {
	const size = 256 << 10
	out, errOut, err := runCLI(t, "demo", "--size", "256KiB", "--schemes", "sr-nack,ec:32,8", "--json")
	if err != nil {
		t.Fatalf("demo --json: %v\nstderr: %s", err, errOut)
	}
	var rep struct {
		Size    int64            `json:"size_bytes"`
		Results []map[string]any `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if rep.Size != size || len(rep.Results) != 2 {
		t.Fatalf("size %d, %d results; want %d and 2:\n%s", rep.Size, len(rep.Results), size, out)
	}
	for _, r := range rep.Results {
		if _, ok := r["goodput_gbps"]; ok {
			t.Errorf("%v: the result still has goodput_gbps", r["scheme"])
		}
		goodput, ok := r["goodput_bps"].(float64)
		if !ok {
			t.Errorf("%v: goodput_bps = %#v, want a number", r["scheme"], r["goodput_bps"])
			continue
		}
		completion, ok := r["completion_s"].(float64)
		if !ok || completion <= 0 {
			t.Errorf("%v: completion_s = %#v, want a positive number", r["scheme"], r["completion_s"])
			continue
		}
		if want := float64(size) * 8 / completion; math.Abs(goodput-want) > 1e-9*want {
			t.Errorf("%v: goodput_bps = %g, want size*8/completion_s = %g", r["scheme"], goodput, want)
		}
		// Bits, not Gbit: a 256 KiB message over a 25 ms round trip goes
		// at tens of Mbit/s, millions in bits, a few hundredths in Gbit.
		if goodput < 1e6 || goodput > 10e9 {
			t.Errorf("%v: goodput_bps = %g, want bits per second, at most the link's 10e9", r["scheme"], goodput)
		}
	}
}

// The simulation is deterministic: the same flags give the same results,
// bar the wall times.
func TestDemoDeterministic(t *testing.T) {
	var runs [2]demoReport
	for i := range runs {
		out, _, err := runCLI(t, "demo", "--size", "512KiB", "--schemes", "sr,ec:16,4", "--loss", "2%", "--burst", "3", "--seed", "7", "--json")
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(out), &runs[i]); err != nil {
			t.Fatal(err)
		}
		runs[i].Wall = 0
		for j := range runs[i].Results {
			runs[i].Results[j].Wall = 0
		}
	}
	a, _ := json.Marshal(runs[0])
	b, _ := json.Marshal(runs[1])
	if !bytes.Equal(a, b) {
		t.Errorf("two runs differ:\n%s\n%s", a, b)
	}
	if got := []string{runs[0].Results[0].Scheme, runs[0].Results[1].Scheme}; !slices.Equal(got, []string{"sr", "ec:16,4"}) {
		t.Errorf("schemes = %q, want sr, ec:16,4", got)
	}
	if runs[0].Loss != 0.02 || runs[0].Burst != 3 || runs[0].Seed != 7 {
		t.Errorf("loss %g burst %g seed %d, want 0.02, 3, 7", runs[0].Loss, runs[0].Burst, runs[0].Seed)
	}
}

func TestDemoOtherUnits(t *testing.T) {
	out, errOut, err := runCLI(t, "demo", "--size", "1e5", "--rate", "1Gbit/s", "--rtt", "100us", "--loss", "0", "--schemes", "none,gbn", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	var rep demoReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Size != 1e5 || rep.Rate != 1e9 || rep.RTT != 100e-6 || rep.Loss != 0 {
		t.Errorf("size %d rate %g rtt %g loss %g; want 1e5, 1e9, 100e-6, 0", rep.Size, rep.Rate, rep.RTT, rep.Loss)
	}
	for _, r := range rep.Results {
		if r.Error != "" || r.LostPackets != 0 || r.Completion < rep.Ideal*0.8 {
			t.Errorf("%s on a lossless link: error %q, %d lost, completion %g s (ideal %g s)",
				r.Scheme, r.Error, r.LostPackets, r.Completion, rep.Ideal)
		}
	}
}

func TestDemoBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string // the whole of stderr's first line
	}{
		{[]string{"--loss", "2"}, "invalid --loss 2: want a probability in [0, 1)"},
		{[]string{"--loss", "1"}, "invalid --loss 1: want a probability in [0, 1)"},
		{[]string{"--loss=-0.1"}, "invalid --loss -0.1: want a probability in [0, 1)"},
		{[]string{"--loss", "lots"}, "invalid --loss lots: want a probability in [0, 1)"},
		{[]string{"--loss", "100%"}, "invalid --loss 100%: want a probability in [0, 1)"},
		{[]string{"--size", "0"}, "invalid --size 0: want a size from 1B to 4GiB, like 64MiB, 4KiB or 1e6"},
		{[]string{"--size", "5GiB"}, "invalid --size 5GiB: want a size from 1B to 4GiB, like 64MiB, 4KiB or 1e6"},
		{[]string{"--size", "4GiB1"}, `invalid --size 4GiB1: size "4GiB1": bad number "4GiB1"; want a size from 1B to 4GiB, like 64MiB, 4KiB or 1e6`},
		{[]string{"--size", "1.5"}, `invalid --size 1.5: size "1.5" is not a whole number of bytes; want a size from 1B to 4GiB, like 64MiB, 4KiB or 1e6`},
		{[]string{"--size="}, `invalid --size "": size "" has no number; want a size from 1B to 4GiB, like 64MiB, 4KiB or 1e6`},
		{[]string{"--rate", "0"}, "invalid --rate 0: want a rate > 0 in bits/s, like 400Gbps, 10Gbit/s or 1e9"},
		{[]string{"--rate", "-1Gbps"}, `invalid --rate -1Gbps: rate "-1Gbps": negative; want a rate > 0 in bits/s, like 400Gbps, 10Gbit/s or 1e9`},
		{[]string{"--rate", "10GB"}, `invalid --rate 10GB: rate "10GB": unknown unit or bad number; want a rate > 0 in bits/s, like 400Gbps, 10Gbit/s or 1e9`},
		{[]string{"--rate", "1bps"}, "invalid --rate 1bps: sending 64MiB at 1bit/s takes longer than 1h0m0s; want a faster --rate or a smaller --size"},
		{[]string{"--rtt", "25"}, `invalid --rtt 25: duration "25" has no unit (ns, us, ms, s, m, h); want a duration from 0 to 1m0s, like 25ms or 100us`},
		{[]string{"--rtt", "2m"}, "invalid --rtt 2m: want a duration from 0 to 1m0s, like 25ms or 100us"},
		{[]string{"--schemes", "sr,foo"}, `invalid --schemes sr,foo: unknown scheme "foo": want none, gbn, sr, sr-nack, ec:K,M, xor:K,M or csaud`},
		{[]string{"--schemes", "sr,"}, "invalid --schemes sr,: empty scheme name; want a comma list of none, gbn, sr, sr-nack, ec:K,M, xor:K,M and csaud"},
		{[]string{"--schemes", "none"}, "invalid --schemes none: scheme none repairs no loss, so it never completes with --loss > 0"},
		{[]string{"--seed", "-1"}, "invalid --seed -1: want an unsigned 64-bit integer"},
		{[]string{"--burst", "0.5"}, "invalid --burst 0.5: want 0 (independent losses) or a mean burst length >= 1 packet"},
		{[]string{"--burst", "1", "--loss", "0.6"}, "invalid --burst 1: a mean burst of 1 packets cannot give --loss 0.6; want loss <= burst/(burst+1) = 0.5"},
	}
	for _, tt := range tests {
		out, errOut, err := runCLI(t, append([]string{"demo"}, tt.args...)...)
		if err == nil {
			t.Errorf("demo %q: no error", tt.args)
			continue
		}
		if want := "sdrnet: " + tt.want + "\n"; errOut != want {
			t.Errorf("demo %q: stderr\n%q\nwant\n%q", tt.args, errOut, want)
		}
		if out != "" {
			t.Errorf("demo %q: stdout %q, want nothing", tt.args, out)
		}
	}
}

// Mistakes in the command line itself are followed by the usage.
func TestDemoUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--frob"},
		{"demo", "--size"},
		{"demo", "extra"},
	} {
		_, errOut, err := runCLI(t, args...)
		if err == nil {
			t.Errorf("%q: no error", args)
			continue
		}
		if !strings.HasPrefix(errOut, "sdrnet: ") || !strings.Contains(errOut, "Usage:\n  sdrnet demo [flags]") {
			t.Errorf("%q: stderr %q, want the error and the usage", args, errOut)
		}
	}
}

func TestSplitSchemes(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"sr", []string{"sr"}},
		{"sr,sr-nack,ec:32,8,xor:32,8,gbn", []string{"sr", "sr-nack", "ec:32,8", "xor:32,8", "gbn"}},
		{"ec,xor", []string{"ec", "xor"}},
		{" sr , ec:16,4 ", []string{"sr", "ec:16,4"}},
		{"ec:16", []string{"ec:16"}},  // Parse reports the missing M
		{"sr,8", []string{"sr", "8"}}, // a stray number is not glued to sr
		{"ec:1,2,3", []string{"ec:1,2", "3"}},
		{"sr,", []string{"sr", ""}},
	}
	for _, tt := range tests {
		if got := splitSchemes(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("splitSchemes(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestDemoFailedRow(t *testing.T) {
	rep := &demoReport{schemeWidth: len("scheme")}
	var b bytes.Buffer
	rep.printRow(&b, &schemeResult{Scheme: "sr", Error: "coretest: both sides idle before the goal at t=1s", wall: 1500 * time.Millisecond})
	if want := "sr     FAILED after 1.5s wall: coretest: both sides idle before the goal at t=1s\n"; b.String() != want {
		t.Errorf("row = %q, want %q", b.String(), want)
	}
}
