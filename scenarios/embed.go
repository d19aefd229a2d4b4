// Package scenarios holds the scenario files that reproduce the papers'
// results, embedded so the binary runs them without the source tree.
package scenarios

import "embed"

// FS holds every scenario file of this directory, and the traces the
// training scenarios replay.
//
//go:embed *.yaml traces
var FS embed.FS

// Default is the scenario `sdrnet sim` runs when given none.
const Default = "sdr-longhaul.yaml"
