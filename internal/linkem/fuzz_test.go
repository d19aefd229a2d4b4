package linkem

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// FuzzParseSpec: ParseSpec never panics; a spec it accepts is valid and
// String writes it back as a spec that parses to the same Config; an error
// says it is linkem's and names what is wrong: a part of the spec, quoted,
// or the path it configures.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{
		"",
		"delay=25ms,jitter=1ms,rate=1Gbps,loss=1e-3,ge=0.01/0.3/1,reorder=0.01/2ms,dup=0.001,queue=4MiB path[3]:fail=2s-5s",
		"fwd.delay=2ms,rev.delay=1ms,ge=0.1/0.5 path[2]:loss=25%,ge=0.1/0.5/0.9/0.01",
		"fail=1s path[0]:fail=none",
		"delay=10ms;port[4000-4010]:rate=100Mbps,burst=64KiB",
		"seed=42 path[1-3]:fail=1s-2s+3s",
		"fwd.rate=1e9,rev.queue=0 port[9]:fwd.loss=0.5",
		"delay=25", "dealy=25ms", "delay=1ms,,loss=0.1", "loss=2", "ge=0.1/x",
		"reorder=0.1", "fail=5s-2s", "up.delay=1ms", "delay=1ms,delay=2ms",
		"seed=-3", "path[1]:seed=3", "path[3-1]:delay=1ms", "port[70000]:delay=1ms",
		"path[x]:delay=1ms", "delay=1ms,path[1]:loss=0.1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		if len(spec) > 4096 {
			return // command lines are short; long ones only slow the fuzzer
		}
		cfg, err := ParseSpec(spec)
		if err != nil {
			checkSpecError(t, spec, err)
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("ParseSpec(%q) accepted an invalid Config: %v", spec, err)
		}
		if len(cfg.Paths)+len(cfg.Ports) > 256 {
			// A selector range names up to 65536 paths, and writing and
			// re-reading each takes seconds (one input held the fuzzer
			// for most of a minute). Every path is written by the same
			// code, so small configs check the round trip as well.
			return
		}
		s := cfg.String()
		back, err := ParseSpec(s)
		if err != nil {
			t.Fatalf("ParseSpec(%q).String() = %q does not parse: %v", spec, s, err)
		}
		if back.String() != s || back.Seed != cfg.Seed || !reflect.DeepEqual(back.Default, cfg.Default) {
			t.Fatalf("ParseSpec(%q): String %q reads back as %q (default %+v, want %+v)", spec, s, back.String(), back.Default, cfg.Default)
		}
		// String leaves out overrides equal to the default, so back has
		// a subset of the paths, each equal.
		for _, m := range []struct {
			name      string
			got, want map[int]Path
		}{{"path", back.Paths, cfg.Paths}, {"port", back.Ports, cfg.Ports}} {
			for i, p := range m.got {
				if !reflect.DeepEqual(p, m.want[i]) {
					t.Fatalf("ParseSpec(%q): %s[%d] reads back as %+v, want %+v", spec, m.name, i, p, m.want[i])
				}
			}
		}
	})
}

// checkSpecError checks that err, from ParseSpec(spec), is linkem's and
// names what is wrong: it quotes a clause, item or selector of the spec,
// or names the path whose configuration is invalid.
func checkSpecError(t *testing.T, spec string, err error) {
	t.Helper()
	msg := err.Error()
	if !strings.HasPrefix(msg, "linkem: ") {
		t.Fatalf("ParseSpec(%q): error %q does not say it is linkem's", spec, msg)
	}
	for _, p := range []string{"linkem: default: ", "linkem: path[", "linkem: port["} {
		if strings.HasPrefix(msg, p) {
			return
		}
	}
	for _, c := range strings.FieldsFunc(spec, func(r rune) bool { return r == ';' || unicode.IsSpace(r) }) {
		parts := append([]string{c}, strings.Split(c, ",")...)
		if i := strings.IndexByte(c, ':'); i >= 0 {
			parts = append(parts, c[:i])
			parts = append(parts, strings.Split(c[i+1:], ",")...)
		}
		for _, p := range parts {
			if p != "" && strings.Contains(msg, strconv.Quote(p)) {
				return
			}
		}
	}
	t.Fatalf("ParseSpec(%q): error %q quotes no part of the spec", spec, msg)
}
