package core

import "github.com/sdrnet/sdrnet/internal/monotime"

// What held a sender back, over time: Linux's TCP chronographs (tcp_info's
// busy time, rwnd-limited and sndbuf-limited times, `ss -i`'s "busy:
// rwnd_limited:"), here with the congestion window as a state of its own.
// A connection that paces at the link's rate and still leaves the link
// part idle was either held by its window or had nothing to send; these
// say which, and for how long.

// sendState is what a sender's last poll found.
type sendState uint8

const (
	sendIdle     sendState = iota // nothing to send: the application's data all sent
	sendBusy                      // sending, or waiting for the pacer
	sendWindow                    // held by the congestion window
	sendCredit                    // held by the receiver's grant (CTS or credit)
	sendInflight                  // held by Config.MaxBytesInFlight
)

// SendTimes are how long a connection's sender spent in each state, up to
// its last poll. A pacer's wait is busy whatever follows it (as in
// Linux's chronographs): a rate-based controller (DCQCN) and NSCC's pacing
// show as busy, never window-limited, and the pacing gap after a
// sender's last packet is busy until the pacer's timer fires.
type SendTimes struct {
	// Busy is time spent sending or waiting for the pacer.
	Busy monotime.Duration
	// WindowLimited is time held back by the congestion controller's
	// window with data to send.
	WindowLimited monotime.Duration
	// CreditLimited is time held back by the receiver: no clear-to-send
	// for the next message, or not enough of its credit.
	CreditLimited monotime.Duration
	// InflightLimited is time held back by Config.MaxBytesInFlight.
	InflightLimited monotime.Duration
}

// sendChrono times a sender's states.
type sendChrono struct {
	since     monotime.Time // when state began
	last      monotime.Time // the last poll
	durations [sendInflight + 1]monotime.Duration
	state     sendState
	held      sendState // why pollFirstPass returned nothing
}

// note records the state a poll at now found; one compare when unchanged.
func (c *sendChrono) note(now monotime.Time, st sendState) {
	c.last = now
	if st == c.state {
		return
	}
	// From the zero time, the first state's span goes to sendIdle,
	// which is not reported.
	c.durations[c.state] += now.Sub(c.since)
	c.state, c.since = st, now
}

// times returns the totals, the current state's time up to the last poll
// included.
func (c *sendChrono) times() SendTimes {
	d := c.durations
	d[c.state] += c.last.Sub(c.since)
	return SendTimes{Busy: d[sendBusy], WindowLimited: d[sendWindow],
		CreditLimited: d[sendCredit], InflightLimited: d[sendInflight]}
}
