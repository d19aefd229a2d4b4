package report

import (
	"fmt"
	"math"
	"slices"
)

// A mean is no fair judge of runs with a heavy tail: in a run where one
// iteration of five meets the background traffic and takes ten times the
// rest, the standard error of the mean covers any difference. A claim
// judged on the median instead takes its tie rule from the ranks of the
// runs (the Mann-Whitney U test), which one outlier moves by one place.

// rankLevel is the two-sided significance level of the rank test: two
// medians whose runs the test cannot tell apart at it are a tie.
const rankLevel = 0.05

// MedianNoiseRule says in words when two medians are shown as a tie.
var MedianNoiseRule = fmt.Sprintf("medians: unless a Mann-Whitney rank test, two-sided at %g%%, tells their runs apart, or within %g%% of the larger", 100*rankLevel, 100*tieRel)

// tiedRuns reports whether medians ma and mb of runs a and b are equal
// within the runs' noise. Cells of one run each have no spread, so only
// the 1% rule applies to them, as it does to means.
func tiedRuns(ma float64, a []float64, mb float64, b []float64) bool {
	if math.Abs(ma-mb) <= tieRel*max(ma, mb) {
		return true
	}
	if len(a) < 2 && len(b) < 2 {
		return false
	}
	return rankP(a, b) > rankLevel
}

// exactRanks is the largest sample count whose null distribution of U is
// counted exactly; beyond it the normal approximation is within a few
// thousandths of the exact p-value.
const exactRanks = 40

// rankP is the two-sided p-value of the Mann-Whitney U test that a and b
// come from one distribution. Equal values count half to each side;
// where there are any, the exact test is taken at the next whole U, which
// errs toward a tie.
func rankP(a, b []float64) float64 {
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return 1
	}
	u := 0.0
	for _, x := range a {
		for _, y := range b {
			switch {
			case x < y:
				u++
			case x == y:
				u += 0.5
			}
		}
	}
	lo := min(u, float64(n1*n2)-u)
	if n1+n2 <= exactRanks {
		return min(1, 2*uAtMost(n1, n2, int(math.Ceil(lo))))
	}
	return min(1, 2*normalTail(lo, n1, n2, slices.Concat(a, b)))
}

// uAtMost is P(U <= k) for samples of n1 and n2 with no ties, counted by
// the recurrence on the largest value: the first sample's adds nothing to
// U, the second's adds the first sample's size (it is above every value
// of the first).
func uAtMost(n1, n2, k int) float64 {
	// ways[j][u]: arrangements of i values of the first sample and j of
	// the second with U = u, for the i of the current pass.
	ways := make([][]float64, n2+1)
	for j := range ways {
		ways[j] = make([]float64, n1*n2+1)
		ways[j][0] = 1 // i = 0: U is 0 whatever j
	}
	for i := 1; i <= n1; i++ {
		next := make([][]float64, n2+1)
		for j := range next {
			next[j] = make([]float64, n1*n2+1)
			for u := range next[j] {
				next[j][u] = ways[j][u] // the largest is the first sample's
				if j > 0 && u >= i {
					next[j][u] += next[j-1][u-i] // or the second's
				}
			}
		}
		ways = next
	}
	total, at := 0.0, 0.0
	for u, w := range ways[n2] {
		total += w
		if u <= k {
			at += w
		}
	}
	return at / total
}

// normalTail is P(U <= lo) by the normal approximation with the
// correction for ties and for continuity.
func normalTail(lo float64, n1, n2 int, all []float64) float64 {
	slices.Sort(all)
	n := float64(n1 + n2)
	ties := 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j] == all[i] {
			j++
		}
		t := float64(j - i)
		ties += t*t*t - t
		i = j
	}
	mu := float64(n1*n2) / 2
	sd := math.Sqrt(float64(n1*n2) / 12 * (n + 1 - ties/(n*(n-1))))
	if sd == 0 {
		return 1
	}
	z := (lo - mu + 0.5) / sd
	return 0.5 * math.Erfc(-z/math.Sqrt2)
}
