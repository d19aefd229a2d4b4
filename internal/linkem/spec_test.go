package linkem

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseSpec(t *testing.T) {
	full := Impairment{
		Delay: 25 * time.Millisecond, Jitter: time.Millisecond,
		Rate: 1e9, Queue: 4 << 20, Loss: 1e-3,
		GE:      GilbertElliott{P: 0.01, R: 0.3, LossBad: 1},
		Reorder: 0.01, ReorderDelay: 2 * time.Millisecond,
		Duplicate: 0.001,
	}
	withDown := func(im Impairment, ws ...Window) Impairment { im.Down = ws; return im }
	tests := []struct {
		spec string
		want Config
	}{
		{"", Config{}},
		{"  ;  ", Config{}},
		{
			"delay=25ms,jitter=1ms,rate=1Gbps,loss=1e-3,ge=0.01/0.3/1,reorder=0.01/2ms,dup=0.001,queue=4MiB",
			Config{Default: Path{Forward: full, Reverse: full}},
		},
		{
			"delay=25ms,jitter=1ms,rate=1Gbps,loss=1e-3,ge=0.01/0.3/1,reorder=0.01/2ms,dup=0.001,queue=4MiB path[3]:fail=2s-5s",
			Config{
				Default: Path{Forward: full, Reverse: full},
				Paths: map[int]Path{3: {
					Forward: withDown(full, Window{2 * time.Second, 5 * time.Second}),
					Reverse: withDown(full, Window{2 * time.Second, 5 * time.Second}),
				}},
			},
		},
		{
			// Defaults apply wherever they are; direction prefixes; ranges;
			// ports; several windows; seed; percentages.
			"path[0-1]:fwd.loss=10%;rev.delay=5ms,delay=1ms port[4000]:fail=1s+3s-4s,burst=64KiB seed=7",
			Config{
				Default: Path{Forward: Impairment{Delay: time.Millisecond}, Reverse: Impairment{Delay: 5 * time.Millisecond}},
				Paths: map[int]Path{
					0: {Forward: Impairment{Delay: time.Millisecond, Loss: 0.1}, Reverse: Impairment{Delay: 5 * time.Millisecond}},
					1: {Forward: Impairment{Delay: time.Millisecond, Loss: 0.1}, Reverse: Impairment{Delay: 5 * time.Millisecond}},
				},
				Ports: map[int]Path{4000: {
					Forward: Impairment{Delay: time.Millisecond, Burst: 64 << 10, Down: []Window{{time.Second, 0}, {3 * time.Second, 4 * time.Second}}},
					Reverse: Impairment{Delay: 5 * time.Millisecond, Burst: 64 << 10, Down: []Window{{time.Second, 0}, {3 * time.Second, 4 * time.Second}}},
				}},
				Seed: 7,
			},
		},
		{
			// Prefixed keys apply after unprefixed ones in a clause; later
			// clauses for the same path win; ge with all four fields.
			"fwd.delay=2ms,delay=1ms,ge=0.1/0.5 path[2]:loss=0.5 path[2]:loss=0.25,ge=0.1/0.5/0.9/0.01",
			Config{
				Default: Path{
					Forward: Impairment{Delay: 2 * time.Millisecond, GE: GilbertElliott{P: 0.1, R: 0.5, LossBad: 1}},
					Reverse: Impairment{Delay: time.Millisecond, GE: GilbertElliott{P: 0.1, R: 0.5, LossBad: 1}},
				},
				Paths: map[int]Path{2: {
					Forward: Impairment{Delay: 2 * time.Millisecond, Loss: 0.25, GE: GilbertElliott{P: 0.1, R: 0.5, LossBad: 0.9, LossGood: 0.01}},
					Reverse: Impairment{Delay: time.Millisecond, Loss: 0.25, GE: GilbertElliott{P: 0.1, R: 0.5, LossBad: 0.9, LossGood: 0.01}},
				}},
			},
		},
		{
			// A loss schedule: clean, lossy for two seconds, clean again;
			// lossat=none clears it for one path.
			"lossat=2s-4s/1%+6s/5% path[1]:lossat=none",
			Config{
				Default: Both(Impairment{LossAt: []LossWindow{
					{Window{2 * time.Second, 4 * time.Second}, 0.01}, {Window{6 * time.Second, 0}, 0.05}}}),
				Paths: map[int]Path{1: {}},
			},
		},
		{
			// fail=none clears an inherited failure.
			"fail=1s path[0]:fail=none",
			Config{
				Default: Path{Forward: Impairment{Down: []Window{{time.Second, 0}}}, Reverse: Impairment{Down: []Window{{time.Second, 0}}}},
				Paths:   map[int]Path{0: {}},
			},
		},
	}
	for _, tt := range tests {
		got, err := ParseSpec(tt.spec)
		if err != nil {
			t.Errorf("ParseSpec(%q): %v", tt.spec, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseSpec(%q) =\n%+v\nwant\n%+v", tt.spec, got, tt.want)
		}
		// String reads back to the same Config, overrides equal to the
		// default aside.
		back, err := ParseSpec(got.String())
		if err != nil {
			t.Errorf("ParseSpec(%q.String() = %q): %v", tt.spec, got.String(), err)
			continue
		}
		if back.String() != got.String() || !reflect.DeepEqual(back.Default, got.Default) || back.Seed != got.Seed {
			t.Errorf("round trip of %q: String %q reads back as %q", tt.spec, got.String(), back.String())
		}
		for i, p := range back.Paths {
			if !reflect.DeepEqual(p, got.Paths[i]) {
				t.Errorf("round trip of %q: path[%d] = %+v, want %+v", tt.spec, i, p, got.Paths[i])
			}
		}
	}
}

func TestParseSpecErrors(t *testing.T) {
	tests := []struct {
		spec string
		want []string // substrings of the error
	}{
		{"delay=25", []string{`"delay=25"`, "delay", "no unit", "like 25ms"}},
		{"delay=-1ms", []string{"delay", "negative"}},
		{"dealy=25ms", []string{`unknown key "dealy"`, "known keys: delay"}},
		{"delay", []string{`"delay"`, "key=value"}},
		{"delay=1ms,,loss=0.1", []string{"empty item"}},
		{"rate=fast", []string{"rate", "like 400Gbps"}},
		{"queue=4M", []string{"queue", "like 64MiB"}},
		{"loss=2", []string{"loss", "outside [0, 1]", "probability"}},
		{"loss=abc", []string{"loss", "bad number"}},
		{"ge=0.1", []string{"ge", "P/R[/BAD[/GOOD]]"}},
		{"ge=0.1/x", []string{"ge", "R: bad number"}},
		{"reorder=0.1", []string{"reorder", "no /DELAY", "PROB/DELAY"}},
		{"reorder=0.1/2", []string{"reorder", "no unit"}},
		{"dup=1.5", []string{"dup", "outside"}},
		{"fail=5s-2s", []string{"fail", "ends before it starts"}},
		{"fail=soon", []string{"fail", "FROM[-TO]"}},
		{"lossat=2s-4s", []string{"lossat", "no /PROB", "FROM[-TO]/PROB"}},
		{"lossat=4s-2s/1%", []string{"lossat", "ends before it starts"}},
		{"lossat=2s/150%", []string{"lossat", "outside"}},
		{"up.delay=1ms", []string{`unknown direction "up"`}},
		{"delay=1ms,delay=2ms", []string{"delay set twice"}},
		{"seed=-3", []string{"seed", "non-negative integer"}},
		{"path[1]:seed=3", []string{"seed belongs in the default clause"}},
		{"fwd.seed=3", []string{"seed has no direction"}},
		{"shared=yes", []string{"shared", "want 1 or 0"}},
		{"path[1]:shared=1", []string{"shared belongs in the default clause"}},
		{"rev.shared=1", []string{"shared has no direction"}},
		{"rate=1Gbps,shared=1 path[1]:rate=2Gbps", []string{"path[1]", "shared bottleneck"}},
		{"rate=1Gbps,shared=1 port[5000]:rev.queue=1MiB", []string{"port[5000]", "reverse", "shared bottleneck"}},
		{"delay=1ms,path[3]:fail=2s", []string{"path[3]:", "must start a clause"}},
		{"path[x]:loss=0.1", []string{`bad selector "path[x]"`, "path[N]"}},
		{"paths[1]:loss=0.1", []string{`bad selector "paths[1]"`}},
		{"path[5-2]:loss=0.1", []string{"backwards"}},
		{"port[70000]:loss=0.1", []string{"65535"}},
		{"path[0-99999999]:loss=0.1", []string{"more than"}},
		{"path[1]:loss=7", []string{"loss", "(in path[1])"}},
	}
	for _, tt := range tests {
		_, err := ParseSpec(tt.spec)
		if err == nil {
			t.Errorf("ParseSpec(%q) succeeded; want an error", tt.spec)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("ParseSpec(%q) error %q does not contain %q", tt.spec, err, w)
			}
		}
	}
}

func TestConfigString(t *testing.T) {
	cfg := Config{
		Default: Path{Forward: Impairment{Delay: 10 * time.Millisecond, Rate: 2e9}, Reverse: Impairment{Delay: 10 * time.Millisecond}},
		Paths:   map[int]Path{1: {Forward: Impairment{Delay: 10 * time.Millisecond, Rate: 2e9, Loss: 0.5}, Reverse: Impairment{Delay: 10 * time.Millisecond}}},
		Seed:    3,
	}
	want := "delay=10ms,fwd.rate=2Gbit/s,seed=3 path[1]:fwd.loss=0.5"
	if got := cfg.String(); got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := (Config{}).String(); got != "" {
		t.Errorf("zero Config String() = %q, want empty", got)
	}
}

func TestValidate(t *testing.T) {
	bad := []Config{
		{Default: Both(Impairment{Loss: -0.1})},
		{Default: Both(Impairment{Rate: -1})},
		{Default: Both(Impairment{Down: []Window{{2 * time.Second, time.Second}}})},
		{Paths: map[int]Path{-1: {}}},
		{Ports: map[int]Path{70000: {}}},
		{MaxDatagram: 1 << 20},
	}
	for _, c := range bad {
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil; want an error", c)
		}
	}
	if err := (&Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
}

// TestParseShared: shared=1 sets Config.Shared, round-trips through
// String, and lets selected paths change what is not the bottleneck's.
func TestParseShared(t *testing.T) {
	cfg, err := ParseSpec("delay=10ms,rate=1Gbps,queue=256KiB,shared=1 path[1]:loss=1%")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Shared || cfg.Paths[1].Forward.Rate != 1e9 || cfg.Paths[1].Forward.Loss != 0.01 {
		t.Fatalf("parsed %+v", cfg)
	}
	s := cfg.String()
	if !strings.Contains(s, "shared=1") {
		t.Errorf("String() = %q, want shared=1", s)
	}
	back, err := ParseSpec(s)
	if err != nil || !reflect.DeepEqual(back, cfg) {
		t.Errorf("round trip of %q: %+v, %v; want %+v", s, back, err, cfg)
	}
	if cfg, err := ParseSpec("rate=1Gbps,shared=0"); err != nil || cfg.Shared {
		t.Errorf("shared=0: %+v, %v", cfg, err)
	}
}
