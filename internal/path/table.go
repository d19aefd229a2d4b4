package path

import (
	"math/rand/v2"

	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
)

// Health rules. See Table.
const (
	// LossThreshold consecutive losses on a path (no ack in between) fail it.
	LossThreshold = 3
	// SilenceRTTs: a path with packets outstanding and no ack for this many
	// smoothed RTTs fails.
	SilenceRTTs = 4
	// MinSilence is the shortest silence that fails a path, however small
	// its RTT; it is also the RTT assumed for probe timing on a path that
	// failed before any RTT sample.
	MinSilence = 20 * monotime.Microsecond
	// MaxProbeBackoff caps a failed path's probe interval at this many times
	// its first interval.
	MaxProbeBackoff = 32
)

// Stats are one path's counters and state.
type Stats struct {
	Sent, SentBytes   uint64
	Acked, AckedBytes uint64
	Lost              uint64
	// SRTT is the path's smoothed RTT; zero before its first sample.
	SRTT monotime.Duration
	// State is "up" or "failed".
	State string
}

// Table holds the per-path state every selector shares: counters, a
// smoothed RTT (RFC 6298 gains, reliability.RTT) per path and one for the
// whole connection, and health.
//
// Health. A path is up or failed. An up path fails when either
//
//   - LossThreshold (3) of its packets in a row are reported lost, or
//   - it has packets outstanding (sent, neither acked nor lost) and nothing
//     was acked on it for max(SilenceRTTs*SRTT, SRTT+4*RTTVAR, MinSilence),
//     that is max(4 SRTT, SRTT + 4 RTTVAR, 20 us), counted from its last ack
//     or from when it last went from nothing outstanding to something
//     outstanding, whichever is later. SRTT and RTTVAR are the path's own,
//     or the connection's while the path has no sample; before the
//     connection's first RTT sample this rule is off.
//
// Silence is checked without timers, on the calls that carry time: on
// every Select for the path Select is about to return and for one more path
// in turn (so each path is checked at least every Len() Selects), and on
// OnSent for the path sent on.
//
// A failed path is skipped by Select and probed: its first probe is due one
// RTT (its SRTT, else the connection's, else MinSilence) after it failed,
// and after each probe the interval doubles, up to MaxProbeBackoff (32) times
// the first. Select returns a path whose probe is due once, ahead of its
// policy's choice. Any ack on a failed path (a probe's or a late one)
// restores it. When every path is failed, Select returns every path once per
// cycle, in an order drawn afresh each cycle, so sending never stalls.
//
// Single keeps the table (counters, RTT, state) but always returns path 0.
type Table struct {
	paths []pathState
	conn  reliability.RTT // every sample of every path
	up    int             // paths not failed

	// version changes whenever a path fails or is restored, so selectors
	// caching a view of health know to rebuild it.
	version uint64
	// nextProbe is no later than the earliest probe due; Never when no
	// path is failed.
	nextProbe monotime.Time
	sweep     int           // next path checked for silence by Select
	turn      int           // next path pickable tries
	fallback  permutedCycle // the paths to use when every path is failed
}

type pathState struct {
	rtt               reliability.RTT
	sent, sentBytes   uint64
	acked, ackedBytes uint64
	lost              uint64
	outstanding       uint64
	lossRun           uint32 // consecutive losses
	failed            bool
	// unresolved: packets were withdrawn (forgotten) since the last ack,
	// so running out of outstanding packets was no sign of health and
	// must not restart the silence clock.
	unresolved             bool
	lastProgress           monotime.Time // last ack, or start of the outstanding period
	probeAt                monotime.Time
	probeEvery, probeLimit monotime.Duration
}

func newTable(n int, rng *rand.Rand) *Table {
	start := rng.IntN(n)
	return &Table{paths: make([]pathState, n), up: n, nextProbe: monotime.Never, sweep: start, turn: start,
		fallback: newPermutedCycle(n, rng)}
}

// Len returns the number of paths.
func (t *Table) Len() int { return len(t.paths) }

// Up reports whether path is up (not failed).
func (t *Table) Up(path int) bool { return !t.paths[path].failed }

// UpCount returns how many paths are up.
func (t *Table) UpCount() int { return t.up }

// Stats returns path's counters and state.
func (t *Table) Stats(path int) Stats {
	p := &t.paths[path]
	s := Stats{Sent: p.sent, SentBytes: p.sentBytes, Acked: p.acked, AckedBytes: p.ackedBytes, Lost: p.lost, State: "up"}
	if p.rtt.Samples() > 0 {
		s.SRTT = p.rtt.Smoothed()
	}
	if p.failed {
		s.State = "failed"
	}
	return s
}

// rttOf returns the RTT estimator that applies to path i:
// its own, else the connection's; ok is false before any sample.
func (t *Table) rttOf(i int) (r *reliability.RTT, ok bool) {
	if r = &t.paths[i].rtt; r.Samples() > 0 {
		return r, true
	}
	r = &t.conn
	return r, r.Samples() > 0
}

// silence returns how long path i may go without an ack while it has
// packets outstanding; ok is false while no RTT is known.
func (t *Table) silence(i int) (d monotime.Duration, ok bool) {
	r, ok := t.rttOf(i)
	if !ok {
		return 0, false
	}
	return max(SilenceRTTs*r.Smoothed(), r.Conservative(), MinSilence), true
}

// usable reports whether path i may carry ordinary traffic at now, first
// failing it if it has gone silent.
func (t *Table) usable(now monotime.Time, i int) bool {
	p := &t.paths[i]
	if p.failed {
		return false
	}
	if p.outstanding > 0 {
		if d, ok := t.silence(i); ok && now.Sub(p.lastProgress) >= d {
			t.fail(now, i)
			return false
		}
	}
	return true
}

func (t *Table) fail(now monotime.Time, i int) {
	p := &t.paths[i]
	p.failed = true
	t.up--
	t.version++
	first := MinSilence
	if r, ok := t.rttOf(i); ok {
		first = max(r.Smoothed(), monotime.Nanosecond)
	}
	p.probeEvery, p.probeLimit = first, MaxProbeBackoff*first
	p.probeAt = now.Add(first)
	t.nextProbe = min(t.nextProbe, p.probeAt)
}

func (t *Table) restore(now monotime.Time, i int) {
	p := &t.paths[i]
	p.failed = false
	p.lossRun = 0
	p.lastProgress = now
	t.up++
	t.version++
	// t.nextProbe may now be early; the next probe scan corrects it.
}

// preselect does what every health-aware selector does before applying its
// policy: check one more path for silence, then, when every path is failed,
// return the next in round robin, else return a failed path whose probe is
// due. ok is false when the policy should choose.
func (t *Table) preselect(now monotime.Time) (int, bool) {
	t.usable(now, t.sweep)
	if t.sweep++; t.sweep == len(t.paths) {
		t.sweep = 0
	}
	if t.up == 0 {
		return t.next(), true
	}
	if now >= t.nextProbe {
		return t.probe(now)
	}
	return 0, false
}

// next returns every path once per cycle regardless of health, in an order
// drawn afresh each cycle: the answer when every path is failed. A fixed
// order can resonate with the sender: go-back-N, resending from each gap,
// sent its every gap packet down the same dead path when a round trip held
// a multiple of the path count.
func (t *Table) next() int { return t.fallback.next() }

// probe returns the failed path whose probe is most overdue, if any is due
// at now, and schedules its next probe. It recomputes nextProbe.
func (t *Table) probe(now monotime.Time) (int, bool) {
	due, earliest := -1, monotime.Never
	for i := range t.paths {
		p := &t.paths[i]
		if p.failed && p.probeAt <= now && (due < 0 || p.probeAt < t.paths[due].probeAt) {
			due = i
		}
	}
	if due >= 0 {
		p := &t.paths[due]
		p.probeEvery = min(2*p.probeEvery, p.probeLimit)
		p.probeAt = now.Add(p.probeEvery)
	}
	for i := range t.paths {
		if p := &t.paths[i]; p.failed {
			earliest = min(earliest, p.probeAt)
		}
	}
	t.nextProbe = earliest
	return due, due >= 0
}

// PickUp returns an up path, in round robin (every path when none is
// up), for a packet that must not go down a failed one.
func (t *Table) PickUp(now monotime.Time) int { return t.pickable(now) }

// pickable falls back when a policy found no usable path (the last ones
// failed while it looked): round robin over the up paths, else next (every
// path failed).
func (t *Table) pickable(now monotime.Time) int {
	for range t.paths {
		i := t.turn
		if t.turn++; t.turn == len(t.paths) {
			t.turn = 0
		}
		if t.usable(now, i) {
			return i
		}
	}
	return t.next()
}

func (t *Table) sent(now monotime.Time, i int, bytes int) {
	p := &t.paths[i]
	if !p.failed {
		t.usable(now, i) // a silent path fails before this send restarts its clock
	}
	p.sent++
	p.sentBytes += uint64(bytes)
	if p.outstanding == 0 && !p.unresolved {
		p.lastProgress = max(p.lastProgress, now)
	}
	p.outstanding++
}

func (t *Table) acked(now monotime.Time, i int, bytes int, rtt monotime.Duration) {
	p := &t.paths[i]
	p.acked++
	p.ackedBytes += uint64(bytes)
	if p.outstanding > 0 {
		p.outstanding--
	}
	p.lossRun = 0
	p.unresolved = false
	p.lastProgress = max(p.lastProgress, now)
	if rtt > 0 {
		p.rtt.Update(rtt)
		t.conn.Update(rtt)
	}
	if p.failed {
		t.restore(now, i)
	}
}

func (t *Table) forgotten(i int) {
	p := &t.paths[i]
	if p.outstanding > 0 {
		p.outstanding--
	}
	p.unresolved = true
}

func (t *Table) cancelled(i int) {
	if p := &t.paths[i]; p.outstanding > 0 {
		p.outstanding--
	}
}

func (t *Table) lost(now monotime.Time, i int) {
	p := &t.paths[i]
	p.lost++
	if p.outstanding > 0 {
		p.outstanding--
	}
	if p.lossRun++; p.lossRun >= LossThreshold && !p.failed {
		t.fail(now, i)
	}
}
