// Package reliability holds the software reliability schemes that run above
// SDR's receive bitmap: selective repeat (RTO and NACK variants), erasure
// coding (Reed-Solomon MDS and XOR, with a selective-repeat fallback),
// go-back-N with RoCE RC semantics, CSA-UD's semantic-aware recovery, and
// none.
//
// A Scheme is policy: when a sender retransmits, whether and when a receiver
// NACKs, whether packets must arrive in order, which erasure code protects a
// message. The mechanism (slots, generations, bitmaps, CTS, the timer table,
// the transmit queue) is the core's; the core calls the Scheme of each
// message through the hooks documented in hooks.go and never asks which
// scheme it is. Each scheme is one file (none.go, gbn.go, sr.go, srnack.go,
// ec.go, csaud.go) and registers itself under its wire kind and name, so a
// new scheme is a new file, here or elsewhere (Register), and no edit of
// the core.
package reliability

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

// Kind identifies a scheme on the wire (one byte in every DATA packet), so
// the receiver of a message knows its policy without negotiation.
type Kind uint8

// Scheme kinds. The numbers travel on the wire: never renumber one.
const (
	KindNone    Kind = 1
	KindGoBackN Kind = 2
	KindSRRTO   Kind = 3
	KindSRNACK  Kind = 4
	KindECMDS   Kind = 5
	KindECXOR   Kind = 6
	KindCSAUD   Kind = 7
)

func (k Kind) String() string {
	if k.Valid() {
		return registry[k].name
	}
	return "unknown(" + strconv.Itoa(int(k)) + ")"
}

// Valid reports whether k names a scheme.
func (k Kind) Valid() bool { return registry[k].name != "" }

// Scheme is a reliability policy. Implementations are small immutable
// values, safe to share between connections; what a scheme remembers about
// one message lives in the core's slot (RecvState), not in the Scheme.
type Scheme interface {
	// Kind identifies the scheme on the wire.
	Kind() Kind
	// Code returns the erasure code protecting each sub-message, or nil.
	Code() Codec
	// Acknowledged reports whether the receiver acknowledges the
	// message's packets. A sender counts unacknowledged packets in
	// flight and finishes an unacknowledged message when its one pass
	// has left.
	Acknowledged() bool
	// InOrder reports whether the receiver accepts only the next expected
	// packet; its ACKs then count packets cumulatively (go-back-N).
	InOrder() bool
	// RetransmitTimeout is the sender's per-chunk timeout given the current
	// smoothed RTT. A chunk that is not acknowledged this long after it was
	// (re)sent is sent again. For EC it is only a backstop for a lost
	// fallback NACK; it is zero for schemes that never retransmit.
	RetransmitTimeout(rtt monotime.Duration) monotime.Duration
	// NackDelay is how long a receiver lets a gap stand before it NACKs
	// the missing packets (reordering tolerance). Zero: it never NACKs gaps.
	NackDelay(rtt monotime.Duration) monotime.Duration
	// FallbackTimeout is the receiver's wait, from the first packet of a
	// message, before it NACKs what erasure decoding could not recover:
	// the injection time of data and parity plus b*RTT. Zero without a
	// code.
	FallbackTimeout(injection, rtt monotime.Duration) monotime.Duration

	ReceiverHooks
	SenderHooks
}

// registration is what a scheme's file tells the package about it.
type registration struct {
	name    string
	aliases []string
	// params: the scheme takes ":K,M" (an erasure code).
	params bool
	// make builds the scheme with its default settings; k and m are the
	// code's parameters where params is set.
	make func(k, m int) (Scheme, error)
}

// registry holds the schemes by kind: every value of the wire's byte.
var registry [1 << 8]registration

// register is called by each scheme's file, from init.
func register(k Kind, r registration) { registry[k] = r }

// Register adds scheme s under its wire kind and name, as each scheme's
// file here does, for a scheme written elsewhere (a variant of one of
// these): called from its init, it lets Parse read the name and a
// receiver take the kind, and the core carries the scheme like any other.
// The built-in schemes take kinds 1 to 7.
func Register(name string, s Scheme) error {
	k := s.Kind()
	switch {
	case k == 0:
		return fmt.Errorf("scheme %q: kind 0 names no scheme", name)
	case registry[k].name != "":
		return fmt.Errorf("scheme %q: kind %d is taken by %s", name, k, registry[k].name)
	case name == "" || strings.ContainsAny(name, ":, "):
		return fmt.Errorf("scheme name %q: want a word without ':', ',' or spaces", name)
	}
	for _, r := range registry {
		if r.name == name || slices.Contains(r.aliases, name) {
			return fmt.Errorf("scheme name %q is taken", name)
		}
	}
	register(k, registration{name: name, make: func(_, _ int) (Scheme, error) { return s, nil }})
	return nil
}

// ForWire returns the scheme of kind k with its default settings, for a
// message whose packets name k and (for a code) K and M; nil if no scheme
// or code has those parameters.
func ForWire(k Kind, codeK, codeM uint8) Scheme {
	if !k.Valid() {
		return nil
	}
	s, err := registry[k].make(int(codeK), int(codeM))
	if err != nil {
		return nil
	}
	return s
}

// Parse reads a scheme name as the CLI spells it: none, gbn, sr (or sr-rto),
// sr-nack, ec[:K,M] (Reed-Solomon MDS), xor[:K,M] and csaud. K and M
// default to 32 and 8.
func Parse(s string) (Scheme, error) {
	name, params, hasParams := strings.Cut(s, ":")
	var reg *registration
	for k := range registry {
		r := &registry[k]
		if r.name != "" && (r.name == name || slices.Contains(r.aliases, name)) {
			reg = r
		}
	}
	if reg == nil {
		return nil, fmt.Errorf("unknown scheme %q: want %s", s, schemeNames())
	}
	if hasParams && !reg.params {
		return nil, fmt.Errorf("scheme %q: only %s take parameters (K,M)", s, paramNames())
	}
	k, m := DefaultK, DefaultM
	if hasParams {
		ks, ms, ok := strings.Cut(params, ",")
		var err1, err2 error
		k, err1 = strconv.Atoi(ks)
		m, err2 = strconv.Atoi(ms)
		if !ok || err1 != nil || err2 != nil {
			return nil, fmt.Errorf("scheme %q: want %s:K,M with integers, e.g. %s:32,8", s, name, name)
		}
	}
	scheme, err := reg.make(k, m)
	if err != nil {
		return nil, fmt.Errorf("scheme %q: %w", s, err)
	}
	return scheme, nil
}

// schemeNames lists the names Parse reads, for its error message.
func schemeNames() string {
	var names []string
	for _, r := range registry {
		switch {
		case r.name == "":
		case r.params:
			names = append(names, r.name+":K,M")
		default:
			names = append(names, r.name)
		}
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func paramNames() string {
	var names []string
	for _, r := range registry {
		if r.params {
			names = append(names, r.name)
		}
	}
	return strings.Join(names, " and ")
}

// Name formats s the way Parse reads it.
func Name(s Scheme) string {
	if c := s.Code(); c != nil {
		return fmt.Sprintf("%s:%d,%d", s.Kind(), c.K(), c.M())
	}
	return s.Kind().String()
}
