// Package buildinfo names the build of the running binary, as the Go
// toolchain recorded it: what `sdrnet --version` prints, and what a sweep
// checks every task was run with.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Version is the module version and the VCS revision the binary was built
// from, the Go version and the architecture: "v1.2.3, go1.26.8 amd64"
// from go install, "(devel) a1b2c3d4e5f6+dirty (2026-11-24T10:00:00Z),
// go1.26.8 amd64" from a checkout. The architecture is part of it because
// floating-point results may differ between architectures (arm64 fuses
// multiply-adds), and a sweep's cells must merge byte for byte.
func Version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information), " + runtime.Version() + " " + runtime.GOARCH
	}
	v := bi.Main.Version
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(12, len(s.Value))]
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" {
		v += " " + rev + dirty
		if at != "" {
			v += " (" + at + ")"
		}
	}
	return v + ", " + bi.GoVersion + " " + runtime.GOARCH
}
