package sim

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/hostmodel"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// MessagesConfig is a point-to-point workload: one host sends Count
// messages of Size bytes to another, each once the message Depth before
// it is acknowledged, into receive buffers posted ahead of time.
type MessagesConfig struct {
	Size  int
	Count int
	// Depth is how many messages may be in flight at once (perftest's
	// tx-depth): 1, the default, sends each after the previous one is
	// acknowledged, as the paper's model times them; more streams them,
	// as a bandwidth test does.
	Depth  int
	Scheme reliability.Scheme
	Core   core.Config
	// Virtual moves messages without content (core.SendVirtual): no
	// memory for buffers, no payload copies, nothing to verify.
	Virtual bool
	// Limit stops the run if it has not finished by then (simulated).
	Limit monotime.Duration
}

// TransferStats sums what the connections of a run did.
type TransferStats struct {
	DataBytes, RetxBytes, ParityBytes uint64
	RecoveredPackets, Fallbacks, RTOs uint64
}

func (s *TransferStats) add(a, b core.ConnStats) {
	for _, c := range []core.ConnStats{a, b} {
		s.DataBytes += c.DataBytes
		s.RetxBytes += c.RetxBytes
		s.ParityBytes += c.ParityBytes
		s.RecoveredPackets += c.RecoveredPackets
		s.Fallbacks += c.Fallbacks
		s.RTOs += c.RTOs
	}
}

// MessagesResult is what a messages run measured.
type MessagesResult struct {
	// Completions holds, per message, the time from Send (or, streamed,
	// from the previous message's completion if later) to the moment
	// the receiver has every byte.
	Completions []monotime.Duration
	// SenderCompletions holds, per message, the time from Send (or,
	// streamed, the previous message's) to the moment the sender hears
	// the last ACK: SDR-RDMA's completion time T
	// (section 4.2.1 of the paper).
	SenderCompletions []monotime.Duration
	// Elapsed runs from the first send to the moment the sender hears the
	// last ACK.
	Elapsed monotime.Duration
	Stats   TransferStats
}

// RunMessages runs the workload from host src to host dst of t until it
// completes, and checks every delivered message byte for byte.
func RunMessages(t *topology.Topology, src, dst int, cfg MessagesConfig) (MessagesResult, error) {
	eng := t.Net.Eng
	a, b := t.Hosts[src], t.Hosts[dst]
	ccfg := cfg.Core
	ccfg.Scheme = cfg.Scheme
	ca, cb, err := hostmodel.Connect(a, b, 1, ccfg)
	if err != nil {
		return MessagesResult{}, err
	}
	// Receives are posted a few messages ahead, so a clear-to-send has
	// time to arrive (or be resent) before its message is sent.
	depth := max(cfg.Depth, 1)
	ahead := min(cfg.Count, max(4, 2*depth))
	if !cfg.Virtual {
		ahead = max(1, min(ahead, (1<<30)/cfg.Size)) // at most 1 GiB of buffers
	}
	var msg []byte
	bufs := make([][]byte, ahead)
	if !cfg.Virtual {
		msg = make([]byte, cfg.Size)
		fillPattern(msg, eng.Rand().Uint64())
		for i := range bufs {
			bufs[i] = make([]byte, cfg.Size)
		}
	}
	res := MessagesResult{Completions: make([]monotime.Duration, 0, cfg.Count),
		SenderCompletions: make([]monotime.Duration, 0, cfg.Count)}
	sentAt := make([]monotime.Time, cfg.Count) // per message
	var failure error
	sent, received, acked := 0, 0, 0
	var lastRecv, lastAck monotime.Time // the previous message's completions

	post := func(i int) {
		if i < cfg.Count {
			var err error
			if cfg.Virtual {
				_, err = cb.PostRecvVirtual(cfg.Size)
			} else {
				_, err = cb.PostRecv(bufs[i%ahead])
			}
			if err != nil && failure == nil {
				failure = fmt.Errorf("post receive %d: %w", i, err)
			}
		}
	}
	send := func() {
		sentAt[sent] = eng.Now()
		var err error
		if cfg.Virtual {
			_, err = ca.SendVirtual(cfg.Size, nil)
		} else {
			_, err = ca.Send(msg)
		}
		if err != nil && failure == nil {
			failure = fmt.Errorf("send %d: %w", sent, err)
		}
		sent++
	}
	b.Handle = func(h *hostmodel.Host, ev core.Event) {
		switch ev.Kind {
		case core.EventRecvDone:
			// Messages of one connection complete in order of sending
			// (a later one overtaking an earlier one's repair is charged
			// to the earlier). A streamed message is timed from when it
			// could start, its send or the previous one's completion:
			// its own transfer, not the queue ahead of it.
			res.Completions = append(res.Completions, eng.Now().Sub(max(sentAt[received], lastRecv)))
			lastRecv = eng.Now()
			if !cfg.Virtual && !bytes.Equal(bufs[received%ahead], msg) && failure == nil {
				failure = fmt.Errorf("message %d arrived corrupted", received)
			}
			if err := cb.Complete(core.RecvHandle(ev.Msg)); err != nil && failure == nil {
				failure = err
			}
			received++
			post(received + ahead - 1)
		case core.EventRecvFailed:
			failure = fmt.Errorf("receive %d failed: %w", received, ev.Err)
		}
		if failure != nil {
			eng.Stop()
		}
	}
	a.Handle = func(h *hostmodel.Host, ev core.Event) {
		switch ev.Kind {
		case core.EventSendDone:
			res.SenderCompletions = append(res.SenderCompletions, eng.Now().Sub(max(sentAt[acked], lastAck)))
			lastAck = eng.Now()
			acked++
			res.Elapsed = eng.Now().Sub(sentAt[0])
			if sent < cfg.Count {
				send()
			}
		case core.EventSendFailed:
			failure = fmt.Errorf("send %d failed: %w", sent-1, ev.Err)
		}
		if failure != nil || (received == cfg.Count && len(res.SenderCompletions) == cfg.Count) {
			eng.Stop()
		}
	}
	for i := range ahead {
		post(i)
	}
	b.Wake()
	// Let the first clear-to-send reach the sender, so every message is
	// timed from a warm start, as in the model.
	eng.After(2*t.OneWay+4*monotime.Microsecond, startFunc(func() {
		for sent < min(depth, cfg.Count) {
			send()
		}
		a.Wake()
	}), 0)
	limit := cfg.Limit
	if limit == 0 {
		limit = 3600 * monotime.Second
	}
	eng.RunUntil(eng.Now().Add(limit))
	res.Stats.add(ca.Stats(), cb.Stats())
	if failure != nil {
		return res, failure
	}
	if received < cfg.Count || len(res.SenderCompletions) < cfg.Count {
		return res, fmt.Errorf("within %v, %d of %d messages arrived and %d were acknowledged", limit, received, cfg.Count, len(res.SenderCompletions))
	}
	return res, nil
}

// startFunc adapts a function to a one-shot Handler.
type startFunc func()

func (f startFunc) OnEvent(*engine.Engine, uint64) { f() }

// fillPattern fills b with a pseudo-random pattern that differs per seed,
// with every 512-byte piece stamped with its offset, so misplaced or stale
// bytes show. One random block is repeated: fast enough for 1 GiB.
func fillPattern(b []byte, seed uint64) {
	x := seed | 1
	n := min(len(b), 1<<16)
	for i := 0; i+8 <= n; i += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(b[i:], x)
	}
	for i := n &^ 7; i < n; i++ {
		b[i] = byte(seed) + byte(i*131)
	}
	for off := n; off < len(b); off += n {
		copy(b[off:], b[:n])
	}
	for i := 0; i+8 <= len(b); i += 512 {
		binary.LittleEndian.PutUint64(b[i:], seed^uint64(i))
	}
}
