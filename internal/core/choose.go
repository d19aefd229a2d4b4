package core

import (
	"math"

	"github.com/sdrnet/sdrnet/internal/reliability"
)

// The core's side of a reliability.Chooser (scheme "auto"): it counts the
// data packets whose fate it has learnt (acknowledged, with the chunk that
// holds them) and those it learnt were lost, and hands the chooser these
// counts with the RTT and the rate when a message starts. Counting packets
// as they are acknowledged rather than sent keeps both counts on the same
// clock: a loss is reported about an RTT after its packet left, and on a
// long fat link an RTT is hundreds of thousands of packets.

// The loss rate is estimated in blocks of lossBlock data packets. A block
// that agrees with the evidence so far joins it, which forgets at the rate
// of lossMemory packets; a block that contradicts it (a loss rate that
// rose or fell) replaces it, so a change is followed within a block or
// two, while a steady rare loss rate is measured over up to lossMemory
// packets (4 GiB at 4 KiB packets). A rare rate that fell to nothing
// shows in no one block (a block predicts too few losses for their
// absence to say anything), so the run of clean blocks since the last
// loss is tested against the evidence too, as one block.
const (
	lossBlock  = 4096
	lossMemory = 1 << 20
	// lossEnough is the least of a block under way that may contradict
	// the evidence on its own.
	lossEnough = lossBlock / 16
)

// lossCounts are a sender's counts of data packets resolved (their chunk
// acknowledged) and reported lost.
type lossCounts struct {
	sent, lost           float64 // the evidence of past blocks
	blockSent, blockLost uint32  // the block under way
	// clean counts the packets of the blocks since the last with a
	// loss, and cleanSent their part of sent.
	clean, cleanSent float64
}

// noteResolved counts n more packets whose chunk was acknowledged.
func (l *lossCounts) noteResolved(n uint32) {
	if l.blockSent += n; l.blockSent < lossBlock {
		return
	}
	if l.contradicts() {
		l.sent, l.lost = 0, 0
	}
	keep := 1 - float64(lossBlock)/lossMemory
	l.sent = l.sent*keep + float64(l.blockSent)
	l.lost = l.lost*keep + float64(l.blockLost)
	l.clean += float64(l.blockSent)
	l.cleanSent = l.cleanSent*keep + float64(l.blockSent)
	if l.blockLost > 0 {
		l.clean, l.cleanSent = 0, 0
	} else if l.lost > 0 && contradicted(l.lost/(l.sent-l.cleanSent)*l.clean, 0) {
		l.sent, l.lost = l.clean, 0
	}
	l.blockSent, l.blockLost = 0, 0
}

// contradicts reports whether the block's losses are far from what the
// past rate predicts: the rate has changed.
func (l *lossCounts) contradicts() bool {
	if l.sent == 0 || l.blockSent < lossEnough {
		return false
	}
	return contradicted(l.lost/l.sent*float64(l.blockSent), float64(l.blockLost))
}

// contradicted reports whether lost losses are more than three standard
// deviations (Poisson) plus two packets from the want predicted.
func contradicted(want, lost float64) bool {
	return math.Abs(lost-want) > 3*math.Sqrt(max(want, 1))+2
}

// counts returns the evidence for the loss rate: the past blocks and the
// block under way, or the latter alone where it already contradicts them.
func (l *lossCounts) counts() (lost, sent float64) {
	if l.contradicts() {
		return float64(l.blockLost), float64(l.blockSent)
	}
	return l.lost + float64(l.blockLost), l.sent + float64(l.blockSent)
}

// noteLost counts packet p of m lost, once however often it is reported
// (re-NACKs, a fallback NACK after a decode report). Without a chooser
// nobody reads the counts, and a message has no lost bitmap.
func (s *sender) noteLost(m *sendMsg, p uint32) {
	if s.choice != nil && p < m.npkts && !m.lost.test(p) {
		m.lost.set(p)
		s.choice.loss.blockLost++
	}
}

// conditions is what the connection has measured, for a message of size
// bytes.
func (s *sender) conditions(size uint64) reliability.Conditions {
	cfg := s.c.cfg
	// The rate set, else the controller's (it paces at what it measured),
	// else the line rate, which may be a guess.
	rate := cfg.Rate
	if rate == 0 && s.cc != nil {
		rate = s.cc.Stats().Rate
	}
	if rate == 0 {
		rate = cfg.LineRate
	}
	lost, sent := s.choice.loss.counts()
	return reliability.Conditions{Size: int64(size), MTU: cfg.MTU, ChunkBytes: cfg.ChunkSize,
		RTT: s.rtt.Smoothed(), Rate: rate, Lost: lost, Sent: sent, Depth: s.unfinished + 1}
}

// chooseScheme is the scheme of a message sent without one.
func (s *sender) chooseScheme(size uint64) reliability.Scheme {
	ch := s.c.cfg.Chooser
	if ch == nil {
		return s.c.cfg.Scheme
	}
	sc := ch.Choose(s.conditions(size))
	if sc == nil {
		sc = s.c.cfg.Scheme
	}
	chosen := &s.choice.chosen
	for i := range *chosen {
		if (*chosen)[i].Scheme == sc {
			(*chosen)[i].Messages++
			return sc
		}
	}
	*chosen = append(*chosen, SchemeCount{Scheme: sc, Messages: 1})
	return sc
}

// choiceState is what scheme auto's chooser keeps per connection: the
// loss evidence it decides from, and what it decided. A connection
// without a chooser has none.
type choiceState struct {
	loss   lossCounts
	chosen []SchemeCount
}

// SchemeCount says how many messages the connection's chooser gave a
// scheme.
type SchemeCount struct {
	Scheme   reliability.Scheme
	Messages uint64
}

// Chosen returns the chooser's decisions on this connection so far, in the
// order the schemes were first chosen; nil without a chooser. The slice is
// the connection's: copy it to keep it.
func (c *Conn) Chosen() []SchemeCount {
	if c.connBody == nil || c.snd == nil || c.snd.choice == nil {
		return nil
	}
	return c.snd.choice.chosen
}
