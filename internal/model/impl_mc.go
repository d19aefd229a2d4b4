package model

import (
	"math"
	"math/rand/v2"
)

// Monte Carlo of the implementation-timer models (impl.go): the same
// rules played packet by packet and shard by shard, to check the closed
// forms. Not used by Predict.

// draw returns one completion time of the SR-NACK model: the first-pass
// losses, their NACK batches (each NACK lost with p_ack), the re-NACK
// rounds (likewise), the tail's RTO resends and the final ACK.
func (nm *nackModel) draw(rng *rand.Rand) float64 {
	p := nm.p
	t := nm.e
	nt := nm.n - 1
	if p > 0 && nt > 0 {
		lp := math.Log1p(-p)
		i0 := skip(rng, lp, nt)
		if i0 < nt {
			b := nackBin{i0: i0}
			b.t0 = min(float64(i0+2)*nm.tp+nm.half, nm.e)
			b.nFirst = b.t0 + nm.d
			arrived := min(max(math.Floor((b.nFirst-nm.half)/nm.tp), 0), float64(nm.n)) * (1 - p)
			b.tau1 = b.nFirst + nm.renack + (float64(nm.n)-arrived)*nm.tRx
			b.o2 = nm.renack + float64(nm.n)*p*p*nm.tRx
			batchOK := map[int64]bool{}
			var rounds []bool // whether each re-NACK arrived
			arrive := func(nack float64, batch int64) float64 {
				ok, seen := batchOK[batch]
				if !seen {
					ok = rng.Float64() >= nm.pAck
					batchOK[batch] = ok
				}
				if ok && rng.Float64() >= p {
					return nack + nm.rtt + nm.tp
				}
				for c := 0; ; c++ {
					if c == len(rounds) {
						rounds = append(rounds, rng.Float64() >= nm.pAck)
					}
					if rounds[c] && rng.Float64() >= p {
						return b.tau1 + float64(c)*b.o2 + nm.rtt + nm.tp
					}
				}
			}
			t = max(t, arrive(b.nFirst, 1))
			for j := i0 + 1 + skip(rng, lp, nt); j < nt; j += 1 + skip(rng, lp, nt) {
				rev := float64(j+2)*nm.tp + nm.half
				k := int64(math.Ceil((rev-b.t0)/nm.d)) + 1
				t = max(t, arrive(b.t0+float64(k)*nm.d, k))
			}
		}
	}
	if p > 0 && rng.Float64() < p { // the tail: resent by the RTO
		k := 1
		for rng.Float64() < p {
			k++
		}
		t = max(t, nm.inj+nm.half+float64(k)*nm.rto)
	}
	if nm.sender {
		t += nm.half
		if rng.Float64() < nm.pAck {
			t += nm.rto
		}
	}
	return t
}

// drawRounds returns the repair rounds one message of the EC model needs
// (0: it decoded without fallback): every codeword's shards drawn, and
// the missing data shards of each failed one resent round by round until
// it decodes.
func (g *geometry) drawRounds(rng *rand.Rand, e ecModel) int {
	r := 0
	for i := int64(0); i < e.fullCount; i++ {
		r = max(r, g.drawCodeword(rng, e.full))
	}
	for _, cw := range e.last {
		r = max(r, g.drawCodeword(rng, cw))
	}
	return r
}

// drawCodeword draws one codeword's erasures and returns the rounds it
// needs. A shard of u packets is missing while any of its packets is
// (under RetryChunk a resend of a whole shard must arrive whole).
func (g *geometry) drawCodeword(rng *rand.Rand, cw codeword) int {
	p := g.p.DropProb
	lost := func(u int) int { // packets of a u-packet shard lost
		n := 0
		for range u {
			if rng.Float64() < p {
				n++
			}
		}
		return n
	}
	units := func(j int) int {
		if j == len(cw.data)-1 && cw.lastUnits > 0 {
			return cw.lastUnits
		}
		return max(cw.units, 1)
	}
	miss := make([]int, len(cw.data))
	par := make([]bool, len(cw.parity))
	for j := range miss {
		miss[j] = lost(units(j))
	}
	for j := range par {
		par[j] = lost(max(cw.units, 1)) > 0
	}
	for round := 0; ; round++ {
		if decodes(g.p.Scheme, cw.tol, miss, par) {
			return round
		}
		for j, m := range miss {
			if m == 0 {
				continue
			}
			if g.p.Retry == RetryChunk {
				if lost(units(j)) == 0 {
					miss[j] = 0
				}
			} else {
				miss[j] = lost(m)
			}
		}
	}
}

// decodes reports whether a codeword with the given missing data shards
// (miss[j] > 0) and lost parity decodes: MDS within tol erasures, XOR
// with at most one erasure in each group j mod tol.
func decodes(s Scheme, tol int, miss []int, par []bool) bool {
	if s == ECMDS {
		n := 0
		for _, m := range miss {
			if m > 0 {
				n++
			}
		}
		for _, l := range par {
			if l {
				n++
			}
		}
		return n <= tol
	}
	groups := make([]int, tol)
	for j, m := range miss {
		if m > 0 {
			groups[j%tol]++
		}
	}
	for i, l := range par {
		if l {
			groups[i]++
		}
	}
	for _, n := range groups {
		if n > 1 {
			return false
		}
	}
	return true
}
