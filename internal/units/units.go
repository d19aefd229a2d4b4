// Package units reads and writes the human units of the command line:
// sizes in bytes (64MiB, 1GiB, 4KiB, 1e6), rates in bits per second
// (400Gbps, 10Gbit/s, 1e9) and durations (25ms, 100us).
//
// Parsers accept what people type and reject what they might mean two ways;
// their errors say what was wrong, and callers add the flag name and the
// range they accept. Formatters write what the parsers read back.
package units

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Size suffixes: binary (IEC) multiples of 1024 and decimal (SI) multiples
// of 1000. Matching is case-insensitive; a size is always bytes.
var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	// Longest suffixes first, so "KiB" is not read as "B".
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}, {"pib", 1 << 50},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"pb", 1e15},
	{"b", 1},
}

// SizeForm describes the sizes ParseSize reads, for error messages.
const SizeForm = "a size like 64MiB, 1GiB, 4KiB, 1.5MB or 1e6 (bytes)"

// ParseSize reads a size in bytes: a non-negative number, optionally with
// a unit B, KiB, MiB, GiB, TiB, PiB (powers of 1024) or kB, MB, GB, TB, PB
// (powers of 1000). The result must be a whole number of bytes.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	num, mult := t, int64(1)
	lower := strings.ToLower(t)
	for _, u := range sizeUnits {
		if strings.HasSuffix(lower, u.suffix) {
			num, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	if num == "" {
		return 0, fmt.Errorf("size %q has no number", s)
	}
	// Integers go the exact way, so 9007199254740993 is not rounded.
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("size %q is negative", s)
		}
		if n > math.MaxInt64/mult {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		return n * mult, nil
	}
	f, err := parseNumber(num)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	v := f * float64(mult)
	switch {
	case v >= math.MaxInt64: // 2^63: the float nearest MaxInt64 is past it
		return 0, fmt.Errorf("size %q is too large", s)
	case v != math.Trunc(v):
		return 0, fmt.Errorf("size %q is not a whole number of bytes", s)
	}
	return int64(v), nil
}

// FormatSize writes n bytes in the largest binary unit that keeps the
// number at least 1: exactly when it divides n (64MiB), else to four
// significant digits (1.5MiB, 1.333KiB). ParseSize reads the exact forms
// back.
func FormatSize(n int64) string {
	if n < 0 {
		return "-" + FormatSize(-n) // MinInt64 is not a size anyone formats
	}
	names := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	i := 0
	for i+1 < len(names) && n >= 1<<(10*(i+1)) {
		i++
	}
	unit := int64(1) << (10 * i)
	if n%unit == 0 {
		return strconv.FormatInt(n/unit, 10) + names[i]
	}
	return strconv.FormatFloat(float64(n)/float64(unit), 'g', 4, 64) + names[i]
}

// Rate prefixes, decimal as is usual for link rates. The letter may be
// either case (k or K, g or G), but the unit after it may not: b is bits
// and B is bytes.
var ratePrefixes = map[byte]float64{'k': 1e3, 'm': 1e6, 'g': 1e9, 't': 1e12, 'p': 1e15}

// Rate units after the prefix, with their value in bits per second. No unit
// at all (10G, 1e9) means bits per second.
var rateUnits = []struct {
	suffix string
	bits   float64
}{
	{"bits/s", 1}, {"bit/s", 1}, {"bps", 1}, {"b/s", 1},
	{"B/s", 8}, {"Bps", 8},
	{"", 1},
}

// RateForm describes the rates ParseRate reads, for error messages.
const RateForm = "a rate like 400Gbps, 10Gbit/s, 100M or 1e9 (bits/s)"

// ParseRate reads a rate in bits per second: a non-negative number with
// an optional decimal prefix k, M, G, T, P and an optional unit bps, bit/s,
// b/s (bits) or Bps, B/s (bytes, counted as 8 bits). 10G is 10 Gbit/s.
func ParseRate(s string) (float64, error) {
	t := strings.TrimSpace(s)
	for _, u := range rateUnits {
		if !strings.HasSuffix(t, u.suffix) {
			continue
		}
		num := strings.TrimSpace(t[:len(t)-len(u.suffix)])
		mult := u.bits
		if n := len(num); n > 0 {
			if p, ok := ratePrefixes[lowerASCII(num[n-1])]; ok {
				num, mult = strings.TrimSpace(num[:n-1]), mult*p
			}
		}
		if num == "" {
			return 0, fmt.Errorf("rate %q has no number", s)
		}
		f, err := parseNumber(num)
		if err != nil {
			if _, ferr := strconv.ParseFloat(num, 64); u.suffix == "" && ferr != nil && !errors.Is(ferr, strconv.ErrRange) {
				// The unit, not the number, is likely what is wrong.
				return 0, fmt.Errorf("rate %q: unknown unit or bad number", s)
			}
			return 0, fmt.Errorf("rate %q: %w", s, err)
		}
		if v := f * mult; !math.IsInf(v, 0) {
			return v, nil
		}
		return 0, fmt.Errorf("rate %q is too large", s)
	}
	panic("unreachable: the empty unit matches every rate")
}

// FormatRate writes bps bits per second with the decimal prefix that keeps
// the number in [1, 1000), to four significant digits: 10Gbit/s, 1.5Mbit/s,
// 9.726Gbit/s. ParseRate reads it back.
func FormatRate(bps float64) string {
	prefix, v := "", bps
	for _, p := range []string{"k", "M", "G", "T", "P"} {
		if math.Abs(v) < 1000 {
			break
		}
		prefix, v = p, v/1000
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + prefix + "bit/s"
}

// DurationForm describes the durations ParseDuration reads, for error
// messages.
const DurationForm = "a duration like 25ms, 100us or 1.5s"

// ParseDuration reads a non-negative duration the way time.ParseDuration
// does (25ms, 100us, 100µs, 1m30s); a bare 0 is zero.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	d, err := time.ParseDuration(t)
	if err != nil {
		if _, ferr := strconv.ParseFloat(t, 64); ferr == nil {
			return 0, fmt.Errorf("duration %q has no unit (ns, us, ms, s, m, h)", s)
		}
		return 0, fmt.Errorf("duration %q: want a number and a unit (ns, us, ms, s, m, h)", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// parseNumber reads a finite, non-negative decimal number (1.5, 1e6).
func parseNumber(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return 0, errors.New("number out of range")
	case err != nil:
		return 0, fmt.Errorf("bad number %q", s)
	case math.IsNaN(f) || math.IsInf(f, 0):
		return 0, fmt.Errorf("bad number %q", s)
	case f < 0 || math.Signbit(f):
		return 0, errors.New("negative")
	}
	return f, nil
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
