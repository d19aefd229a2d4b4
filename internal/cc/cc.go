// Package cc holds congestion controllers: the policy that decides how
// many bytes a connection may have in flight and when its next data packet
// may leave. The core (internal/core) owns the mechanism - what is in
// flight, what was acknowledged, lost or timed out - and reports it here;
// a controller only answers with a window and a departure time.
//
// # Controllers
//
//   - None: no window and no pacing beyond what the connection's
//     configuration sets (the behaviour before this package existed).
//   - BBR: model-based, for wide-area paths (bbr.go): paces at the
//     measured delivery rate and bounds what is in flight at twice the
//     BDP; loss is congestion only where it comes with a queue. The real
//     transport's default.
//   - DCQCN: rate-based, after the ns-3 HPCC simulator's "Mellanox"
//     DCQCN (SIGCOMM'15): ECN echoes are congestion notifications (at most
//     one per CNPInterval), alpha and rate decrease, then fast recovery,
//     additive and hyper increase driven by a timer and a byte counter.
//   - NSCC: Ultra Ethernet's window law: a target queueing delay, the four
//     delay x ECN quadrants, fulfill adjustment, quick adapt, NACK
//     decrease, a window of at most 1.5 BDP (and a chunk's slack); on a
//     real host, a standing-queue filter, pacing and slow start
//     (nscc.go).
//   - Credit: receiver-driven (UET's RCCC, Meta's admission): receivers
//     grant senders credit paced to their line rate; senders run no
//     controller (credit.go, and the core's credit scheduler).
//
// # Contract
//
// The core calls, for each connection, with non-decreasing times:
//
//   - OnSend for every DATA or PARITY packet it puts on the wire (first
//     transmissions and retransmissions alike), with the packet's bytes on
//     the wire (header and payload);
//   - OnAck for every ACK that newly acknowledges bytes, with how many, an
//     RTT sample when the ACK gives a clean one (never for a retransmitted
//     chunk, Karn; on a real host without the hosts' own hold on the
//     ACK, which comes beside it), whether the receiver echoed a
//     congestion mark (ECN), and the bytes still in flight after it;
//   - OnLoss when the receiver NACKs bytes (Timeout false) or a
//     retransmission timer fires (Timeout true), with the bytes to resend;
//   - OnTimer at or after the time NextTimer returned, when that is not
//     Never (a spurious or late call is harmless).
//
// Before every data packet the core asks Window (the first pass sends only
// while the bytes in flight stay within it; zero means no limit) and
// NextSend (no data packet leaves before it). A controller's answers change
// only in its On* methods, so the core may cache them between calls.
//
// Controllers are sans-IO and deterministic: no clocks, no goroutines, no
// global randomness. A Controller is not safe for concurrent use. In steady
// state no method allocates.
package cc

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// Controller is one connection's congestion controller. See the package
// documentation for who calls what, and when.
type Controller interface {
	// OnSend records a data packet of bytes leaving at now.
	OnSend(now monotime.Time, bytes int)
	// OnAck records an ACK that newly acknowledged bytes.
	OnAck(now monotime.Time, a Ack)
	// OnLoss records bytes reported lost.
	OnLoss(now monotime.Time, l Loss)
	// OnTimer runs the controller's own timers (DCQCN's alpha and rate
	// increase timers).
	OnTimer(now monotime.Time)
	// NextTimer is when OnTimer is next due; monotime.Never if not.
	NextTimer() monotime.Time
	// Window is how many bytes may be in flight; zero: no limit.
	Window() int64
	// NextSend is the earliest time the next data packet may leave.
	NextSend() monotime.Time
	// Stats describes the controller's state, for reports.
	Stats() Stats
}

// Ack is what an acknowledgement tells the controller.
type Ack struct {
	Bytes int64             // newly acknowledged payload bytes
	RTT   monotime.Duration // a clean round-trip sample, or 0
	// HostDelay, with an RTT sample, is how long the two hosts held the
	// ACK on top of it (the receiver's reported delay, and the time from
	// its arrival here to now): its bytes stayed in flight that long
	// more. 0 in simulation.
	HostDelay monotime.Duration
	ECN       bool  // the receiver echoed a congestion mark
	InFlight  int64 // bytes still in flight after this ACK
}

// Loss is bytes the core learned were lost.
type Loss struct {
	Bytes   int64
	Timeout bool // a retransmission timer fired; false: the receiver NACKed
}

// Stats is a controller's state and what it reacted to.
type Stats struct {
	Window      int64   // current window in bytes; 0 when window-less
	Rate        float64 // current pacing rate in bits per second; 0 when unpaced
	Decreases   uint64  // times the window or rate was cut
	Congestions uint64  // congestion signals taken (ECN echoes, CNPs)
	// Losses the controller did not react to because the path showed no
	// congestion (random loss, not a queue).
	IgnoredLosses uint64
	// Queue is the queueing delay the controller steers by now (NSCC's
	// standing queue); zero for one that reads no delay.
	Queue monotime.Duration
}

// Figure is one of a controller's own figures, by name, for reports.
type Figure struct {
	Name  string
	Value float64
}

// Detailed is a controller with figures of its own beside Stats (NSCC's
// competitive mode), as quic-go's SendAlgorithmWithDebugInfos extends its
// controllers; a reader asks for them with a type assertion.
type Detailed interface {
	Detail() []Figure
}

// AppLimited is a controller that measures the path by what it delivers
// (BBR). The core calls OnAppLimited when its sender, with the window and
// the pacer open, has sent all the application gave it: until what is in
// flight is acknowledged, the ACKs measure the application, not the path
// (tcp_bbr's app_limited). A sender held by the receiver's credit is not
// application-limited, as TCP's held by the receive window is not.
type AppLimited interface {
	OnAppLimited(now monotime.Time)
}

// Params describe the network a controller starts on. The core fills them
// from its configuration; a zero field means unknown.
type Params struct {
	// LineRate is the sender's link rate in bits per second. Rate-based
	// controllers start at it; zero means DefaultLineRate.
	LineRate float64
	// BaseRTT is the unloaded round-trip time; zero means DefaultBaseRTT.
	// Window controllers size their maximum window as a multiple of
	// LineRate x BaseRTT.
	BaseRTT monotime.Duration
	// MSS is the payload bytes of a full packet; zero means 4096.
	MSS int
	// LearnLineRate says LineRate is a guess, not the link's rate (a real
	// host rarely knows its path's): a controller that can raises it
	// while its window is the only limit and the path shows no queue.
	LearnLineRate bool
	// Quantum is how many bytes the core admits into the window at a
	// time (a chunk: the receiver acknowledges whole chunks); zero means
	// MSS. A window-limited sender may sit up to a quantum below its
	// window.
	Quantum int
	// HostNoise is how late a real host's RTT samples run with no queue
	// (scheduling, timers, batching); zero in simulation. A delay-steered
	// controller keeps its target at least this high, reads the queue as
	// the least delay over several times it (noise comes and goes, a queue
	// stays), and steers by delay until ECN shows (NSCC's DelayWithoutECN).
	HostNoise monotime.Duration

	// baseRTTGuessed says WithDefaults filled BaseRTT: nobody measured
	// it (NSCCConfig.LearnBaseRTT).
	baseRTTGuessed bool
}

// Defaults of Params' zero fields.
const (
	DefaultLineRate = 100e9
	DefaultBaseRTT  = 12 * monotime.Microsecond
	DefaultMSS      = 4096
)

// WithDefaults returns p with its zero fields filled.
func (p Params) WithDefaults() Params {
	if p.LineRate <= 0 {
		p.LineRate = DefaultLineRate
	}
	if p.BaseRTT <= 0 {
		p.BaseRTT, p.baseRTTGuessed = DefaultBaseRTT, true
	}
	if p.MSS <= 0 {
		p.MSS = DefaultMSS
	}
	return p
}

// BDP is the bandwidth-delay product in bytes.
func (p Params) BDP() int64 { return int64(p.LineRate / 8 * p.BaseRTT.Seconds()) }

// Algorithm makes controllers of one kind. Its zero value is None. A
// receiver-driven algorithm (credit) has no sender controller: its
// receivers pace the credit they grant instead (ReceiverCredit).
type Algorithm struct {
	name   string
	make   func(Params) Controller
	credit bool
	// registered: one of the named algorithms, which Same can compare
	// by name (an algorithm's functions cannot be compared).
	registered bool
}

// Same reports whether a and b make the same controllers: both none, or
// the same named algorithm. One made by NewAlgorithm is the same as none
// but itself, and Same cannot tell, so it says no.
func (a Algorithm) Same(b Algorithm) bool {
	if a.IsNone() || b.IsNone() {
		return a.IsNone() && b.IsNone() && a.name == b.name
	}
	return a.registered && b.registered && a.name == b.name
}

// Name returns the algorithm's name, as Parse takes it.
func (a Algorithm) Name() string {
	if a.name == "" {
		return "none"
	}
	return a.name
}

// IsNone reports whether the algorithm controls nothing.
func (a Algorithm) IsNone() bool { return a.make == nil && !a.credit }

// ReceiverDriven reports whether receivers pace credit and senders run
// no controller (credit).
func (a Algorithm) ReceiverDriven() bool { return a.credit }

// ReceiverCredit returns the pacer of a receiver's credit grants for a
// receiver-driven algorithm, nil for a sender-driven one.
func (a Algorithm) ReceiverCredit(p Params) *CreditPacer {
	if !a.credit {
		return nil
	}
	p = p.WithDefaults()
	return NewCreditPacer(p.LineRate)
}

// New returns a controller for one connection, nil for None.
func (a Algorithm) New(p Params) Controller {
	if a.make == nil {
		return nil
	}
	return a.make(p.WithDefaults())
}

// NewAlgorithm returns an algorithm whose controllers make returns: a
// controller defined outside this package (a test's, an experiment's).
func NewAlgorithm(name string, make func(Params) Controller) Algorithm {
	return Algorithm{name: name, make: make}
}

// algorithms are the named controllers, registered by their files.
var algorithms = map[string]Algorithm{}

// register adds a named sender-driven controller; each controller's file
// calls it once.
func register(name string, make func(Params) Controller) {
	algorithms[name] = Algorithm{name: name, make: make, registered: true}
}

// registerReceiverDriven adds a named algorithm whose receivers pace
// credit and whose senders run no controller.
func registerReceiverDriven(name string) {
	algorithms[name] = Algorithm{name: name, credit: true, registered: true}
}

// Names returns the names Parse accepts, sorted.
func Names() []string {
	names := []string{"none"}
	for n := range algorithms {
		names = append(names, n)
	}
	slices.Sort(names[1:])
	return names
}

// Parse returns the algorithm named name.
func Parse(name string) (Algorithm, error) {
	if name == "" || name == "none" {
		return Algorithm{}, nil
	}
	if a, ok := algorithms[name]; ok {
		return a, nil
	}
	return Algorithm{}, fmt.Errorf("congestion control %q: want %s", name, strings.Join(Names(), ", "))
}
