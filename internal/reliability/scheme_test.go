package reliability

import (
	"strconv"
	"strings"
	"testing"

	"github.com/sdrnet/sdrnet/internal/monotime"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in      string
		kind    Kind
		k, m    int // zero when the scheme has no code
		inOrder bool
		name    string
	}{
		{"none", KindNone, 0, 0, false, "none"},
		{"gbn", KindGoBackN, 0, 0, true, "gbn"},
		{"sr", KindSRRTO, 0, 0, false, "sr"},
		{"sr-rto", KindSRRTO, 0, 0, false, "sr"},
		{"sr-nack", KindSRNACK, 0, 0, false, "sr-nack"},
		{"ec", KindECMDS, DefaultK, DefaultM, false, "ec:32,8"},
		{"xor", KindECXOR, DefaultK, DefaultM, false, "xor:32,8"},
		{"ec:32,8", KindECMDS, 32, 8, false, "ec:32,8"},
		{"xor:4,2", KindECXOR, 4, 2, false, "xor:4,2"},
		{"ec:10,3", KindECMDS, 10, 3, false, "ec:10,3"},
		{"ec:1,1", KindECMDS, 1, 1, false, "ec:1,1"},
		{"ec:63,1", KindECMDS, 63, 1, false, "ec:63,1"},
		{"xor:32,32", KindECXOR, 32, 32, false, "xor:32,32"},
		{"csaud", KindCSAUD, 0, 0, false, "csaud"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.in, err)
			continue
		}
		if s.Kind() != tt.kind {
			t.Errorf("Parse(%q).Kind() = %v, want %v", tt.in, s.Kind(), tt.kind)
		}
		if s.InOrder() != tt.inOrder {
			t.Errorf("Parse(%q).InOrder() = %v, want %v", tt.in, s.InOrder(), tt.inOrder)
		}
		code := s.Code()
		switch {
		case tt.k == 0 && code != nil:
			t.Errorf("Parse(%q).Code() = %T, want nil", tt.in, code)
		case tt.k != 0 && code == nil:
			t.Errorf("Parse(%q).Code() = nil, want (%d,%d)", tt.in, tt.k, tt.m)
		case tt.k != 0 && (code.K() != tt.k || code.M() != tt.m):
			t.Errorf("Parse(%q).Code() is (%d,%d), want (%d,%d)", tt.in, code.K(), code.M(), tt.k, tt.m)
		}
		name := Name(s)
		if name != tt.name {
			t.Errorf("Name(Parse(%q)) = %q, want %q", tt.in, name, tt.name)
		}
		// The CLI prints Name in reports and users paste it back.
		again, err := Parse(name)
		if err != nil {
			t.Errorf("Parse(Name(Parse(%q))) = Parse(%q): %v", tt.in, name, err)
			continue
		}
		if Name(again) != name || again.Kind() != s.Kind() {
			t.Errorf("round trip of %q: %q (%v), want %q (%v)", tt.in, Name(again), again.Kind(), name, s.Kind())
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string // substring that tells the user what is wrong
	}{
		{"ec:a,b", "integers"},
		{"ec:32", "integers"},
		{"ec:", "integers"},
		{"ec:32,8,1", "integers"},
		{"xor:4,", "integers"},
		{"foo", "unknown scheme"},
		{"", "unknown scheme"},
		{"EC", "unknown scheme"},
		{"ec:60,10", "K+M <= 64"},
		{"ec:0,8", "1 <= K"},
		{"ec:32,-1", "1 <= M"},
		{"xor:2,4", "M <= K"},
	}
	for _, tt := range tests {
		s, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) = %v, want an error", tt.in, Name(s))
			continue
		}
		if s != nil {
			t.Errorf("Parse(%q) returned %v along with its error", tt.in, s)
		}
		msg := err.Error()
		if !strings.Contains(msg, strconv.Quote(tt.in)) || !strings.Contains(msg, tt.want) {
			t.Errorf("Parse(%q) error %q, want it to quote the input and mention %q", tt.in, msg, tt.want)
		}
	}
}

// must is for constructors whose arguments are constants known to be valid.
func must[C Codec](c C, err error) C {
	if err != nil {
		panic(err)
	}
	return c
}

func TestRetransmitTimeout(t *testing.T) {
	const rtt = 25 * monotime.Millisecond // the paper's 3750 km long haul
	mds := must(NewMDS(32, 8))
	tests := []struct {
		name string
		s    Scheme
		want monotime.Duration
	}{
		// SR-RTO in the paper waits 3 RTT: RTT + a*RTT with a = 2.
		{"sr", SelectiveRepeat{}, 3 * rtt},
		{"sr-nack", SelectiveRepeat{NACK: true}, 3 * rtt},
		{"sr a=1", SelectiveRepeat{A: 1}, 2 * rtt},
		{"sr a=0.5", SelectiveRepeat{A: 0.5}, rtt + rtt/2},
		{"sr a=4", SelectiveRepeat{A: 4}, 5 * rtt},
		{"gbn", GoBackN{}, 3 * rtt},
		{"gbn a=1", GoBackN{A: 1}, 2 * rtt},
		{"none", None{}, 0},
		// EC's timer backs up a lost fallback NACK: b RTT of fallback
		// slack, the NACK's round trip, then an ordinary RTO.
		{"ec", NewErasureCoding(mds, 0), (DefaultRTOFactor + 2 + DefaultFallbackB) * rtt},
		{"ec b=2", NewErasureCoding(mds, 2), (DefaultRTOFactor + 2 + 2) * rtt},
	}
	for _, tt := range tests {
		if got := tt.s.RetransmitTimeout(rtt); got != tt.want {
			t.Errorf("%s: RetransmitTimeout(%v) = %v, want %v", tt.name, rtt, got, tt.want)
		}
	}
}

func TestNackDelay(t *testing.T) {
	const us = monotime.Microsecond
	mds := must(NewMDS(32, 8))
	tests := []struct {
		name string
		s    Scheme
		rtt  monotime.Duration
		want monotime.Duration
	}{
		{"sr-rto never nacks", SelectiveRepeat{}, 80 * us, 0},
		{"sr-nack rtt/8", SelectiveRepeat{NACK: true}, 80 * us, 10 * us},
		{"sr-nack long haul", SelectiveRepeat{NACK: true}, 25 * monotime.Millisecond, 25 * monotime.Millisecond / 8},
		{"sr-nack at floor", SelectiveRepeat{NACK: true}, 8 * us, us},
		// Below the floor a NACK would race packets still in the switch.
		{"sr-nack floored", SelectiveRepeat{NACK: true}, 4 * us, us},
		{"sr-nack no rtt yet", SelectiveRepeat{NACK: true}, 0, us},
		{"sr-nack fraction", SelectiveRepeat{NACK: true, NackFraction: 0.5}, 80 * us, 40 * us},
		{"gbn naks at once", GoBackN{}, 80 * us, 0},
		{"none", None{}, 80 * us, 0},
		{"ec waits for FTO", NewErasureCoding(mds, 0), 80 * us, 0},
	}
	for _, tt := range tests {
		if got := tt.s.NackDelay(tt.rtt); got != tt.want {
			t.Errorf("%s: NackDelay(%v) = %v, want %v", tt.name, tt.rtt, got, tt.want)
		}
	}
}

func TestFallbackTimeout(t *testing.T) {
	const (
		inj = 3 * monotime.Millisecond
		rtt = 25 * monotime.Millisecond
	)
	mds := must(NewMDS(32, 8))
	xor := must(NewXOR(32, 8))
	tests := []struct {
		name string
		s    Scheme
		want monotime.Duration
	}{
		{"ec default b=1", NewErasureCoding(mds, 0), inj + rtt},
		{"xor default b=1", NewErasureCoding(xor, 0), inj + rtt},
		{"ec b=2", NewErasureCoding(mds, 2), inj + 2*rtt},
		{"ec b=0.5", NewErasureCoding(mds, 0.5), inj + rtt/2},
		{"sr", SelectiveRepeat{}, 0},
		{"sr-nack", SelectiveRepeat{NACK: true}, 0},
		{"gbn", GoBackN{}, 0},
		{"none", None{}, 0},
	}
	for _, tt := range tests {
		if got := tt.s.FallbackTimeout(inj, rtt); got != tt.want {
			t.Errorf("%s: FallbackTimeout(%v, %v) = %v, want %v", tt.name, inj, rtt, got, tt.want)
		}
	}
}

func TestSchemeShape(t *testing.T) {
	mds := must(NewMDS(4, 2))
	xor := must(NewXOR(4, 2))
	tests := []struct {
		s       Scheme
		kind    Kind
		inOrder bool
		code    Codec
	}{
		{None{}, KindNone, false, nil},
		{GoBackN{}, KindGoBackN, true, nil},
		{SelectiveRepeat{}, KindSRRTO, false, nil},
		{SelectiveRepeat{NACK: true}, KindSRNACK, false, nil},
		{NewErasureCoding(mds, 0), KindECMDS, false, mds},
		{NewErasureCoding(xor, 0), KindECXOR, false, xor},
	}
	for _, tt := range tests {
		if got := tt.s.Kind(); got != tt.kind {
			t.Errorf("%T.Kind() = %v, want %v", tt.s, got, tt.kind)
		}
		if got := tt.s.InOrder(); got != tt.inOrder {
			t.Errorf("%v.InOrder() = %v, want %v", tt.kind, got, tt.inOrder)
		}
		if got := tt.s.Code(); got != tt.code {
			t.Errorf("%v.Code() = %v, want %v", tt.kind, got, tt.code)
		}
	}
}

func TestKind(t *testing.T) {
	// Kinds travel in every DATA packet: renumbering one breaks interop
	// with peers built from an older tree.
	tests := []struct {
		k     Kind
		wire  uint8
		str   string
		valid bool
	}{
		{0, 0, "unknown(0)", false},
		{KindNone, 1, "none", true},
		{KindGoBackN, 2, "gbn", true},
		{KindSRRTO, 3, "sr", true},
		{KindSRNACK, 4, "sr-nack", true},
		{KindECMDS, 5, "ec", true},
		{KindECXOR, 6, "xor", true},
		{KindCSAUD, 7, "csaud", true},
		{8, 8, "unknown(8)", false},
		{255, 255, "unknown(255)", false},
	}
	for _, tt := range tests {
		if uint8(tt.k) != tt.wire {
			t.Errorf("%s is %d on the wire, want %d", tt.str, uint8(tt.k), tt.wire)
		}
		if got := tt.k.String(); got != tt.str {
			t.Errorf("Kind(%d).String() = %q, want %q", tt.wire, got, tt.str)
		}
		if got := tt.k.Valid(); got != tt.valid {
			t.Errorf("Kind(%d).Valid() = %v, want %v", tt.wire, got, tt.valid)
		}
		// Every valid kind's name must be something Parse accepts.
		if tt.valid {
			if s, err := Parse(tt.str); err != nil || s.Kind() != tt.k {
				t.Errorf("Parse(%q) = %v, %v; want kind %v", tt.str, s, err, tt.k)
			}
		}
	}
}

// variant is a scheme made outside the built-ins' files: selective repeat
// under a kind of its own.
type variant struct{ SelectiveRepeat }

func (variant) Kind() Kind { return 250 }

type other struct{ SelectiveRepeat }

func (other) Kind() Kind { return 251 }

type kindZero struct{ SelectiveRepeat }

func (kindZero) Kind() Kind { return 0 }

// TestRegister: a scheme registered from outside is parsed by its name
// and built by its kind like a built-in; a kind or name already taken, or
// a name Parse could not read, is refused with the reason.
func TestRegister(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    Scheme
		want string // in the error; "" for none
	}{
		{"variant", variant{}, ""},
		{"again", variant{}, "kind 250 is taken by variant"},
		{"zero", kindZero{}, "kind 0 names no scheme"},
		{"sr-rto", SelectiveRepeat{}, "kind 3 is taken by sr"},
		{"sr-nack", other{}, `name "sr-nack" is taken`},
		{"sr", other{}, `name "sr" is taken`},
		{"bad:name", other{}, "want a word"},
	} {
		err := Register(tc.name, tc.s)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Register(%q, %T) = %v, want %q", tc.name, tc.s, err, tc.want)
		}
	}
	if s, err := Parse("variant"); err != nil || s.Kind() != 250 {
		t.Errorf("Parse(variant) = %v, %v", s, err)
	}
	if s := ForWire(250, 0, 0); s == nil || s.Kind() != 250 || Name(s) != "variant" {
		t.Errorf("ForWire(250) = %v", s)
	}
}
