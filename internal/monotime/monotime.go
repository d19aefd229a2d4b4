// Package monotime defines the protocol's notion of time: an integer count
// of picoseconds on a monotonic clock whose origin the caller chooses.
//
// Picoseconds, not nanoseconds, because a 64-byte frame at 800 Gbit/s lasts
// 640 ps and the simulator must not round it away. An int64 of picoseconds
// spans about 106 days, far longer than any run.
package monotime

import (
	"strconv"
	"time"
)

// Time is a point in time in picoseconds since an origin chosen by the
// driver (the simulator's start, or the process start for real sockets).
type Time int64

// Duration is a span of time in picoseconds.
type Duration int64

// Common durations.
const (
	Picosecond  Duration = 1
	Nanosecond           = 1000 * Picosecond
	Microsecond          = 1000 * Nanosecond
	Millisecond          = 1000 * Microsecond
	Second               = 1000 * Millisecond
)

// Never is a time later than any real deadline.
const Never Time = 1<<63 - 1

// Add returns t+d.
func (t Time) Add(d Duration) Time { return t + Time(d) }

// Sub returns t-u.
func (t Time) Sub(u Time) Duration { return Duration(t - u) }

// Before reports whether t is earlier than u.
func (t Time) Before(u Time) bool { return t < u }

// Std converts d to a time.Duration, truncating to nanoseconds.
func (d Duration) Std() time.Duration { return time.Duration(d / Nanosecond) }

// FromStd converts a time.Duration to a Duration.
func FromStd(d time.Duration) Duration { return Duration(d) * Nanosecond }

// Seconds returns d as floating-point seconds.
func (d Duration) Seconds() float64 { return float64(d) / float64(Second) }

// String formats d the way time.Duration does, keeping sub-nanosecond
// durations readable.
func (d Duration) String() string {
	if d > -Nanosecond && d < Nanosecond {
		return strconv.FormatInt(int64(d), 10) + "ps"
	}
	return d.Std().String()
}

// TransmitTime is how long n bytes take to serialize at rate bits per second.
func TransmitTime(n int, bitsPerSecond float64) Duration {
	if bitsPerSecond <= 0 {
		return 0
	}
	return Duration(float64(n) * 8 * float64(Second) / bitsPerSecond)
}
