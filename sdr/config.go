package sdr

import (
	"cmp"
	"fmt"
	"time"

	"github.com/sdrnet/sdrnet/internal/autoscheme"
	congestion "github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/datapath/udp"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// Config sets up connections. The zero value works: one path, the MTU the
// route takes, 64 KiB chunks or near, selective repeat with NACKs, BBR.
type Config struct {
	// Scheme is the reliability scheme of messages sent: "sr" (SR-RTO),
	// "sr-nack", "ec:K,M" (Reed-Solomon), "xor:K,M", "gbn", "csaud"
	// (CSA-UD's semantic-aware repair) or "none";
	// or "auto": each message gets SR-NACK or a Reed-Solomon code, as the
	// analytic model predicts fastest for its size and the connection's
	// measured RTT, loss rate and rate (internal/autoscheme; the rate is
	// Rate, else LineRate, else 10 Gbit/s). Empty means "sr-nack".
	Scheme string
	// Paths is how many UDP source ports a connection sprays over, 1..128;
	// zero means 1.
	Paths int
	// Select picks each packet's path: "obs" (oblivious spraying, the
	// default with several paths), "rr", "bestrtt", "dwrr" or "single".
	Select string
	// MTU is the payload bytes per packet. Zero means what the route to
	// the peer carries unfragmented, at most MaxAutoMTU: the route's MTU
	// (RouteMTU) less the IP, UDP and sdrnet headers; a Datagram endpoint,
	// whose peers agree on it without a handshake, takes its interface's
	// MTU instead. The two ends use the smaller of their MTUs.
	MTU int
	// ChunkSize is the bitmap granularity, a power-of-two multiple of the
	// MTU; zero means the largest such within 64 KiB.
	ChunkSize int
	// MaxMsgs bounds messages in flight per direction (a power of two);
	// zero means 1024.
	MaxMsgs int
	// MaxBytesInFlight bounds unacknowledged bytes: the window that keeps
	// a fast sender from overrunning the receiver's socket buffer. Zero
	// means DefaultPacedWindow under BBR, DefaultWindow otherwise;
	// negative, no bound.
	MaxBytesInFlight int64
	// Rate paces data packets to this many bits per second; zero: as fast
	// as the socket takes them. Set it to the path's capacity on a network
	// that drops what it cannot carry.
	Rate float64
	// HandshakeTimeout bounds Dial; zero means 10 s.
	HandshakeTimeout time.Duration
	// IdleTimeout closes a connection whose peer is silent this long,
	// keepalives included; zero means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// SocketBuffer is the socket buffer size in bytes; zero means 4 MiB
	// (forced past the system cap when running as root).
	SocketBuffer int
	// Auth protects every packet after the handshake, with keys from a
	// Noise handshake (noise.go): "full" (AEAD over the whole packet,
	// payload encrypted), "header" (a tag over each packet's headers:
	// stops forged and injected packets, leaves payloads in clear) or
	// "none". Empty means DefaultAuth. Both ends use the stronger of
	// their two; a dialer refuses a listener that offers less.
	Auth string
	// PSK, when set (PSKLen bytes), is a key both ends must hold: the
	// handshake then authenticates the peer as well.
	PSK []byte
	// CC is the congestion controller of data sent: "none", "bbr"
	// (model-based, for wide-area paths), "nscc"
	// (Ultra Ethernet's window law: queueing delay and ECN), "dcqcn" or
	// "dcqcn-paper" (rate-based, ECN only). Empty means DefaultCC.
	CC string
	// LineRate is the link rate in bits per second a controller starts
	// from (DCQCN's initial rate, NSCC's maximum window with the RTT);
	// zero means Rate, or, when that is zero too, a guess of 10 Gbit/s
	// that NSCC raises while its window is the only limit and the path
	// shows no queue.
	LineRate float64
	// TargetDelay is the queueing delay NSCC (CC "nscc") steers to; zero
	// means its default (1 ms, or a twentieth of the round trip where
	// that is more). Lower leaves more of a shallow shared queue to
	// loss-based TCP beside it; higher keeps a lone connection's path
	// fuller. Negative, or set with another controller, is an error.
	TargetDelay time.Duration
	// MinRTO is the least retransmission timeout; zero means
	// DefaultMinRTO. Negative is an error.
	MinRTO time.Duration
	// MaxConns bounds a listener's connections, open and half-open; zero
	// means core.DefaultMaxConns (256). Dialers past it are refused.
	MaxConns int
	// MaxHalfOpen bounds a listener's connections whose dialer has not yet
	// confirmed the handshake; zero means core.DefaultMaxHalfOpen (32).
	// With the stateless retry that comes before them (a dialer must echo
	// a cookie bound to its address), this and MaxConns bound what a flood
	// of HELLOs can make a listener hold.
	MaxHalfOpen int
	// CodecWorkers is how many goroutines of an endpoint code erasure-code
	// parity ahead, while a sub-message's data packets leave, off the
	// goroutine that drives the datapath. Zero (the default) means none:
	// that goroutine codes each sub-message's parity when it is due. On a
	// 2-core machine running both ends, workers cost more than they
	// save; they are for a sender with cores to spare. Negative is an
	// error.
	CodecWorkers int

	// bind, when set, replaces real UDP sockets (tests).
	bind func() udp.Bind
}

func (c *Config) orDefault() Config {
	if c == nil {
		return Config{}
	}
	return *c
}

// DefaultChunkSize bounds the chunk where Config.ChunkSize is zero: the
// chunk is the largest power-of-two multiple of the MTU within it.
const DefaultChunkSize = 64 << 10

// DefaultAuth is the protection of the zero Config: everything sealed.
const DefaultAuth = "full"

// DefaultIdleTimeout: a peer silent this long is dead. Keepalives go out
// every third of it, so a live idle peer answers twice over; 5 s is 100
// round trips of a 50 ms long-haul path, past any loss burst the
// reliability schemes ride out, yet a dead peer is reported well before a
// user reaches for Ctrl-C.
const DefaultIdleTimeout = 5 * time.Second

// DefaultLineRate is where a congestion controller starts when neither
// LineRate nor Rate is set.
const DefaultLineRate = 10e9

// DefaultMinRTO is the least retransmission timeout of a real
// connection: QUIC's default max_ack_delay (RFC 9000). A host's loop,
// scheduler and softirqs delay ACKs by milliseconds with nothing lost,
// and a timer fired then resends a chunk for nothing. Losses are found by
// NACKs first; the timer is the backstop for a lost tail.
const DefaultMinRTO = 25 * time.Millisecond

// DefaultHostNoise is how late a real host's RTT samples may run with no
// queue (cc.Params.HostNoise): chosen, not measured. Go's scheduler and
// the kernel's softirqs delay samples on a loaded host, and a target of
// a fast average read that delay as a queue. A delay-steered controller keeps its target at least this
// high and judges the queue by the least delay over several times it.
const DefaultHostNoise = time.Millisecond

// DefaultCC is the congestion controller of the zero Config: BBR
// (internal/cc), made for the wide-area paths SDR-RDMA is for: it paces
// at the path's measured delivery rate, so loss its reliability scheme
// repairs is not taken for congestion, and it backs off where loss
// comes with a queue. bench/wan.sh measures it against kernel TCP;
// docs/performance.md holds the figures. "nscc" is Ultra Ethernet's
// delay and ECN law; "none" is for a path the user owns.
const DefaultCC = "bbr"

// DefaultWindow is the default MaxBytesInFlight of the window-based
// controllers, 2 MiB: at most half the socket buffer the datapath asks
// for, so a burst never overruns the receiver's socket
// (TestDefaultWindowFitsSocket keeps them so).
const DefaultWindow = 2 << 20

// DefaultPacedWindow is the default MaxBytesInFlight under BBR, whose
// own window (twice the measured BDP) is the limit and whose pacer keeps
// bursts off the receiver's socket. It is the socket buffer the datapath
// asks for: where the receiving host is the bottleneck (loopback, a busy
// receiver) what is in flight waits in that socket, and more than it
// holds is what a pause of the receiver drops. 16 MiB is the BDP of
// 1 Gbit/s over 130 ms; a longer or faster path wants a larger window.
const DefaultPacedWindow = 16 << 20

// check turns the configuration into the core's, with errors naming the
// field.
func (c Config) check() (core.Config, error) {
	ccName := c.CC
	if ccName == "" {
		ccName = DefaultCC
	}
	window := c.MaxBytesInFlight
	switch {
	case window == 0 && ccName == "bbr":
		window = DefaultPacedWindow
	case window == 0:
		window = DefaultWindow
	case window < 0:
		window = 0
	}
	if chunk := int64(cmp.Or(c.ChunkSize, DefaultChunkSize)); window > 0 && window < chunk {
		return core.Config{}, fmt.Errorf("sdr: Config.MaxBytesInFlight %d is below one chunk (%d bytes): no chunk could ever be sent", window, chunk)
	}
	minRTO := c.MinRTO
	if minRTO == 0 {
		minRTO = DefaultMinRTO
	}
	cc := core.Config{MTU: c.MTU, ChunkSize: c.ChunkSize, MaxMsgs: c.MaxMsgs,
		MaxBytesInFlight: window, Rate: c.Rate, Paths: c.Paths,
		HandshakeTimeout: monotime.FromStd(c.HandshakeTimeout), IdleTimeout: monotime.FromStd(cmp.Or(c.IdleTimeout, DefaultIdleTimeout)),
		MinRTO: monotime.FromStd(minRTO)}
	if c.MTU == 0 {
		if ch := c.ChunkSize; ch != 0 && (ch < MaxAutoMTU || ch&(ch-1) != 0) {
			return cc, fmt.Errorf("sdr: Config.ChunkSize %d: with MTU zero (from the route, which may lower it and the chunk with it) want zero or a power of two of at least %d", ch, MaxAutoMTU)
		}
		cc.MTU, cc.PathMTU = MaxAutoMTU, routePayload
	}
	name := c.Scheme
	if name == "" {
		name = "sr-nack"
	}
	s, auto, err := autoscheme.Parse(name)
	if err != nil {
		return cc, fmt.Errorf("sdr: Config.Scheme: %w", err)
	}
	cc.Scheme = s
	if auto {
		cc.Chooser = autoscheme.NewBackground()
	}
	auth, err := parseAuth(c.Auth)
	if err != nil {
		return cc, err
	}
	if len(c.PSK) != 0 && len(c.PSK) != PSKLen {
		return cc, fmt.Errorf("sdr: Config.PSK has %d bytes, want %d", len(c.PSK), PSKLen)
	}
	if auth != wire.ProtectNone {
		psk := c.PSK
		cc.Protection = auth
		cc.Keys = func(initiator bool) core.KeyExchange { return newNoiseKeys(psk, initiator) }
	}
	if cc.CC, err = congestion.Parse(ccName); err != nil {
		return cc, fmt.Errorf("sdr: Config.CC: %w", err)
	}
	cc.HostNoise = monotime.FromStd(DefaultHostNoise)
	switch {
	case c.TargetDelay < 0:
		return cc, fmt.Errorf("sdr: Config.TargetDelay %v is negative", c.TargetDelay)
	case c.TargetDelay > 0 && ccName != "nscc":
		return cc, fmt.Errorf("sdr: Config.TargetDelay is nscc's, and Config.CC is %q", ccName)
	case c.TargetDelay > 0:
		cc.CC = congestion.NSCCWith(congestion.NSCCOptions{Target: monotime.FromStd(c.TargetDelay)})
	}
	if c.CodecWorkers < 0 {
		return cc, fmt.Errorf("sdr: Config.CodecWorkers %d is negative", c.CodecWorkers)
	}
	switch {
	case c.LineRate < 0:
		return cc, fmt.Errorf("sdr: Config.LineRate %g is negative", c.LineRate)
	case c.LineRate > 0:
		cc.LineRate = c.LineRate
	case c.Rate == 0:
		// A guess: NSCC doubles it while its window is the only limit.
		cc.LineRate, cc.LearnLineRate = DefaultLineRate, true
	}
	switch {
	case c.Select != "":
		if cc.Select, err = path.ParseKind(c.Select); err != nil {
			return cc, fmt.Errorf("sdr: Config.Select: %w", err)
		}
	case c.Paths > 1:
		cc.Select = path.Oblivious // Stellar's finding: spraying beats the rest
	}
	if c.Paths < 0 || c.Paths > core.MaxPaths {
		return cc, fmt.Errorf("sdr: Config.Paths %d out of range 1..%d", c.Paths, core.MaxPaths)
	}
	if c.Rate < 0 {
		return cc, fmt.Errorf("sdr: Config.Rate %g is negative", c.Rate)
	}
	if c.MaxConns < 0 || c.MaxHalfOpen < 0 {
		return cc, fmt.Errorf("sdr: Config.MaxConns %d and MaxHalfOpen %d must not be negative", c.MaxConns, c.MaxHalfOpen)
	}
	if c.MinRTO < 0 {
		return cc, fmt.Errorf("sdr: Config.MinRTO %v is negative", c.MinRTO)
	}
	// Let the core check the rest, and report it as ours.
	if _, err := core.NewEndpoint().NewConn(1, 1, udpAddrZero, cc); err != nil {
		return cc, fmt.Errorf("sdr: Config: %w", err)
	}
	return cc, nil
}

func (c Config) newBind() udp.Bind {
	if c.bind != nil {
		return c.bind()
	}
	return udp.NewUDPBind(udp.Config{SocketBuffer: c.SocketBuffer})
}
