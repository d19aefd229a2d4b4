// Package scenario reads simulation scenarios: YAML files in which every
// parameter is a value or a list of values, strictly checked, expanded to
// the grid of all combinations.
package scenario

import (
	"fmt"
	"io/fs"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Param is one parameter as written: its dotted path, its values (one, or
// a list that becomes a grid axis) and where it was written.
type Param struct {
	Path   string   `json:"path"`
	Values []string `json:"values"`
	Pos    string   `json:"where"` // file:line:col, or "--set" for command-line overrides
}

// Scenario is a parsed scenario file.
type Scenario struct {
	File        string
	Name        string
	Description string
	// Finding is what the paper being reproduced found, in words;
	// Compare names the parameters whose values the study compares. The
	// report sets our ranking of those values beside the finding.
	Finding string
	Compare []string
	// Differences says where our ranking departs from the finding, and
	// why: written after the runs, checked against them.
	Differences string
	// Claims are the finding's comparisons, which the report judges
	// against the run.
	Claims []Claim
	Seed   uint64
	// Threads says how each fabric point runs: when positive, split by
	// racks on this many threads (the same output on any number); when
	// zero, on one engine; when ThreadsAuto (the default), split on one
	// thread where its fabric has AutoSplitHosts hosts or more, where the
	// split is the faster even on one thread, and on one engine below.
	Threads int
	Params  []Param // in schema order
	// Quick holds the overrides that make the default, fast run; Full
	// ignores them.
	Quick []Param
	// Source is the YAML the scenario was parsed from, so that a sweep
	// can carry it to other machines and parse it again there.
	Source []byte
	// Files holds the files a built-in scenario names (a training
	// trace), by their names in it; nil: they are beside File.
	Files fs.FS
}

// MaxThreads is the most threads a point may run on.
const MaxThreads = 1024

// ThreadsAuto is Scenario.Threads' default: split large fabrics.
const ThreadsAuto = -1

// AutoSplitHosts is the least hosts a fabric has that ThreadsAuto splits:
// from about there on the split runs faster even on one thread, as each
// rack's events stay in cache (bench/parallel.sh measures both).
const AutoSplitHosts = 1024

// ParseThreads reads a threads setting: auto (ThreadsAuto), or 0..MaxThreads.
func ParseThreads(v string) (int, error) {
	if v == "auto" {
		return ThreadsAuto, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > MaxThreads {
		return 0, fmt.Errorf("want auto or 0..%d", MaxThreads)
	}
	return n, nil
}

// Error is a scenario mistake, placed in the file and saying the fix.
type Error struct {
	Pos string
	Msg string
}

func (e *Error) Error() string { return e.Pos + ": " + e.Msg }

func errAt(file string, n *yaml.Node, format string, args ...any) *Error {
	return &Error{Pos: fmt.Sprintf("%s:%d:%d", file, n.Line, n.Column), Msg: fmt.Sprintf(format, args...)}
}

// Load reads and checks a scenario file.
func Load(path string) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

var topLevel = []string{"name", "description", "finding", "claims", "differences", "compare", "seed", "threads", "quick", "topology", "routing", "failure", "transport", "workload", "nic", "host", "metrics"}

// Parse checks a scenario given as YAML text; file names it in errors.
func Parse(file string, data []byte) (*Scenario, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{Pos: file, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if len(doc.Content) == 0 {
		return nil, &Error{Pos: file, Msg: "empty scenario: want a mapping with " + strings.Join(topLevel, ", ")}
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, errAt(file, root, "a scenario is a mapping of %s", strings.Join(topLevel, ", "))
	}
	s := &Scenario{File: file, Seed: 1, Source: data, Threads: ThreadsAuto}
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if seen[k.Value] {
			return nil, errAt(file, k, "key %q given twice", k.Value)
		}
		seen[k.Value] = true
		switch k.Value {
		case "name", "description", "finding", "differences":
			if v.Kind != yaml.ScalarNode {
				return nil, errAt(file, v, "%s: want a string", k.Value)
			}
			if k.Value == "description" || k.Value == "differences" {
				if err := checkProse(file, k.Value, v); err != nil {
					return nil, err
				}
			}
			switch k.Value {
			case "name":
				s.Name = v.Value
			case "description":
				s.Description = v.Value
			case "finding":
				s.Finding = v.Value
			default:
				s.Differences = v.Value
			}
		case "claims":
			c, err := claimList(file, v)
			if err != nil {
				return nil, err
			}
			s.Claims = c
		case "compare":
			c, err := compareList(file, v)
			if err != nil {
				return nil, err
			}
			s.Compare = c
		case "seed":
			seed, err := strconv.ParseUint(v.Value, 10, 64)
			if v.Kind != yaml.ScalarNode || err != nil {
				return nil, errAt(file, v, "seed: want a non-negative integer, like 1")
			}
			s.Seed = seed
		case "threads":
			n, err := ParseThreads(v.Value)
			if v.Kind != yaml.ScalarNode || err != nil {
				return nil, errAt(file, v, "threads: want auto (the default: split fabrics of %d hosts or more), 0 (one engine) or the threads a fabric point runs on, 1..%d, got %q",
					AutoSplitHosts, MaxThreads, v.Value)
			}
			s.Threads = n
		case "topology", "routing", "failure", "transport", "workload", "nic", "host", "metrics":
			ps, err := section(file, k.Value, v)
			if err != nil {
				return nil, err
			}
			s.Params = append(s.Params, ps...)
		case "quick":
			q, err := quick(file, v)
			if err != nil {
				return nil, err
			}
			s.Quick = q
		default:
			return nil, errAt(file, k, "unknown key %q; known keys: %s", k.Value, strings.Join(topLevel, ", "))
		}
	}
	if s.Name == "" {
		return nil, &Error{Pos: file, Msg: "missing name: add `name: <short name>` at the top"}
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := s.checkClaims(); err != nil {
		return nil, err
	}
	return s, nil
}

// compareList reads the parameter paths a study compares: one, or a list.
func compareList(file string, n *yaml.Node) ([]string, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		items = n.Content
	}
	var out []string
	for _, it := range items {
		if _, ok := schema[it.Value]; it.Kind != yaml.ScalarNode || !ok {
			return nil, errAt(file, it, "compare: want parameter paths such as transport.select or [routing.balancer, transport.qps], got %q", it.Value)
		}
		out = append(out, it.Value)
	}
	return out, nil
}

// section reads one mapping of parameters under prefix.
func section(file, prefix string, n *yaml.Node) ([]Param, error) {
	if n.Kind != yaml.MappingNode {
		return nil, errAt(file, n, "%s: want a mapping of parameters", prefix)
	}
	var out []Param
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		path := prefix + "." + k.Value
		if _, ok := schema[path]; !ok {
			return nil, errAt(file, k, "unknown key %q in %s; known keys: %s", k.Value, prefix, strings.Join(knownIn(prefix), ", "))
		}
		p, err := param(file, path, v)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// quick reads the overrides of the default run: dotted paths to values.
func quick(file string, n *yaml.Node) ([]Param, error) {
	if n.Kind != yaml.MappingNode {
		return nil, errAt(file, n, "quick: want a mapping of dotted parameter paths, like workload.count: 10")
	}
	var out []Param
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, ok := schema[k.Value]; !ok {
			return nil, errAt(file, k, "quick: unknown parameter %q; known: %s", k.Value, strings.Join(knownIn(""), ", "))
		}
		p, err := param(file, k.Value, v)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

func param(file, path string, v *yaml.Node) (Param, error) {
	p := Param{Path: path, Pos: fmt.Sprintf("%s:%d:%d", file, v.Line, v.Column)}
	switch v.Kind {
	case yaml.ScalarNode:
		p.Values = []string{v.Value}
	case yaml.SequenceNode:
		if len(v.Content) == 0 {
			return p, errAt(file, v, "%s: empty list; give at least one value", path)
		}
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode {
				return p, errAt(file, e, "%s: list items must be plain values", path)
			}
			p.Values = append(p.Values, e.Value)
		}
	default:
		return p, errAt(file, v, "%s: want a value or a list of values", path)
	}
	return p, nil
}

func knownIn(prefix string) []string {
	var out []string
	for k := range schema {
		if prefix == "" {
			out = append(out, k)
		} else if rest, ok := strings.CutPrefix(k, prefix+"."); ok {
			out = append(out, rest)
		}
	}
	sort.Strings(out)
	return out
}

// check parses every value once, so a mistake surfaces before any run.
func (s *Scenario) check() error {
	for _, list := range [][]Param{s.Params, s.Quick} {
		for _, p := range list {
			for _, v := range p.Values {
				if _, err := schema[p.Path].parse(v); err != nil {
					msg := fmt.Sprintf("%s: %q: %v", p.Path, v, err)
					if strings.Contains(v, ":") && !strings.Contains(v, ",") {
						msg += `; in a [a, b] list YAML splits "ec:32,8" at the comma: quote it`
					}
					return &Error{Pos: p.Pos, Msg: msg}
				}
			}
		}
	}
	return nil
}

// Set overrides one parameter from the command line: key=value or
// key=[v1,v2].
func (s *Scenario) Set(kv string) error {
	key, val, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("--set %q: want key=value, like workload.count=10", kv)
	}
	if _, known := schema[key]; !known {
		return fmt.Errorf("--set %q: unknown parameter %q; known: %s", kv, key, strings.Join(knownIn(""), ", "))
	}
	p := Param{Path: key, Pos: "--set " + key}
	if inner, ok := strings.CutPrefix(val, "["); ok {
		inner, ok = strings.CutSuffix(inner, "]")
		if !ok {
			return fmt.Errorf("--set %q: unclosed list; want key=[v1,v2]", kv)
		}
		for _, v := range strings.Split(inner, ",") {
			v = strings.TrimSpace(v)
			// The comma of ec:K,M belongs to the scheme.
			if n := len(p.Values); n > 0 && isDigits(v) && strings.Contains(p.Values[n-1], ":") &&
				!strings.Contains(p.Values[n-1], ",") {
				p.Values[n-1] += "," + v
				continue
			}
			p.Values = append(p.Values, v)
		}
	} else {
		p.Values = []string{val}
	}
	for _, v := range p.Values {
		if _, err := schema[key].parse(v); err != nil {
			return fmt.Errorf("--set %s: %q: %v", key, v, err)
		}
	}
	s.override(&s.Params, p)
	s.Quick = slices.DeleteFunc(s.Quick, func(q Param) bool { return q.Path == key })
	return nil
}

func (s *Scenario) override(list *[]Param, p Param) {
	for i := range *list {
		if (*list)[i].Path == p.Path {
			(*list)[i] = p
			return
		}
	}
	*list = append(*list, p)
}

// Point is one cell of the grid: a value for every parameter.
type Point struct {
	Index  int
	Values map[string]string
	// Varying lists the parameters that have more than one value in the
	// grid, in order: they name the cell.
	Varying []string
}

// OnFabric reports whether the point runs on a datacenter fabric, which
// threads split by racks (the sites of a long haul run on one engine).
func (p Point) OnFabric() bool { return isFabric(p.Values["topology.kind"]) }

// Label names the point by its varying parameters.
func (p Point) Label() string {
	var b strings.Builder
	for i, k := range p.Varying {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(k[strings.LastIndex(k, ".")+1:] + "=" + p.Values[k])
	}
	return b.String()
}

// Grid expands the parameters (with the quick overrides unless full) to
// every combination, the last parameter varying fastest. Parameters not
// given take their defaults.
func (s *Scenario) Grid(full bool) []Point {
	params := slices.Clone(s.Params)
	if !full {
		for _, q := range s.Quick {
			s.override(&params, q)
		}
	}
	values := map[string][]string{}
	var order []string
	for _, p := range params {
		values[p.Path] = p.Values
		order = append(order, p.Path)
	}
	for k, d := range schema {
		if _, ok := values[k]; !ok && d.def != "" {
			values[k] = []string{d.def}
			order = append(order, k)
		}
	}
	var varying []string
	for _, k := range order {
		if len(values[k]) > 1 {
			varying = append(varying, k)
		}
	}
	points := []Point{{Values: map[string]string{}}}
	for _, k := range order {
		var next []Point
		for _, pt := range points {
			for _, v := range values[k] {
				m := make(map[string]string, len(pt.Values)+1)
				for kk, vv := range pt.Values {
					m[kk] = vv
				}
				m[k] = v
				next = append(next, Point{Values: m})
			}
		}
		points = next
	}
	for i := range points {
		points[i].Index = i
		points[i].Varying = varying
		resolveArity(points[i].Values)
	}
	return points
}

// resolveArity replaces topology.k "auto" with the smallest even k whose
// fat-tree (k^3/4 hosts) holds workload.hosts, with at least one host to
// spare when workload.background asks for traffic from the others. So one
// grid can scale a job from a rack to a thousand GPUs, each cell on a
// fabric of its size, and its results name the k each ran on. Where no k
// up to 64 fits, "auto" stays and the fabric reports it.
func resolveArity(values map[string]string) {
	if values["topology.k"] != "auto" {
		return
	}
	hosts, err := strconv.Atoi(values["workload.hosts"])
	if err != nil {
		return
	}
	if bg, _ := strconv.ParseFloat(values["workload.background"], 64); bg > 0 {
		hosts++
	}
	for k := 2; k <= 64; k += 2 {
		if k*k*k/4 >= hosts {
			values["topology.k"] = strconv.Itoa(k)
			return
		}
	}
}

func isDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}
