// Package lossmodel holds the burst-loss model that every emulated link in
// sdrnet shares: the in-memory test link (coretest), the user-space link
// emulator (linkem) and the simulator's links, so a "1% loss in bursts of
// 4" means the same channel in all three.
package lossmodel

import "math/rand/v2"

// GilbertElliott is a two-state burst-loss model. Before each packet the
// state moves from good to bad with probability P, from bad to good with
// probability R; then the packet is lost with probability LossBad in the
// bad state and LossGood in the good state. The long-run loss rate is
// (P*LossBad + R*LossGood) / (P+R); bursts last 1/R packets on average.
type GilbertElliott struct {
	P, R              float64
	LossGood, LossBad float64
}

// Bursty returns the model whose long-run loss rate is rate and whose
// bursts (every packet lost) last burst packets on average.
func Bursty(rate, burst float64) GilbertElliott {
	r := 1 / burst
	return GilbertElliott{P: rate * r / (1 - rate), R: r, LossBad: 1}
}

// Rate returns the long-run loss rate of the model.
func (g GilbertElliott) Rate() float64 {
	if g.P <= 0 {
		return g.LossGood
	}
	return (g.P*g.LossBad + g.R*g.LossGood) / (g.P + g.R)
}

// Step draws the fate of one packet for a channel in state bad: whether it
// is lost, and the channel's state after it. The caller keeps the state,
// one per direction of a link.
func (g GilbertElliott) Step(bad bool, rng *rand.Rand) (lost, nowBad bool) {
	if bad {
		bad = rng.Float64() >= g.R
	} else {
		bad = rng.Float64() < g.P
	}
	loss := g.LossGood
	if bad {
		loss = g.LossBad
	}
	return loss > 0 && rng.Float64() < loss, bad
}
