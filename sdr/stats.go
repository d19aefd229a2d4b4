package sdr

import (
	"time"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/path"
)

// Stats are a connection's counters.
type Stats struct {
	ConnStats
	// Paths has one entry per path when the connection sprays over several.
	Paths []PathStats
	// CC is the congestion controller's state; zero without one.
	CC CCStats
	// Protect counts packets dropped as unprotected, forged or replayed.
	Protect ProtectStats
	// Schemes counts the messages scheme "auto" gave each scheme, by name
	// ("sr-nack", "ec:32,8"); nil for a fixed scheme.
	Schemes map[string]uint64
}

// ConnStats counts what a connection sent and received.
type ConnStats struct {
	DataPackets, DataBytes     uint64 // first transmissions
	RetxPackets, RetxBytes     uint64 // retransmissions
	ParityPackets, ParityBytes uint64 // erasure-coding parity sent
	// ParityCodedAhead counts sub-messages whose parity the codec workers
	// (Config.CodecWorkers) coded while their data was sent.
	ParityCodedAhead         uint64
	CtrlPackets              uint64 // ACK, NACK, CTS, CLOSE sent
	AcksReceived, NacksRecvd uint64
	RecvPackets              uint64 // DATA packets accepted
	DupPackets               uint64 // DATA packets that were already there
	OutOfOrder               uint64 // DATA packets that arrived after a later one
	// Of those, first transmissions (reordered by the network, not
	// resent): how many, and how far behind the furthest packet of their
	// message they arrived, summed and at most, in packets.
	Reordered, ReorderDepth, MaxReorder uint64
	SpuriousNacks                       uint64 // NACKed packets that then arrived late, not lost
	StalePackets                        uint64 // packets of a completed message or an old generation
	DroppedOutOfOrder                   uint64 // go-back-N receiver discards
	RecoveredPackets                    uint64 // rebuilt by erasure decoding
	Fallbacks                           uint64 // erasure-coding fallback NACKs sent
	RTOs                                uint64 // sender retransmission timeouts
	SilentProbes                        uint64 // of RTOs: resent into a silent peer as a probe, the timeout doubled
	AckedBytes                          uint64 // bytes of our messages the peer holds whole
	RecvBytes                           uint64 // payload bytes of DATA packets accepted
	SmoothedRTT                         time.Duration
	// What the sender's time went to, as Linux's tcp_info chronographs
	// (ss -i's busy, rwnd_limited, sndbuf_limited): sending or waiting
	// for the pacer; held back by the congestion window; by the
	// receiver's grant; by Config.MaxBytesInFlight. The rest it had
	// nothing to send.
	Busy, WindowLimited, CreditLimited, InflightLimited time.Duration
}

// PathStats are one path's counters (a path is a UDP source port).
type PathStats struct {
	Sent, SentBytes   uint64
	Acked, AckedBytes uint64
	Lost              uint64
	// SRTT is the path's smoothed RTT; zero before its first sample.
	SRTT time.Duration
	// State is "up" or "failed".
	State string
}

// CCStats are the congestion controller's state.
type CCStats struct {
	Window      int64   // current window in bytes; 0 when window-less
	Rate        float64 // current pacing rate in bits per second; 0 when unpaced
	Decreases   uint64  // times the window or rate was cut
	Congestions uint64  // congestion signals taken (ECN echoes, CNPs)
	// IgnoredLosses counts losses the controller did not react to because
	// the path showed no congestion (random loss, not a queue).
	IgnoredLosses uint64
	// Queue is the queueing delay the controller steers by now (NSCC's
	// standing queue, BBR's delay over the round trip's floor); zero for
	// one that reads no delay.
	Queue time.Duration
	// Detail is the figures the controller keeps of its own, by name
	// (NSCC: "competitive spells", how often it took up its competitive
	// mode beside a flow that holds the queue whatever it does, and
	// "competing", 1 while it is in it); nil for one that keeps none.
	Detail map[string]float64
}

// ProtectStats count packets dropped by packet protection.
type ProtectStats struct {
	Unprotected uint64 // not sealed where sealing was agreed
	Forged      uint64 // failed authentication
	Replayed    uint64 // a packet number seen before, or too old
}

// ListenerStats count datagrams a listener could not hand to a
// connection, what it did with HELLOs, and (Conns, HalfOpen) how many
// connections it holds now.
type ListenerStats struct {
	Malformed   uint64 // failed to decode
	UnknownConn uint64 // named no connection of this listener
	// Retries counts HELLOs without a valid cookie, answered with a Retry
	// and no state.
	Retries uint64
	// BadCookies counts the HELLOs among those whose cookie was forged,
	// expired, or issued to another address, port or connection id.
	BadCookies uint64
	// Refused counts verified HELLOs turned away: connection limits
	// reached, or the listener stopped accepting.
	Refused uint64
	// Unanswered counts HELLOs dropped because the queue of stateless
	// answers was full.
	Unanswered uint64
	// HalfOpenExpired counts accepted connections closed because their
	// dialer never confirmed them.
	HalfOpenExpired uint64
	// Reaped counts closed connections removed from the listener.
	Reaped uint64
	// Unsealable counts packets dropped because there was no room for
	// protection's trailer.
	Unsealable uint64
	// Conns and HalfOpen are the connections held now, and of those the
	// accepted ones not confirmed yet.
	Conns, HalfOpen int
}

func connStats(s core.ConnStats) ConnStats {
	return ConnStats{DataPackets: s.DataPackets, DataBytes: s.DataBytes, RetxPackets: s.RetxPackets, RetxBytes: s.RetxBytes,
		ParityPackets: s.ParityPackets, ParityBytes: s.ParityBytes, ParityCodedAhead: s.ParityCodedAhead, CtrlPackets: s.CtrlPackets,
		AcksReceived: s.AcksReceived, NacksRecvd: s.NacksRecvd, RecvPackets: s.RecvPackets, DupPackets: s.DupPackets,
		OutOfOrder: s.OutOfOrder, Reordered: s.Reordered, ReorderDepth: s.ReorderDepth, MaxReorder: s.MaxReorder,
		SpuriousNacks: s.SpuriousNacks, StalePackets: s.StalePackets, DroppedOutOfOrder: s.DroppedOutOfOrder,
		RecoveredPackets: s.RecoveredPackets, Fallbacks: s.Fallbacks, RTOs: s.RTOs, SilentProbes: s.SilentProbes, AckedBytes: s.AckedBytes,
		RecvBytes: s.RecvBytes, SmoothedRTT: s.SmoothedRTT.Std(),
		Busy: s.Busy.Std(), WindowLimited: s.WindowLimited.Std(), CreditLimited: s.CreditLimited.Std(),
		InflightLimited: s.InflightLimited.Std()}
}

func pathStats(ps []path.Stats) []PathStats {
	if len(ps) == 0 {
		return nil
	}
	out := make([]PathStats, len(ps))
	for i, p := range ps {
		out[i] = PathStats{Sent: p.Sent, SentBytes: p.SentBytes, Acked: p.Acked, AckedBytes: p.AckedBytes,
			Lost: p.Lost, SRTT: p.SRTT.Std(), State: p.State}
	}
	return out
}

func ccStats(s cc.Stats, detail []cc.Figure) CCStats {
	out := CCStats{Window: s.Window, Rate: s.Rate, Decreases: s.Decreases, Congestions: s.Congestions,
		IgnoredLosses: s.IgnoredLosses, Queue: s.Queue.Std()}
	if len(detail) > 0 {
		out.Detail = make(map[string]float64, len(detail))
		for _, f := range detail {
			out.Detail[f.Name] = f.Value
		}
	}
	return out
}

func protectStats(s core.ProtectStats) ProtectStats { return ProtectStats(s) }

func listenerStats(s core.EndpointStats) ListenerStats { return ListenerStats(s) }
