// Package fidelity guards the papers' results: its tests run the
// simulated long haul against the analytic model (internal/model) and
// every built-in scenario's claims on a reduced grid, and fail naming
// the cell and the figure when a change moves a reproduction. It holds
// no code of its own; `go test ./sim/fidelity` is the suite, which CI
// runs with the rest.
package fidelity
