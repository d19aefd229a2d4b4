package monotime

import (
	"testing"
	"time"
)

func TestTransmitTime(t *testing.T) {
	tests := []struct {
		bytes int
		rate  float64
		want  Duration
	}{
		{64, 800e9, 640 * Picosecond},
		{4096, 400e9, 81920 * Picosecond},
		{1500, 10e9, 1200 * Nanosecond},
		{100, 0, 0},
	}
	for _, tt := range tests {
		if got := TransmitTime(tt.bytes, tt.rate); got != tt.want {
			t.Errorf("TransmitTime(%d, %g) = %v, want %v", tt.bytes, tt.rate, got, tt.want)
		}
	}
}

func TestDurationConversions(t *testing.T) {
	if got := FromStd(25 * time.Millisecond); got != 25*Millisecond {
		t.Errorf("FromStd(25ms) = %v", got)
	}
	if got := (1500 * Picosecond).Std(); got != time.Nanosecond {
		t.Errorf("1500ps.Std() = %v, want 1ns (truncated)", got)
	}
	for d, want := range map[Duration]string{640: "640ps", 25 * Millisecond: "25ms", -5: "-5ps"} {
		if got := d.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int64(d), got, want)
		}
	}
	if got := Time(10).Add(5).Sub(Time(3)); got != 12 {
		t.Errorf("time arithmetic = %v, want 12", got)
	}
}
