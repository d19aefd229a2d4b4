package linkem

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sdrnet/sdrnet/internal/units"
)

// maxSelected bounds how many paths or ports one selector range may name.
const maxSelected = 1 << 16

// ParseSpec reads a compact impairment spec, the form the command line uses:
//
//	delay=25ms,jitter=1ms,rate=1Gbps,loss=1e-3,ge=0.01/0.3/1,reorder=0.01/2ms,dup=0.001,queue=4MiB path[3]:fail=2s-5s
//
// A spec is a list of clauses separated by spaces or semicolons. A clause
// is a comma-separated list of key=value items, optionally preceded by a
// selector and a colon; without one it sets the default of every path.
// Selectors:
//
//	path[N]   path[N-M]    paths by index (0 is the first client seen)
//	port[P]   port[P-Q]    paths by client source port (wins over path[])
//
// A selected path starts from the default (all default clauses, wherever
// they are) and changes only the keys its clauses set; for a path named by
// several clauses, later ones win. A key applies to both directions unless
// prefixed with fwd. (client to target) or rev. (target to client); in a
// clause, prefixed keys apply after unprefixed ones. Keys:
//
//	delay=DURATION       one-way delay (25ms, 100us)
//	jitter=DURATION      uniform +/- jitter on the delay, order-preserving
//	rate=RATE            token-bucket rate in bits/s (1Gbps, 400M, 1e9)
//	burst=SIZE           token-bucket depth in bytes (64KiB); default one datagram
//	queue=SIZE           drop-tail queue before the bucket; default 4MiB
//	loss=PROB            Bernoulli loss probability (1e-3, 0.5%)
//	ge=P/R[/BAD[/GOOD]]  Gilbert-Elliott loss: good->bad P, bad->good R,
//	                     loss in bad BAD (default 1), in good GOOD (default 0)
//	reorder=PROB/DELAY   probability of holding a datagram back DELAY more
//	dup=PROB             duplication probability
//	fail=FROM[-TO]       down from FROM to TO after start (no TO: for good);
//	                     several windows joined by +; none clears
//	lossat=FROM[-TO]/PROB
//	                     loss PROB instead of loss= from FROM to TO after
//	                     start; several joined by +, like 2s-4s/1%+6s-7s/5%;
//	                     none clears
//	seed=N               random seed (default clause only, no prefix)
//	shared=1             one bottleneck for all paths: every client source
//	                     port of every connection crosses one rate, burst
//	                     and queue per direction, the default clause's
//	                     (default clause only, no prefix; Config.Shared)
//
// Errors name the bad item and the form expected.
func ParseSpec(spec string) (Config, error) {
	var cfg Config
	type clause struct {
		sel   string
		items []string
	}
	var defaults, selected []clause
	for _, c := range strings.FieldsFunc(spec, func(r rune) bool { return r == ';' || unicode.IsSpace(r) }) {
		sel, body := "", c
		if i, j := strings.IndexByte(c, ':'), strings.IndexByte(c, '='); i >= 0 && (j < 0 || i < j) {
			sel, body = c[:i], c[i+1:]
		}
		var items []string
		for it := range strings.SplitSeq(body, ",") {
			if it == "" {
				return Config{}, fmt.Errorf("linkem: spec clause %q has an empty item (stray comma?)", c)
			}
			if i, j := strings.IndexByte(it, ':'), strings.IndexByte(it, '='); i >= 0 && (j < 0 || i < j) {
				return Config{}, fmt.Errorf("linkem: spec item %q: a selector like %s must start a clause; separate clauses with a space or ';'", it, it[:i+1])
			}
			items = append(items, it)
		}
		if sel == "" {
			defaults = append(defaults, clause{"", items})
		} else {
			selected = append(selected, clause{sel, items})
		}
	}
	for _, c := range defaults {
		if err := applyItems(&cfg.Default, &cfg, c.items); err != nil {
			return Config{}, err
		}
	}
	for _, c := range selected {
		kind, lo, hi, err := parseSelector(c.sel)
		if err != nil {
			return Config{}, err
		}
		m := &cfg.Paths
		if kind == "port" {
			m = &cfg.Ports
		}
		if *m == nil {
			*m = make(map[int]Path)
		}
		// Parse once against the default to report errors once, then apply
		// to every selected path.
		probe := cloned(cfg.Default)
		if err := applyItems(&probe, nil, c.items); err != nil {
			return Config{}, fmt.Errorf("%w (in %s)", err, c.sel)
		}
		for i := lo; i <= hi; i++ {
			p, ok := (*m)[i]
			if !ok {
				p = cloned(cfg.Default)
			}
			_ = applyItems(&p, nil, c.items)
			(*m)[i] = p
		}
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

func cloned(p Path) Path { return Path{Forward: p.Forward.clone(), Reverse: p.Reverse.clone()} }

// parseSelector reads path[N], path[N-M], port[P] or port[P-Q].
func parseSelector(s string) (kind string, lo, hi int, err error) {
	const form = "path[N], path[N-M], port[P] or port[P-Q]"
	kind, rest, ok := strings.Cut(s, "[")
	if !ok || (kind != "path" && kind != "port") || !strings.HasSuffix(rest, "]") {
		return "", 0, 0, fmt.Errorf("linkem: bad selector %q: want %s", s, form)
	}
	rest = rest[:len(rest)-1]
	a, b, isRange := strings.Cut(rest, "-")
	lo, err1 := strconv.Atoi(a)
	hi = lo
	var err2 error
	if isRange {
		hi, err2 = strconv.Atoi(b)
	}
	switch {
	case err1 != nil || err2 != nil || lo < 0:
		return "", 0, 0, fmt.Errorf("linkem: bad selector %q: want %s with non-negative integers", s, form)
	case hi < lo:
		return "", 0, 0, fmt.Errorf("linkem: bad selector %q: range %d-%d is backwards", s, lo, hi)
	case kind == "port" && hi > 65535:
		return "", 0, 0, fmt.Errorf("linkem: bad selector %q: ports go up to 65535", s)
	case hi-lo >= maxSelected:
		return "", 0, 0, fmt.Errorf("linkem: bad selector %q: names more than %d paths", s, maxSelected)
	}
	return kind, lo, hi, nil
}

// applyItems applies one clause's items to p: unprefixed ones first, then
// prefixed ones. cfg, which takes the keys that are not a path's (seed,
// shared), is nil in a selected clause.
func applyItems(p *Path, cfg *Config, items []string) error {
	seen := make(map[string]bool)
	for pass := range 2 {
		for _, it := range items {
			k, v, ok := strings.Cut(it, "=")
			if !ok {
				return fmt.Errorf("linkem: spec item %q: want key=value", it)
			}
			dir := ""
			if d, rest, ok := strings.Cut(k, "."); ok {
				dir, k = d, rest
				if dir != "fwd" && dir != "rev" {
					return fmt.Errorf("linkem: spec item %q: unknown direction %q: want the prefix fwd or rev", it, dir)
				}
			}
			if (dir == "") != (pass == 0) {
				continue
			}
			if seen[dir+"."+k] {
				return fmt.Errorf("linkem: spec item %q: key %s%s set twice in one clause", it, prefix(dir), k)
			}
			seen[dir+"."+k] = true
			if k == "seed" || k == "shared" {
				switch {
				case cfg == nil:
					return fmt.Errorf("linkem: spec item %q: %s belongs in the default clause, not after a selector", it, k)
				case dir != "":
					return fmt.Errorf("linkem: spec item %q: %s has no direction", it, k)
				}
				if k == "shared" {
					b, err := strconv.ParseBool(v)
					if err != nil {
						return fmt.Errorf("linkem: spec item %q: shared: want 1 or 0", it)
					}
					cfg.Shared = b
					continue
				}
				n, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return fmt.Errorf("linkem: spec item %q: seed: want a non-negative integer", it)
				}
				cfg.Seed = n
				continue
			}
			key := lookupKey(k)
			if key == nil {
				return fmt.Errorf("linkem: spec item %q: unknown key %q; known keys: %s", it, k, knownKeys())
			}
			var tmp Impairment
			if err := key.set(&tmp, v); err != nil {
				return fmt.Errorf("linkem: spec item %q: %s: want %s: %v", it, k, key.form, err)
			}
			if dir != "rev" {
				key.copy(&p.Forward, &tmp)
			}
			if dir != "fwd" {
				key.copy(&p.Reverse, &tmp)
			}
		}
	}
	return nil
}

func prefix(dir string) string {
	if dir == "" {
		return ""
	}
	return dir + "."
}

// specKey reads, writes and copies one key of an Impairment.
type specKey struct {
	name string
	form string // expected form, for errors
	set  func(im *Impairment, v string) error
	get  func(im *Impairment) string
	copy func(dst, src *Impairment)
}

var specKeys = []specKey{
	{
		name: "delay", form: units.DurationForm,
		set:  func(im *Impairment, v string) (err error) { im.Delay, err = units.ParseDuration(v); return },
		get:  func(im *Impairment) string { return im.Delay.String() },
		copy: func(d, s *Impairment) { d.Delay = s.Delay },
	},
	{
		name: "jitter", form: units.DurationForm,
		set:  func(im *Impairment, v string) (err error) { im.Jitter, err = units.ParseDuration(v); return },
		get:  func(im *Impairment) string { return im.Jitter.String() },
		copy: func(d, s *Impairment) { d.Jitter = s.Jitter },
	},
	{
		name: "rate", form: units.RateForm,
		set:  func(im *Impairment, v string) (err error) { im.Rate, err = units.ParseRate(v); return },
		get:  func(im *Impairment) string { return formatRate(im.Rate) },
		copy: func(d, s *Impairment) { d.Rate = s.Rate },
	},
	{
		name: "burst", form: units.SizeForm,
		set:  func(im *Impairment, v string) (err error) { im.Burst, err = units.ParseSize(v); return },
		get:  func(im *Impairment) string { return formatSize(im.Burst) },
		copy: func(d, s *Impairment) { d.Burst = s.Burst },
	},
	{
		name: "queue", form: units.SizeForm,
		set:  func(im *Impairment, v string) (err error) { im.Queue, err = units.ParseSize(v); return },
		get:  func(im *Impairment) string { return formatSize(im.Queue) },
		copy: func(d, s *Impairment) { d.Queue = s.Queue },
	},
	{
		name: "loss", form: probForm,
		set:  func(im *Impairment, v string) (err error) { im.Loss, err = parseProb(v); return },
		get:  func(im *Impairment) string { return formatProb(im.Loss) },
		copy: func(d, s *Impairment) { d.Loss = s.Loss },
	},
	{
		name: "ge", form: "P/R[/BAD[/GOOD]], probabilities, like 0.01/0.3/1",
		set: setGE,
		get: func(im *Impairment) string {
			g := im.GE
			s := formatProb(g.P) + "/" + formatProb(g.R) + "/" + formatProb(g.LossBad)
			if g.LossGood != 0 {
				s += "/" + formatProb(g.LossGood)
			}
			return s
		},
		copy: func(d, s *Impairment) { d.GE = s.GE },
	},
	{
		name: "reorder", form: "PROB/DELAY, like 0.01/2ms",
		set: func(im *Impairment, v string) error {
			p, d, ok := strings.Cut(v, "/")
			if !ok {
				return fmt.Errorf("%q has no /DELAY", v)
			}
			var err error
			if im.Reorder, err = parseProb(p); err != nil {
				return err
			}
			im.ReorderDelay, err = units.ParseDuration(d)
			return err
		},
		get:  func(im *Impairment) string { return formatProb(im.Reorder) + "/" + im.ReorderDelay.String() },
		copy: func(d, s *Impairment) { d.Reorder, d.ReorderDelay = s.Reorder, s.ReorderDelay },
	},
	{
		name: "dup", form: probForm,
		set:  func(im *Impairment, v string) (err error) { im.Duplicate, err = parseProb(v); return },
		get:  func(im *Impairment) string { return formatProb(im.Duplicate) },
		copy: func(d, s *Impairment) { d.Duplicate = s.Duplicate },
	},
	{
		name: "fail", form: "FROM[-TO] windows joined by +, like 2s-5s or 2s or 1s-2s+4s, or none",
		set: setFail,
		get: func(im *Impairment) string {
			if len(im.Down) == 0 {
				return "none"
			}
			parts := make([]string, len(im.Down))
			for i, w := range im.Down {
				parts[i] = w.String()
			}
			return strings.Join(parts, "+")
		},
		copy: func(d, s *Impairment) { d.Down = append([]Window(nil), s.Down...) },
	},
	{
		name: "lossat", form: "FROM[-TO]/PROB windows joined by +, like 2s-4s/1% or 2s-4s/1%+6s/5%, or none",
		set: setLossAt,
		get: func(im *Impairment) string {
			if len(im.LossAt) == 0 {
				return "none"
			}
			parts := make([]string, len(im.LossAt))
			for i, w := range im.LossAt {
				parts[i] = w.String() + "/" + formatProb(w.Loss)
			}
			return strings.Join(parts, "+")
		},
		copy: func(d, s *Impairment) { d.LossAt = append([]LossWindow(nil), s.LossAt...) },
	},
}

func lookupKey(name string) *specKey {
	for i := range specKeys {
		if specKeys[i].name == name {
			return &specKeys[i]
		}
	}
	return nil
}

func knownKeys() string {
	var names []string
	for _, k := range specKeys {
		names = append(names, k.name)
	}
	return strings.Join(append(names, "seed", "shared"), ", ")
}

const probForm = "a probability in [0, 1] like 0.001, 1e-3 or 0.1%"

// parseProb reads a probability: a number in [0, 1] or a percentage.
func parseProb(s string) (float64, error) {
	t, scale := s, 1.0
	if strings.HasSuffix(t, "%") {
		t, scale = strings.TrimSuffix(t, "%"), 0.01
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("bad number %q", s)
	}
	f *= scale
	if !(f >= 0 && f <= 1) {
		return 0, fmt.Errorf("%q is outside [0, 1]", s)
	}
	return f, nil
}

func setGE(im *Impairment, v string) error {
	parts := strings.Split(v, "/")
	if len(parts) < 2 || len(parts) > 4 {
		return fmt.Errorf("%q: want 2 to 4 fields separated by /, got %d", v, len(parts))
	}
	g := GilbertElliott{LossBad: 1}
	dst := []*float64{&g.P, &g.R, &g.LossBad, &g.LossGood}
	for i, p := range parts {
		f, err := parseProb(p)
		if err != nil {
			return fmt.Errorf("%s: %v", []string{"P", "R", "BAD", "GOOD"}[i], err)
		}
		*dst[i] = f
	}
	im.GE = g
	return nil
}

func setFail(im *Impairment, v string) error {
	im.Down = nil
	if v == "none" {
		return nil
	}
	for w := range strings.SplitSeq(v, "+") {
		win, err := parseWindow(w)
		if err != nil {
			return err
		}
		im.Down = append(im.Down, win)
	}
	return nil
}

func setLossAt(im *Impairment, v string) error {
	im.LossAt = nil
	if v == "none" {
		return nil
	}
	for w := range strings.SplitSeq(v, "+") {
		span, prob, ok := strings.Cut(w, "/")
		if !ok {
			return fmt.Errorf("%q has no /PROB", w)
		}
		win, err := parseWindow(span)
		if err != nil {
			return err
		}
		p, err := parseProb(prob)
		if err != nil {
			return err
		}
		im.LossAt = append(im.LossAt, LossWindow{Window: win, Loss: p})
	}
	return nil
}

// parseWindow reads FROM[-TO].
func parseWindow(w string) (Window, error) {
	a, b, hasTo := strings.Cut(w, "-")
	from, err := units.ParseDuration(a)
	if err != nil {
		return Window{}, err
	}
	var to time.Duration
	if hasTo {
		if to, err = units.ParseDuration(b); err != nil {
			return Window{}, err
		}
		if to <= from {
			return Window{}, fmt.Errorf("window %q ends before it starts", w)
		}
	}
	return Window{From: from, To: to}, nil
}

func formatProb(p float64) string { return strconv.FormatFloat(p, 'g', -1, 64) }

// formatRate writes a rate the short way when that reads back exactly.
func formatRate(r float64) string {
	if s := units.FormatRate(r); mustParse(units.ParseRate(s)) == r {
		return s
	}
	return strconv.FormatFloat(r, 'g', -1, 64)
}

// formatSize writes a size the short way when that reads back exactly.
func formatSize(n int64) string {
	if s := units.FormatSize(n); mustParse(units.ParseSize(s)) == n {
		return s
	}
	return strconv.FormatInt(n, 10)
}

func mustParse[T int64 | float64](v T, err error) T {
	if err != nil {
		return -1
	}
	return v
}

// String writes c as a spec that ParseSpec reads back to an equal Config
// (path overrides equal to the default are left out). The zero Config is
// the empty string. MaxDatagram, MaxPaths, MaxInFlight and SocketBuffer
// have no spec form and are not written.
func (c Config) String() string {
	var clauses []string
	zero := Path{}
	def := diffItems(&c.Default, &zero)
	if c.Seed != 0 {
		def = append(def, "seed="+strconv.FormatUint(c.Seed, 10))
	}
	if c.Shared {
		def = append(def, "shared=1")
	}
	if len(def) > 0 {
		clauses = append(clauses, strings.Join(def, ","))
	}
	for _, sel := range []struct {
		name string
		m    map[int]Path
	}{{"path", c.Paths}, {"port", c.Ports}} {
		for _, i := range slices.Sorted(maps.Keys(sel.m)) {
			p := sel.m[i]
			if items := diffItems(&p, &c.Default); len(items) > 0 {
				clauses = append(clauses, fmt.Sprintf("%s[%d]:%s", sel.name, i, strings.Join(items, ",")))
			}
		}
	}
	return strings.Join(clauses, " ")
}

// diffItems lists the items that turn base into p.
func diffItems(p, base *Path) []string {
	var items []string
	for _, k := range specKeys {
		f, r := k.get(&p.Forward), k.get(&p.Reverse)
		bf, br := k.get(&base.Forward), k.get(&base.Reverse)
		switch {
		case f == r && (f != bf || r != br):
			items = append(items, k.name+"="+f)
		case f != r:
			if f != bf {
				items = append(items, "fwd."+k.name+"="+f)
			}
			if r != br {
				items = append(items, "rev."+k.name+"="+r)
			}
		}
	}
	return items
}
