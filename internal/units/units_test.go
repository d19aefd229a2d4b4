package units

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string // substring of the error; empty: no error
	}{
		{in: "0", want: 0},
		{in: "1", want: 1},
		{in: "4096", want: 4096},
		{in: "1B", want: 1},
		{in: "4KiB", want: 4 << 10},
		{in: "64MiB", want: 64 << 20},
		{in: "64mib", want: 64 << 20},
		{in: "1GiB", want: 1 << 30},
		{in: "4GiB", want: 4 << 30},
		{in: "2TiB", want: 2 << 40},
		{in: "1PiB", want: 1 << 50},
		{in: "1.5KiB", want: 1536},
		{in: "0.5MiB", want: 512 << 10},
		{in: "1kB", want: 1000},
		{in: "1KB", want: 1000},
		{in: "1.5MB", want: 1_500_000},
		{in: "10GB", want: 10_000_000_000},
		{in: "1e6", want: 1_000_000},
		{in: "1E6", want: 1_000_000},
		{in: "2.5e3", want: 2500},
		{in: "1e6B", want: 1_000_000},
		{in: " 64 MiB ", want: 64 << 20},
		{in: "9007199254740993", want: 9007199254740993}, // 2^53+1, exact
		{in: "9223372036854775807", want: math.MaxInt64},

		{in: "", wantErr: "no number"},
		{in: "MiB", wantErr: "no number"},
		{in: "abc", wantErr: "bad number"},
		{in: "64XB", wantErr: "bad number"},
		{in: "64M", wantErr: "bad number"}, // binary or decimal? say which
		{in: "64Mb/s", wantErr: "bad number"},
		{in: "-1", wantErr: "negative"},
		{in: "-1.5KiB", wantErr: "negative"},
		{in: "1.5", wantErr: "whole number"},
		{in: "0.1KiB", wantErr: "whole number"},
		{in: "1e30", wantErr: "too large"},
		{in: "1e400", wantErr: "out of range"},
		{in: "9223372036854775808", wantErr: "too large"},
		{in: "8EiB", wantErr: "bad number"}, // no EiB suffix: "8Ei" is no number
		{in: "9000000PiB", wantErr: "too large"},
		{in: "NaN", wantErr: "bad number"},
		{in: "Inf", wantErr: "bad number"},
		{in: "infB", wantErr: "bad number"},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseSize(%q) = %d, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestFormatSize(t *testing.T) {
	tests := []struct {
		in   int64
		want string
	}{
		{0, "0B"},
		{1, "1B"},
		{1023, "1023B"},
		{1024, "1KiB"},
		{1536, "1.5KiB"},
		{1365, "1.333KiB"},
		{64 << 20, "64MiB"},
		{1 << 30, "1GiB"},
		{4 << 30, "4GiB"},
		{3 << 40, "3TiB"},
		{1_000_000, "976.6KiB"},
		{-2048, "-2KiB"},
	}
	for _, tt := range tests {
		if got := FormatSize(tt.in); got != tt.want {
			t.Errorf("FormatSize(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSizeRoundTrip(t *testing.T) {
	for _, n := range []int64{0, 1, 512, 1 << 10, 3 << 20, 64 << 20, 1 << 30, 4 << 30, 1536} {
		s := FormatSize(n)
		got, err := ParseSize(s)
		if err != nil || got != n {
			t.Errorf("ParseSize(FormatSize(%d) = %q) = %d, %v", n, s, got, err)
		}
	}
}

func TestParseRate(t *testing.T) {
	tests := []struct {
		in      string
		want    float64
		wantErr string
	}{
		{in: "0", want: 0},
		{in: "1e9", want: 1e9},
		{in: "1000", want: 1000},
		{in: "10Gbps", want: 10e9},
		{in: "10gbps", want: 10e9},
		{in: "400Gbps", want: 400e9},
		{in: "10Gbit/s", want: 10e9},
		{in: "10Gbits/s", want: 10e9},
		{in: "10Gb/s", want: 10e9},
		{in: "10 Gbit/s", want: 10e9},
		{in: "10G", want: 10e9},
		{in: "100M", want: 100e6},
		{in: "100Mbps", want: 100e6},
		{in: "1.5kbps", want: 1500},
		{in: "1.5Kbps", want: 1500},
		{in: "1Tbps", want: 1e12},
		{in: "1.6Tbit/s", want: 1.6e12},
		{in: "5bps", want: 5},
		{in: "1GB/s", want: 8e9}, // bytes
		{in: "1GBps", want: 8e9},
		{in: "125MBps", want: 1e9},

		{in: "", wantErr: "no number"},
		{in: "Gbps", wantErr: "no number"},
		{in: "fast", wantErr: "unknown unit"},
		{in: "10Gbit", wantErr: "unknown unit"},
		{in: "10GB", wantErr: "unknown unit"}, // a size, not a rate
		{in: "10Xbps", wantErr: "bad number"},
		{in: "-1Gbps", wantErr: "negative"},
		{in: "-5", wantErr: "negative"},
		{in: "NaN", wantErr: "bad number"},
		{in: "Infbps", wantErr: "bad number"},
		{in: "1e308Pbps", wantErr: "too large"},
		{in: "1e999", wantErr: "out of range"},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseRate(%q) = %g, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || math.Abs(got-tt.want) > 1e-9*tt.want {
			t.Errorf("ParseRate(%q) = %g, %v; want %g", tt.in, got, err, tt.want)
		}
	}
}

func TestFormatRate(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0bit/s"},
		{5, "5bit/s"},
		{1500, "1.5kbit/s"},
		{100e6, "100Mbit/s"},
		{10e9, "10Gbit/s"},
		{9.72634e9, "9.726Gbit/s"},
		{400e9, "400Gbit/s"},
		{1.6e12, "1.6Tbit/s"},
	}
	for _, tt := range tests {
		got := FormatRate(tt.in)
		if got != tt.want {
			t.Errorf("FormatRate(%g) = %q, want %q", tt.in, got, tt.want)
		}
		if back, err := ParseRate(got); err != nil || math.Abs(back-tt.in) > 1e-3*tt.in {
			t.Errorf("ParseRate(FormatRate(%g) = %q) = %g, %v", tt.in, got, back, err)
		}
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "0", want: 0},
		{in: "25ms", want: 25 * time.Millisecond},
		{in: "100us", want: 100 * time.Microsecond},
		{in: "100µs", want: 100 * time.Microsecond},
		{in: "1.5s", want: 1500 * time.Millisecond},
		{in: "250ns", want: 250},
		{in: "1m30s", want: 90 * time.Second},
		{in: " 25ms ", want: 25 * time.Millisecond},

		{in: "", wantErr: "want a number and a unit"},
		{in: "25", wantErr: "no unit"},
		{in: "1e3", wantErr: "no unit"},
		{in: "25xs", wantErr: "want a number and a unit"},
		{in: "fast", wantErr: "want a number and a unit"},
		{in: "-5ms", wantErr: "negative"},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseDuration(%q) = %v, %v; want error containing %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}
