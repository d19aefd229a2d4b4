package core

import (
	"fmt"
	"math/bits"
	"net/netip"

	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// Defaults of Config's zero value.
const (
	DefaultMTU        = 4096
	DefaultChunkSize  = 64 << 10
	DefaultMaxMsgs    = 1024
	DefaultInitialRTT = 10 * monotime.Millisecond
	// DefaultHandshakeTimeout bounds a Dial: a peer that does not answer
	// is reported dead after it.
	DefaultHandshakeTimeout = 10 * monotime.Second
	// DefaultIdleTimeout closes a connection that has heard nothing from
	// its peer this long (keepalives keep a healthy idle one open).
	DefaultIdleTimeout = 30 * monotime.Second
	// MaxPaths bounds the paths (source ports) of one connection.
	MaxPaths = 128
	// MaxMTU keeps a packet inside one UDP datagram with room for headers.
	MaxMTU = 65000
	// MinMTU is SDR's smallest MTU.
	MinMTU = 64
)

// Config sets a connection's parameters. The zero value works: 4096-byte
// MTU, 64 KiB chunks, 1024 messages in flight, no byte limit, selective
// repeat with RTO = 3 RTT.
type Config struct {
	// MTU is the payload bytes per packet (64 .. 65000).
	MTU int
	// PathMTU, where set, is the largest payload the route to peer carries
	// unfragmented (the host's route table knows; a simulation does not
	// ask). A dialed or accepted connection uses no larger MTU than it
	// says, and chunks to match; an answer below MinMTU is ignored.
	PathMTU func(peer netip.AddrPort) int
	// ChunkSize is the bitmap granularity in bytes: a power-of-two
	// multiple of the MTU.
	ChunkSize int
	// MaxMsgs bounds messages in flight per direction; a power of two up
	// to 65536. It is the number of receive slots.
	MaxMsgs int
	// MaxBytesInFlight bounds unacknowledged data bytes; zero: no bound
	// beyond the receiver's clear-to-send.
	MaxBytesInFlight int64
	// Scheme is the default reliability scheme of messages sent on the
	// connection; nil means selective repeat (SR-RTO).
	Scheme reliability.Scheme
	// Chooser, if set, picks the scheme of every message sent without one
	// (scheme "auto"), from what the connection has measured; Scheme
	// stays the default where it returns nil.
	Chooser reliability.Chooser
	// InitialRTT is the RTT assumed before the first sample.
	InitialRTT monotime.Duration
	// Rate is the sender's injection rate in bits per second, if known.
	// The EC receiver uses it for the fallback timeout; zero: estimate it
	// from packet arrivals.
	Rate float64
	// Paths is how many paths (UDP source ports) the connection sprays
	// its packets over, 1..128; zero means 1.
	Paths int
	// Select chooses each packet's path when Paths > 1; the zero value is
	// Single (everything on path 0).
	Select path.Kind
	// SelectTuning overrides the selection policy's constants; the zero
	// value keeps them.
	SelectTuning path.Tuning
	// Seed seeds the connection's randomness (path permutations); runs
	// with the same seed and inputs are identical.
	Seed uint64
	// HandshakeTimeout bounds Dial; zero means DefaultHandshakeTimeout.
	HandshakeTimeout monotime.Duration
	// IdleTimeout closes a connection that hears nothing from its peer
	// this long; zero means DefaultIdleTimeout, negative never.
	IdleTimeout monotime.Duration
	// CC is the congestion controller of data sent (internal/cc); the
	// zero value is none.
	CC cc.Algorithm
	// LineRate is the sender's link rate in bits per second, where the
	// controller starts; zero: Rate, else the controller's default.
	LineRate float64
	// LearnLineRate says LineRate is a guess: a controller that can
	// (NSCC) raises it while its window is the only limit and the path
	// shows no queue.
	LearnLineRate bool
	// HostNoise is how late RTT samples run on this host with no queue
	// (cc.Params.HostNoise); zero in simulation.
	HostNoise monotime.Duration
	// BaseRTT is the unloaded round trip the controller assumes until it
	// measures one; zero: the controller's default.
	BaseRTT monotime.Duration
	// Keys, when set, keys connections with a key exchange carried in the
	// HELLO and ACCEPT (keys.go); initiator is true on the dialer. Nil:
	// no keys, no protection.
	Keys func(initiator bool) KeyExchange
	// Protection is what keyed connections do to every packet: header or
	// full (wire.Protection); it needs Keys. The two ends use the stronger
	// of what they ask, and a dialer refuses anything weaker than its own.
	Protection wire.Protection
	// MinRTO is the least retransmission timeout; zero means MinRTO
	// (100 us, a datacenter's). A host whose scheduler delays the peer's
	// ACKs by more than that should set more, or its timers fire for
	// packets that are merely late.
	MinRTO monotime.Duration
}

// fitPath lowers the MTU to what the route to peer carries, where
// PathMTU says, keeping the chunk a power-of-two multiple of it.
func (c *Config) fitPath(peer netip.AddrPort) {
	if c.PathMTU == nil {
		return
	}
	if m := c.PathMTU(peer); m >= MinMTU && m < c.MTU {
		c.MTU = m
		c.ChunkSize = ChunkFor(m, c.ChunkSize)
	}
}

// withDefaults fills zero fields and checks the rest.
func (c Config) withDefaults() (Config, error) {
	if c.MTU == 0 {
		c.MTU = DefaultMTU
	}
	if c.ChunkSize == 0 {
		// The largest power-of-two multiple of the MTU within 64 KiB.
		pk := max(DefaultChunkSize/c.MTU, 1)
		c.ChunkSize = c.MTU << (bits.Len(uint(pk)) - 1)
	}
	if c.MaxMsgs == 0 {
		c.MaxMsgs = DefaultMaxMsgs
	}
	if c.Scheme == nil {
		c.Scheme = reliability.SelectiveRepeat{}
	}
	if c.InitialRTT == 0 {
		c.InitialRTT = DefaultInitialRTT
	}
	if c.Paths == 0 {
		c.Paths = 1
	}
	if c.HandshakeTimeout == 0 {
		c.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MinRTO == 0 {
		c.MinRTO = MinRTO
	}
	switch {
	case c.MTU < MinMTU || c.MTU > MaxMTU:
		return c, fmt.Errorf("MTU %d out of range %d..%d", c.MTU, MinMTU, MaxMTU)
	case c.ChunkSize%c.MTU != 0 || !isPow2(c.ChunkSize/c.MTU):
		return c, fmt.Errorf("chunk size %d is not a power-of-two multiple of the MTU %d", c.ChunkSize, c.MTU)
	case c.ChunkSize/c.MTU > 1<<16:
		return c, fmt.Errorf("chunk size %d holds more than 65536 packets of %d bytes", c.ChunkSize, c.MTU)
	case !isPow2(c.MaxMsgs) || c.MaxMsgs > 1<<16:
		return c, fmt.Errorf("max messages %d is not a power of two in 1..65536", c.MaxMsgs)
	case c.MaxBytesInFlight < 0:
		return c, fmt.Errorf("max bytes in flight %d is negative", c.MaxBytesInFlight)
	case c.InitialRTT < 0:
		return c, fmt.Errorf("initial RTT %v is negative", c.InitialRTT)
	case c.Rate < 0:
		return c, fmt.Errorf("rate %g is negative", c.Rate)
	case c.Paths < 1 || c.Paths > MaxPaths:
		return c, fmt.Errorf("paths %d out of range 1..%d", c.Paths, MaxPaths)
	case c.SelectTuning.Check() != nil:
		return c, c.SelectTuning.Check()
	case (c.Keys == nil) != (c.Protection == wire.ProtectNone) || c.Protection > wire.ProtectFull:
		return c, fmt.Errorf("protection %v with keys set %v: protection (header or full) needs a key exchange, and a key exchange a protection", c.Protection, c.Keys != nil)
	case c.HandshakeTimeout < 0:
		return c, fmt.Errorf("handshake timeout %v is negative", c.HandshakeTimeout)
	case c.MinRTO < 0:
		return c, fmt.Errorf("minimum RTO %v is negative", c.MinRTO)
	}
	if code := c.Scheme.Code(); code != nil && code.K()+code.M() > reliability.MaxShards {
		return c, fmt.Errorf("erasure code (%d,%d) has more than %d shards", code.K(), code.M(), reliability.MaxShards)
	}
	return c, nil
}

func isPow2(n int) bool { return n > 0 && n&(n-1) == 0 }

func (c *Config) chunkShift() uint8 { return uint8(bits.TrailingZeros(uint(c.ChunkSize / c.MTU))) }
