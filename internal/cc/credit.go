package cc

import "github.com/sdrnet/sdrnet/internal/monotime"

// Credit is receiver-driven congestion control (Ultra Ethernet's RCCC,
// Meta's receiver-driven admission): senders send only as far as their
// credit reaches, and a receiver grants it a quantum at a time, round-robin,
// no faster than its line rate, so an incast queues at the senders, not
// the fabric. Senders run no controller: a hot spine is left to NSCC.
func init() { registerReceiverDriven("credit") }

// CreditPacer spaces a receiver's grants to its line rate. The core calls
// Ready before each grant and Granted after it, with non-decreasing times,
// and Resume when it has something to grant after a time with nothing.
type CreditPacer struct {
	rate float64
	next monotime.Time
	// lag is how far behind schedule a busy pacer may fall and still
	// catch up: a real driver wakes late (timer granularity, scheduling),
	// and without it each late wake-up would lose rate for good. Idle
	// time is never banked (Resume).
	lag monotime.Duration
}

// creditLag is the catch-up a busy pacer allows: a few timer ticks of a
// loaded host, a burst the receiver's link absorbs in that time.
const creditLag = 200 * monotime.Microsecond

// NewCreditPacer returns a pacer granting rate bits per second.
func NewCreditPacer(rate float64) *CreditPacer { return &CreditPacer{rate: rate, lag: creditLag} }

// Ready reports whether a grant may go at now.
func (p *CreditPacer) Ready(now monotime.Time) bool { return now >= p.next }

// Next is when the next grant may go.
func (p *CreditPacer) Next() monotime.Time { return p.next }

// Refund gives back bytes granted that will never be sent (credit for a
// buffer larger than its message).
func (p *CreditPacer) Refund(bytes int64) {
	p.next = p.next.Add(-monotime.TransmitTime(int(bytes), p.rate))
}

// Granted records bytes granted at now. A pacer behind schedule by up to
// its lag keeps its schedule, so late wake-ups cost no rate.
func (p *CreditPacer) Granted(now monotime.Time, bytes int64) {
	p.next = max(p.next, now.Add(-p.lag)).Add(monotime.TransmitTime(int(bytes), p.rate))
}

// Resume starts the schedule afresh at now after a time with nothing to
// grant: the receiver's idle time is not banked as a burst.
func (p *CreditPacer) Resume(now monotime.Time) { p.next = max(p.next, now) }
