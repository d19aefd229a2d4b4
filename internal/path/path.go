// Package path chooses, packet by packet, which of a connection's paths
// carries the next packet.
//
// A connection has 1..MaxPaths paths. A path is an index into the caller's
// list of entropy values: on a real network a UDP source port, in the
// simulator the input of the switches' ECMP hash. Spraying one connection
// over many entropies spreads it over many physical paths (UET and AWS SRD
// do exactly this).
//
// Like the rest of the core, the package is sans-IO: time is passed in,
// randomness comes from the seed given to New, and the same calls produce
// the same choices, bit for bit.
//
// # Selectors
//
//   - Single: every packet on path 0 (plain ECMP: the baseline).
//   - Oblivious (OBS): cycle through all paths in a random permutation,
//     drawing a fresh permutation every cycle (UET's oblivious load balancer,
//     Alibaba Stellar's OBS).
//   - RoundRobin: cycle through the paths in index order.
//   - BestRTT: the path with the lowest smoothed RTT; every ExploreEvery-th
//     packet instead goes to the next path of a round robin of the others,
//     so every path keeps getting RTT samples.
//   - DWRR: deficit weighted round robin, a path's weight following the
//     bytes acknowledged on it during the last window of DWRRWindowRTTs
//     smoothed RTTs, plus a constant 1/DWRRMinShare so that a path
//     delivering nothing still gets packets that measure it.
//
// Every selector keeps its per-path statistics, RTT and health in a Table
// (see TableOf). All selectors but Single skip failed paths and probe them;
// the rules are documented on Table.
//
// # Contract
//
// For every packet the caller calls Select, sends the packet on the returned
// path and calls OnSent; later exactly one of OnAcked or OnLost for that
// packet (a retransmission is a new packet). Calls carry non-decreasing
// times. A path index out of range panics. A Selector is not safe for
// concurrent use. In steady state no method allocates.
package path

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// MaxPaths is the most paths one connection may have (Stellar sprays over
// up to 128).
const MaxPaths = 128

// Selector picks the path of each packet and learns from what happens to
// the packets it placed.
type Selector interface {
	// Select returns the index of the path for the next packet.
	Select(now monotime.Time) int
	// OnSent records a packet of bytes sent on path.
	OnSent(now monotime.Time, path int, bytes int)
	// OnAcked records that a packet of bytes sent on path was acknowledged;
	// rtt is its round-trip sample, rtt <= 0 meaning no sample (for
	// example an ack of a retransmitted packet).
	OnAcked(now monotime.Time, path int, bytes int, rtt monotime.Duration)
	// OnLost records that a packet sent on path was declared lost.
	OnLost(now monotime.Time, path int)
	// OnForgotten withdraws a packet sent on path whose fate will never be
	// known (it was sent again before anything was heard of it): it no
	// longer counts as outstanding, nor as acked or lost.
	OnForgotten(path int)
	// OnCancelled withdraws a packet whose message ended before anything
	// was heard of it (the peer had it all): no sign of the path's health
	// either way.
	OnCancelled(path int)
}

// Kind names a selection policy. The zero value is Single.
type Kind uint8

// Selection policies.
const (
	Single Kind = iota
	Oblivious
	RoundRobin
	BestRTT
	DWRR
)

var kindNames = [...]string{
	Single:     "single",
	Oblivious:  "obs",
	RoundRobin: "rr",
	BestRTT:    "bestrtt",
	DWRR:       "dwrr",
}

const kindChoices = "single, obs, rr, bestrtt, dwrr"

// String returns the name ParseKind accepts.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind returns the Kind named s: one of single, obs, rr, bestrtt,
// dwrr (case does not matter).
func ParseKind(s string) (Kind, error) {
	for k, name := range kindNames {
		if strings.EqualFold(s, name) {
			return Kind(k), nil
		}
	}
	return 0, fmt.Errorf("unknown path selector %q: want one of %s", s, kindChoices)
}

// MarshalText implements encoding.TextMarshaler.
func (k Kind) MarshalText() ([]byte, error) {
	if int(k) >= len(kindNames) {
		return nil, fmt.Errorf("unknown path selector %d: want one of %s", uint8(k), kindChoices)
	}
	return []byte(k.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler, so a Kind can be a
// field of a scenario or config file.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// Tuning overrides a policy's constants for one selector; a zero field
// keeps the default.
type Tuning struct {
	// DWRRWindowRTTs replaces DWRRWindowRTTs: how many smoothed RTTs
	// DWRR's delivery-rate window spans, and so how stale the deliveries
	// its weights follow may be.
	DWRRWindowRTTs int
}

// MaxDWRRWindowRTTs bounds Tuning.DWRRWindowRTTs.
const MaxDWRRWindowRTTs = 1 << 16

// New returns a selector of the given kind over paths paths (1..MaxPaths)
// with the policies' default constants. seed drives every random choice
// the selector makes.
func New(kind Kind, paths int, seed uint64) (Selector, error) {
	return NewTuned(kind, paths, seed, Tuning{})
}

// Check reports a field out of its range.
func (t Tuning) Check() error {
	if t.DWRRWindowRTTs < 0 || t.DWRRWindowRTTs > MaxDWRRWindowRTTs {
		return fmt.Errorf("DWRR window of %d RTTs: want 1..%d, or 0 for the default", t.DWRRWindowRTTs, MaxDWRRWindowRTTs)
	}
	return nil
}

// NewTuned is New with the constants tune overrides.
func NewTuned(kind Kind, paths int, seed uint64, tune Tuning) (Selector, error) {
	if err := tune.Check(); err != nil {
		return nil, err
	}
	if paths < 1 || paths > MaxPaths {
		return nil, fmt.Errorf("path selector with %d paths: want 1..%d", paths, MaxPaths)
	}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	t := newTable(paths, rng)
	switch kind {
	case Single:
		return &single{base{t}}, nil
	case Oblivious:
		return &oblivious{base: base{t}, cycle: newPermutedCycle(paths, rng)}, nil
	case RoundRobin:
		return &roundRobin{base: base{t}, next: rng.IntN(paths)}, nil
	case BestRTT:
		return newBestRTT(t, rng.IntN(paths)), nil
	case DWRR:
		return newDWRR(t, rng.IntN(paths), cmp.Or(tune.DWRRWindowRTTs, DWRRWindowRTTs)), nil
	}
	return nil, fmt.Errorf("unknown path selector %v: want one of %s", kind, kindChoices)
}

// TableOf returns the per-path table of a selector made by New, or nil for
// any other Selector.
func TableOf(s Selector) *Table {
	if b, ok := s.(interface{ table() *Table }); ok {
		return b.table()
	}
	return nil
}

// base gives every selector its Table and the default reactions to sends,
// acks and losses.
type base struct{ t *Table }

func (b *base) table() *Table { return b.t }

func (b *base) OnSent(now monotime.Time, path int, bytes int) { b.t.sent(now, path, bytes) }

func (b *base) OnAcked(now monotime.Time, path int, bytes int, rtt monotime.Duration) {
	b.t.acked(now, path, bytes, rtt)
}

func (b *base) OnLost(now monotime.Time, path int) { b.t.lost(now, path) }

func (b *base) OnForgotten(path int) { b.t.forgotten(path) }

func (b *base) OnCancelled(path int) { b.t.cancelled(path) }
