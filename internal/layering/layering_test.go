// Package layering enforces the dependency rules of docs/architecture.md: the
// sans-IO core and its plug-ins do no I/O, read no clock and use no global
// randomness, and the simulator and the real datapath never meet.
package layering

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/sdrnet/sdrnet"

// corePackages are the sans-IO core and its plug-ins.
var corePackages = []string{
	"internal/core",
	"internal/monotime",
	"internal/reliability",
	"internal/wire",
	"internal/cc",
	"internal/path",
}

// forbiddenInCore are standard packages the core must not import: I/O,
// the process environment, and the global random source (math/rand/v2
// with an explicit seeded source is allowed).
var forbiddenInCore = map[string]bool{
	"net": true, "os": true, "os/exec": true, "math/rand": true, "syscall": true,
}

type pkg struct {
	path    string
	dir     string
	imports []string
	files   []string
}

// listDeps returns every package in the import graph of pattern, as
// `go list -deps` sees it.
func listDeps(t *testing.T, patterns ...string) map[string]pkg {
	t.Helper()
	args := append([]string{"list", "-deps", "-f", "{{.ImportPath}}|{{.Dir}}|{{join .Imports \" \"}}|{{join .GoFiles \" \"}}"}, patterns...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]pkg{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		if len(f) != 4 {
			continue
		}
		pkgs[f[0]] = pkg{path: f[0], dir: f[1], imports: strings.Fields(f[2]), files: strings.Fields(f[3])}
	}
	return pkgs
}

func ours(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

func TestCoreIsSansIO(t *testing.T) {
	var patterns []string
	for _, p := range corePackages {
		patterns = append(patterns, module+"/"+p+"/...")
	}
	deps := listDeps(t, patterns...)
	for _, p := range deps {
		if !ours(p.path) {
			continue
		}
		for _, imp := range p.imports {
			switch {
			case forbiddenInCore[imp]:
				t.Errorf("%s imports %s: the core does no I/O and uses no global randomness", p.path, imp)
			case strings.HasPrefix(imp, module+"/sim") || strings.Contains(imp, "/datapath"):
				t.Errorf("%s imports %s: the core knows neither the simulator nor the datapath", p.path, imp)
			}
		}
		if strings.HasSuffix(p.path, "/coretest") {
			continue // the test harness may use math/rand/v2 and the like
		}
		for _, f := range p.files {
			checkNoClock(t, filepath.Join(p.dir, f))
		}
	}
	if len(deps) == 0 {
		t.Fatal("go list found no packages")
	}
}

// checkNoClock fails if file calls time.Now, time.Since, time.Sleep or
// starts timers: time is passed into the core, never read by it.
func checkNoClock(t *testing.T, file string) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	timeName := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"time"` {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
	}
	if timeName == "" {
		return
	}
	banned := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true,
		"After": true, "AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName && banned[sel.Sel.Name] {
			t.Errorf("%s: uses time.%s; the core takes time as a parameter", fset.Position(sel.Pos()), sel.Sel.Name)
		}
		return true
	})
}

func TestSimulatorAndDatapathApart(t *testing.T) {
	deps := listDeps(t, module+"/...")
	for _, p := range deps {
		if !ours(p.path) {
			continue
		}
		inSim := strings.HasPrefix(p.path, module+"/sim")
		inDatapath := strings.Contains(p.path, "/datapath")
		for _, imp := range p.imports {
			if inSim && strings.Contains(imp, module+"/internal/datapath") {
				t.Errorf("%s imports %s: the simulator never uses the real datapath", p.path, imp)
			}
			if inDatapath && strings.HasPrefix(imp, module+"/sim") {
				t.Errorf("%s imports %s: the datapath never uses the simulator", p.path, imp)
			}
		}
	}
}

// TestInternalBelowSim: the shared pieces under internal/ sit below the
// simulator; none of them imports a package of it, so no arrow runs back
// up (the report, which is the simulator's, lives in sim/report).
func TestInternalBelowSim(t *testing.T) {
	for _, p := range listDeps(t, module+"/internal/...") {
		if !strings.HasPrefix(p.path, module+"/internal/") {
			continue
		}
		for _, imp := range p.imports {
			if strings.HasPrefix(imp, module+"/sim") {
				t.Errorf("%s imports %s: internal packages sit below the simulator", p.path, imp)
			}
		}
	}
}

// TestSimulatorRooms: each room of the simulator imports of sdrnet only
// the rooms below it, so nothing of networks creeps into the engine,
// nothing of hosts into the network elements, nothing of topologies into
// the hosts, and nothing of workloads into the topologies.
func TestSimulatorRooms(t *testing.T) {
	for _, room := range []struct {
		pkg, why string
		allowed  []string
	}{
		{"sim/engine", "the engine knows time and events only", []string{"internal/monotime"}},
		{"sim/network", "network elements know time, events and loss only",
			[]string{"internal/monotime", "internal/lossmodel", "sim/engine"}},
		{"sim/hostmodel", "hosts know the core and the network elements only",
			[]string{"internal/core", "internal/wire", "internal/monotime", "sim/engine", "sim/network"}},
		{"sim/topology", "topologies know hosts and network elements, not workloads",
			[]string{"internal/monotime", "sim/engine", "sim/network", "sim/hostmodel"}},
	} {
		allowed := map[string]bool{}
		for _, a := range room.allowed {
			allowed[module+"/"+a] = true
		}
		for _, p := range listDeps(t, module+"/"+room.pkg) {
			if p.path != module+"/"+room.pkg {
				continue
			}
			for _, imp := range p.imports {
				if ours(imp) && !allowed[imp] {
					t.Errorf("%s imports %s: %s", p.path, imp, room.why)
				}
			}
		}
	}
}
