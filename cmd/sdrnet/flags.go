package main

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/units"
)

// Flag values. Each is a pflag.Value whose Set checks the value and, when it
// is bad, returns what the flag wants; flagError adds the flag's name and
// the value, so every bad flag reads "invalid --NAME VALUE: want ...".

// invalidFlag formats the error of a bad flag value, quoting the value
// only when it would otherwise be unreadable.
func invalidFlag(name, value string, want error) error {
	if value == "" || strings.ContainsAny(value, " \t\n") {
		value = strconv.Quote(value)
	}
	return fmt.Errorf("invalid --%s %s: %w", name, value, want)
}

// usageError is a command-line error after which the usage helps: an
// unknown flag, a missing value, a stray argument.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// flagError is the root's FlagErrorFunc: a bad value becomes one line
// naming the flag; anything else also gets the usage.
func flagError(_ *cobra.Command, err error) error {
	if inv, ok := errors.AsType[*pflag.InvalidValueError](err); ok {
		return invalidFlag(inv.GetFlag().Name, inv.GetValue(), inv.Unwrap())
	}
	return usageError{err}
}

// sizeFlag is a size in bytes within [min, max].
type sizeFlag struct {
	n        int64
	text     string
	min, max int64
	auto     bool // "auto" is a value too, n zero
}

func (f *sizeFlag) String() string { return f.text }
func (f *sizeFlag) Type() string   { return "size" }
func (f *sizeFlag) Set(s string) error {
	want := fmt.Sprintf("want a size from %s to %s, like 64MiB, 4KiB or 1e6", units.FormatSize(f.min), units.FormatSize(f.max))
	if f.auto {
		if s == "auto" {
			f.n, f.text = 0, s
			return nil
		}
		want += ", or auto"
	}
	n, err := units.ParseSize(s)
	if err != nil {
		return fmt.Errorf("%v; %s", err, want)
	}
	if n < f.min || n > f.max {
		return errors.New(want)
	}
	f.n, f.text = n, s
	return nil
}

// probFlag is a probability in [0, 1): a number like 0.01, or a percentage
// like 1%.
type probFlag struct {
	p    float64
	text string
}

func (f *probFlag) String() string { return f.text }
func (f *probFlag) Type() string   { return "prob" }
func (f *probFlag) Set(s string) error {
	t := strings.TrimSpace(s)
	scale := 1.0
	if pct, ok := strings.CutSuffix(t, "%"); ok {
		t, scale = strings.TrimSpace(pct), 0.01
	}
	p, err := strconv.ParseFloat(t, 64)
	p *= scale
	if err != nil || math.IsNaN(p) || p < 0 || p >= 1 {
		return errors.New("want a probability in [0, 1)")
	}
	f.p, f.text = p, s
	return nil
}

// durationFlag is a duration within [0, max].
type durationFlag struct {
	d    time.Duration
	text string
	max  time.Duration
}

func (f *durationFlag) String() string { return f.text }
func (f *durationFlag) Type() string   { return "duration" }
func (f *durationFlag) Set(s string) error {
	want := fmt.Sprintf("want a duration from 0 to %v, like 25ms or 100us", f.max)
	d, err := units.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%v; %s", err, want)
	}
	if d > f.max {
		return errors.New(want)
	}
	f.d, f.text = d, s
	return nil
}

// rateFlag is a rate in bits per second, greater than zero.
type rateFlag struct {
	bps  float64
	text string
}

func (f *rateFlag) String() string { return f.text }
func (f *rateFlag) Type() string   { return "rate" }
func (f *rateFlag) Set(s string) error {
	const want = "want a rate > 0 in bits/s, like 400Gbps, 10Gbit/s or 1e9"
	bps, err := units.ParseRate(s)
	if err != nil {
		return fmt.Errorf("%v; %s", err, want)
	}
	if bps <= 0 {
		return errors.New(want)
	}
	f.bps, f.text = bps, s
	return nil
}

// burstFlag is a mean loss-burst length in packets: 0 for independent
// (Bernoulli) losses, else at least 1.
type burstFlag struct {
	n    float64
	text string
}

func (f *burstFlag) String() string { return f.text }
func (f *burstFlag) Type() string   { return "packets" }
func (f *burstFlag) Set(s string) error {
	n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) || n != 0 && n < 1 {
		return errors.New("want 0 (independent losses) or a mean burst length >= 1 packet")
	}
	f.n, f.text = n, s
	return nil
}

// seedFlag is an unsigned 64-bit random seed.
type seedFlag struct {
	n    uint64
	text string
}

func (f *seedFlag) String() string { return f.text }
func (f *seedFlag) Type() string   { return "uint64" }
func (f *seedFlag) Set(s string) error {
	n, err := strconv.ParseUint(strings.TrimSpace(s), 0, 64)
	if err != nil {
		return errors.New("want an unsigned 64-bit integer")
	}
	f.n, f.text = n, s
	return nil
}

// schemesFlag is a comma list of reliability schemes as reliability.Parse
// reads them. The comma inside ec:K,M and xor:K,M belongs to the scheme.
type schemesFlag struct {
	schemes []reliability.Scheme
	text    string
}

func (f *schemesFlag) String() string { return f.text }
func (f *schemesFlag) Type() string   { return "list" }
func (f *schemesFlag) Set(s string) error {
	var list []reliability.Scheme
	for _, name := range splitSchemes(s) {
		if name == "" {
			return errors.New("empty scheme name; want a comma list of none, gbn, sr, sr-nack, ec:K,M, xor:K,M and csaud")
		}
		sc, err := reliability.Parse(name)
		if err != nil {
			return err
		}
		list = append(list, sc)
	}
	f.schemes, f.text = list, s
	return nil
}

// splitSchemes splits a comma list of schemes. A part that is only digits
// is the M of the ec:K or xor:K before it: "sr,ec:32,8,gbn" is sr, ec:32,8
// and gbn.
func splitSchemes(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if n := len(out); n > 0 && isDigits(part) && strings.Contains(out[n-1], ":") && !strings.Contains(out[n-1], ",") {
			out[n-1] += "," + part
			continue
		}
		out = append(out, part)
	}
	return out
}

func isDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// mustSet gives a flag its default, which must be valid.
func mustSet(v pflag.Value, s string) {
	if err := v.Set(s); err != nil {
		panic(fmt.Sprintf("bad default %q: %v", s, err))
	}
}
