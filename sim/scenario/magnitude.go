package scenario

import (
	"fmt"
	"strconv"
	"strings"
)

// Magnitude is the size of the effect a paper states with its claim: how
// many times the worse setting's figure exceeds the better's, in the
// paper's own words. "about 1.4x" (Meta's "about 40% better"), "up to 15x"
// (the most any setting showed), "at least 10x" (a floor) or "3-6x" (a
// range).
type Magnitude struct {
	Kind   MagnitudeKind
	Lo, Hi float64 // Lo == Hi but for a range
}

// MagnitudeKind is how a paper words a magnitude.
type MagnitudeKind int

// The ways a paper words a magnitude; MagnitudeNone is a claim of
// direction only.
const (
	MagnitudeNone MagnitudeKind = iota
	MagnitudeAbout
	MagnitudeUpTo
	MagnitudeAtLeast
	MagnitudeRange
)

var magnitudeWords = []struct {
	prefix string
	kind   MagnitudeKind
}{{"about ", MagnitudeAbout}, {"up to ", MagnitudeUpTo}, {"at least ", MagnitudeAtLeast}}

const magnitudeHelp = `want "about X", "up to X", "at least X" or "A-B", each a ratio above 1 ending in x, like "about 1.4x" or "3-6x"`

// ParseMagnitude reads a magnitude as a scenario writes it.
func ParseMagnitude(s string) (Magnitude, error) {
	text := strings.TrimSpace(s)
	m := Magnitude{Kind: MagnitudeRange}
	for _, w := range magnitudeWords {
		if rest, ok := strings.CutPrefix(text, w.prefix); ok {
			m.Kind, text = w.kind, strings.TrimSpace(rest)
			break
		}
	}
	num, ok := strings.CutSuffix(text, "x")
	if !ok {
		return Magnitude{}, fmt.Errorf("%q: %s", s, magnitudeHelp)
	}
	lo, hi, isRange := strings.Cut(num, "-")
	if isRange != (m.Kind == MagnitudeRange) {
		return Magnitude{}, fmt.Errorf("%q: %s", s, magnitudeHelp)
	}
	if !isRange {
		hi = lo
	}
	var err1, err2 error
	m.Lo, err1 = strconv.ParseFloat(strings.TrimSpace(lo), 64)
	m.Hi, err2 = strconv.ParseFloat(strings.TrimSpace(hi), 64)
	if err1 != nil || err2 != nil || m.Lo <= 1 || m.Hi < m.Lo {
		return Magnitude{}, fmt.Errorf("%q: %s", s, magnitudeHelp)
	}
	return m, nil
}

// String writes m as a scenario would; "" for none.
func (m Magnitude) String() string {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	switch m.Kind {
	case MagnitudeNone:
		return ""
	case MagnitudeRange:
		return g(m.Lo) + "-" + g(m.Hi) + "x"
	}
	for _, w := range magnitudeWords {
		if w.kind == m.Kind {
			return w.prefix + g(m.Lo) + "x"
		}
	}
	return ""
}

// GainBand is how far a measured ratio may stray from a paper's figure
// and still match it: its gain (ratio minus 1) within this factor of the
// paper's either way. Judged on the gain, not the ratio, so that "5-10%
// better" is not matched by a tie, nor "about 15x" missed at 14x.
const GainBand = 1.5

// Matches reports whether the ratios a run measured, least lo and
// greatest hi over the settings judged, bear the paper's magnitude out:
// "at least X" every ratio at least X; "about X" and a range every ratio
// within the band around them; "up to X" the greatest ratio within the
// band around X.
func (m Magnitude) Matches(lo, hi float64) bool {
	near := func(r, x float64) (above, below bool) {
		return r-1 >= (x-1)/GainBand, r-1 <= (x-1)*GainBand
	}
	switch m.Kind {
	case MagnitudeAtLeast:
		return lo >= m.Lo
	case MagnitudeUpTo:
		above, below := near(hi, m.Hi)
		return above && below
	case MagnitudeAbout, MagnitudeRange:
		above, _ := near(lo, m.Lo)
		_, below := near(hi, m.Hi)
		return above && below
	}
	return true
}
