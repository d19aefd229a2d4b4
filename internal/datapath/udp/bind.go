// Package udp is sdrnet's real datapath: UDP sockets behind a small,
// batch-oriented Bind interface. wireguard-go's conn.Bind is the model.
//
// # Paths
//
// One connection spreads over N paths. On a real network a path is a local
// UDP socket with its own source port: ECMP switches hash the port, so the
// paths of one connection take different routes through the fabric (the
// trick of Ultra Ethernet and AWS SRD). A Bind owns the N sockets of one
// local endpoint and names them by index, 0..N-1; Open reports their ports,
// which are the path entropies the protocol core sees on the wire.
//
// # Implementations
//
// Three implementations keep one contract and pass one conformance test:
//
//   - UDPBind, on Linux: recvmmsg/sendmmsg, UDP GSO on send and GRO on
//     receive, large socket buffers, a gather send of header+payload without
//     a copy, ECN (bind_linux.go). On other systems UDPBind is StdBind.
//   - StdBind, everywhere: net.UDPConn, one datagram per system call.
//   - MemoryBind: datagrams exchanged in process through a MemoryNetwork,
//     with optional loss and congestion-mark hooks, for tests.
//
// # ECN
//
// A congestion controller learns of congestion from loss, late; ECN lets a
// router (or a queue discipline) say so early, by rewriting the ECN field of
// the IP header (RFC 3168) of a datagram marked ECN-capable to "congestion
// experienced" (CE) instead of dropping it. Where it can, UDPBind marks every
// datagram it sends ECT(0) and reports a CE mark on a received datagram in
// Message.CE; Stats().ECN says whether it can. The Bind cannot know whether
// the peer reads the marks on what it sends: a protocol that reacts to CE
// should check, from the peer's feedback, that marks come back (as QUIC's
// ECN validation does) before it trusts their absence.
package udp

import (
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"
)

// Limits of every Bind.
const (
	// MaxPaths is the most paths (sockets) one Bind opens.
	MaxPaths = 128
	// MaxDatagram is the largest datagram a Bind sends: the UDP payload of
	// a 64 KiB IPv4 packet, used for IPv6 too.
	MaxDatagram = 65507
	// DefaultBatchSize is BatchSize of every implementation here.
	DefaultBatchSize = 64
	// DefaultSocketBuffer is the socket buffer Open asks for when
	// Config.SocketBuffer is 0: room for a few milliseconds at 10 Gbit/s
	// and more, so a receiving process that the scheduler holds off its
	// CPU that long does not drop what arrives meanwhile (each drop costs
	// a resend, and a burst of them a timeout). The kernel charges it only
	// as datagrams wait.
	DefaultSocketBuffer = 16 << 20
)

// Errors of Send and Open. Send wraps them with details; test them with
// errors.Is. A closed Bind returns net.ErrClosed.
var (
	// ErrTooLarge: a datagram longer than MaxDatagram. It is not sent.
	ErrTooLarge = errors.New("udp: datagram longer than MaxDatagram")
	// ErrBadMessage: a Message naming no path of the Bind, with N outside
	// 0..len(Buf), or with an address the Bind cannot send to.
	ErrBadMessage = errors.New("udp: bad message")
	// ErrNotOpen: Send or Receive before Open.
	ErrNotOpen = errors.New("udp: bind not open")
	// ErrOpen: Open of a Bind that was opened before (a Bind opens once).
	ErrOpen = errors.New("udp: bind already opened")
)

// A Message is one datagram of a batch given to Send or Receive.
//
// To Send, the datagram is Buf[:N] followed by Payload: the two are gathered
// into one datagram by the kernel (an iovec each), never copied into one
// buffer, so a protocol core can write its header into Buf and point Payload
// at the application's message. It leaves from path Path to Addr.
//
// From Receive, Buf[:N] holds the datagram, Addr is its source, and Path is
// the index of the local socket it arrived on. CE is true when the
// datagram's IP header carried the ECN codepoint "congestion experienced"
// (the low two bits of the IPv4 TOS byte or IPv6 traffic class both set):
// a queue on the way was filling up. It is false where the Bind cannot see
// the field (Stats().ECN false). Receive ignores Payload; Send ignores CE,
// since a Bind with ECN marks every datagram it sends ECT(0).
type Message struct {
	Buf     []byte
	N       int
	Payload []byte
	Addr    netip.AddrPort
	Path    int
	CE      bool
	// Stamp, from Receive, is when the kernel received the datagram, in
	// Unix nanoseconds (CLOCK_REALTIME), or 0 where the Bind cannot tell
	// (Stats().Stamps false). The time between it and the read is the
	// receiving host's own delay: an RTT measured from the read carries
	// it, one measured from the stamp does not.
	Stamp int64
	// Refused, from Receive, says this is no datagram: a datagram we
	// sent to Addr came back refused (ICMP port, host or network
	// unreachable), where the Bind can tell (Linux). N is 0.
	Refused bool
}

// Bind is a set of UDP sockets, one per path, that sends and receives
// batches of datagrams in caller-owned buffers.
//
// A Bind is opened once and closed once; it is not reopened. Send and
// Receive may run concurrently with each other and with Close, Stats and
// SetReceiveDeadline. Concurrent calls of Send are serialized, and so are
// concurrent calls of Receive: the intended use is one goroutine sending and
// one receiving.
type Bind interface {
	// Open creates paths sockets (1..MaxPaths) on local's address: path 0
	// on local's port (0 picks an ephemeral port), the others on ephemeral
	// ports. It returns the port of each path. An IPv4 address opens IPv4
	// sockets, an IPv6 address IPv6 sockets; the unspecified IPv6 address
	// (or the zero AddrPort) opens dual-stack sockets where the system has
	// them.
	Open(local netip.AddrPort, paths int) (ports []uint16, err error)

	// Receive blocks until at least one datagram has arrived on any path,
	// then returns the n >= 1 datagrams that are ready, up to len(msgs), in
	// msgs[:n] (see Message). Datagrams of one path come in arrival order.
	// The Bufs belong to the caller: Receive writes datagrams into them and
	// keeps none, but it may swap Bufs between entries of msgs. A datagram
	// longer than the Buf it would land in is dropped and counted in
	// Stats().Truncated. Receive returns net.ErrClosed once the Bind is
	// closed (Close unblocks it), and an error that is
	// os.ErrDeadlineExceeded when the receive deadline passes first.
	// Receive sets CE of every message it fills: true for a datagram that
	// arrived marked "congestion experienced", false otherwise, and always
	// false where Stats().ECN is false.
	Receive(msgs []Message) (n int, err error)

	// Send sends each message of msgs as one datagram (see Message). The
	// datagrams of one path leave in the order of msgs. Send returns once
	// the kernel has taken them, marked ECN-capable, ECT(0), where
	// Stats().ECN is true. A message that cannot be sent (longer than
	// MaxDatagram, a bad Path, N or Addr, or refused by the kernel) is
	// skipped and counted, the others are sent, and Send returns the first
	// such error (errors.Is ErrTooLarge or ErrBadMessage for the first
	// kinds). It returns net.ErrClosed once the Bind is closed.
	Send(msgs []Message) error

	// SetReceiveDeadline sets the time after which a blocked or future
	// Receive fails with os.ErrDeadlineExceeded; the zero time clears it.
	SetReceiveDeadline(t time.Time) error

	// Close closes the sockets and unblocks Receive. A second Close
	// returns nil.
	Close() error

	// BatchSize is the number of messages per call that Send and Receive
	// handle well; larger batches work too.
	BatchSize() int

	// Stats returns counters since Open and what the Bind uses now.
	Stats() Stats
}

// Stats counts a Bind's traffic. Datagrams are counted one by one, GSO
// segments and GRO-coalesced datagrams included.
type Stats struct {
	Sent, SentBytes         uint64 // datagrams handed to the kernel (or the memory network)
	Received, ReceivedBytes uint64 // datagrams returned by Receive
	SendCalls, RecvCalls    uint64 // system calls (sendmmsg, recvmmsg, or one per datagram)

	Oversize   uint64 // datagrams Send refused: longer than MaxDatagram
	SendErrors uint64 // datagrams Send did not send for other reasons (bad message, kernel error)
	Truncated  uint64 // datagrams Receive dropped: longer than the caller's Buf
	Dropped    uint64 // MemoryBind: datagrams lost by the loss hook or a full queue

	GSO         bool   // UDP_SEGMENT in use (Linux)
	GRO         bool   // UDP_GRO in use (Linux)
	GSOSends    uint64 // datagrams sent with more than one segment
	GROReceives uint64 // datagrams received coalesced, more than one segment

	// ECN: every path sends ECT(0) and Receive reports CE marks (Linux
	// UDPBind where the kernel lets it set IP_TOS/IPV6_TCLASS and read
	// them back; MemoryBind, whose marks come from SetMark). False: no
	// marks are sent and CE is always false.
	ECN        bool
	CEReceived uint64 // datagrams Receive returned with CE set
	// Stamps: Receive gives each datagram the kernel's receive time
	// (Message.Stamp; Linux SO_TIMESTAMPNS on every path).
	Stamps   bool
	Refusals uint64 // Refused messages Receive returned (ICMP unreachables)

	RecvBuffer, SendBuffer int // socket buffer sizes the kernel reports (path 0)
}

// Config tunes a UDPBind or StdBind. The zero value works.
type Config struct {
	// SocketBuffer is the SO_RCVBUF and SO_SNDBUF size to ask for, in
	// bytes; 0 means DefaultSocketBuffer. On Linux, running as root, the
	// FORCE variants lift the system's cap (net.core.rmem_max).
	SocketBuffer int
	// DisableGSO and DisableGRO turn UDP segmentation offload off on
	// send and receive (Linux; elsewhere there is none).
	DisableGSO bool
	DisableGRO bool
	// DisableECN keeps datagrams Not-ECT and CE unread (Linux; elsewhere
	// there is no ECN), for a network that mishandles ECN-capable traffic.
	DisableECN bool
}

func (c Config) socketBuffer() int {
	if c.SocketBuffer <= 0 {
		return DefaultSocketBuffer
	}
	return c.SocketBuffer
}

// checkMessage validates m for a Bind with paths paths and returns its
// datagram length. v4only is true for a Bind whose sockets are IPv4.
func checkMessage(m *Message, paths int, v4only bool) (int, error) {
	if m.Path < 0 || m.Path >= paths {
		return 0, fmt.Errorf("%w: path %d of %d", ErrBadMessage, m.Path, paths)
	}
	if m.N < 0 || m.N > len(m.Buf) {
		return 0, fmt.Errorf("%w: N %d outside 0..len(Buf) %d", ErrBadMessage, m.N, len(m.Buf))
	}
	if !m.Addr.IsValid() || m.Addr.Port() == 0 {
		return 0, fmt.Errorf("%w: address %v", ErrBadMessage, m.Addr)
	}
	if v4only && !m.Addr.Addr().Unmap().Is4() {
		return 0, fmt.Errorf("%w: IPv6 address %v on an IPv4 bind", ErrBadMessage, m.Addr)
	}
	size := m.N + len(m.Payload)
	if size > MaxDatagram {
		return size, fmt.Errorf("%w: %d bytes", ErrTooLarge, size)
	}
	return size, nil
}

// listenAddr is the network and address Open gives the socket of a path.
func listenAddr(local netip.AddrPort, port uint16) (string, netip.AddrPort) {
	a := local.Addr()
	switch {
	case !a.IsValid():
		return "udp", netip.AddrPortFrom(netip.IPv6Unspecified(), port)
	case a.Is4() || a.Is4In6():
		return "udp4", netip.AddrPortFrom(a.Unmap(), port)
	case a.IsUnspecified():
		return "udp", netip.AddrPortFrom(a, port)
	default:
		return "udp6", netip.AddrPortFrom(a, port)
	}
}

func checkPaths(paths int) error {
	if paths < 1 || paths > MaxPaths {
		return fmt.Errorf("udp: %d paths, want 1..%d", paths, MaxPaths)
	}
	return nil
}

// Lifecycle of a Bind.
const (
	stateNew int32 = iota
	stateOpen
	stateClosed
)

// counters are the atomic counters behind Stats.
type counters struct {
	sent, sentBytes         atomic.Uint64
	received, receivedBytes atomic.Uint64
	sendCalls, recvCalls    atomic.Uint64
	oversize, sendErrors    atomic.Uint64
	truncated, dropped      atomic.Uint64
	gsoSends, groReceives   atomic.Uint64
	ceReceived              atomic.Uint64
	refusals                atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Sent:          c.sent.Load(),
		SentBytes:     c.sentBytes.Load(),
		Received:      c.received.Load(),
		ReceivedBytes: c.receivedBytes.Load(),
		SendCalls:     c.sendCalls.Load(),
		RecvCalls:     c.recvCalls.Load(),
		Oversize:      c.oversize.Load(),
		SendErrors:    c.sendErrors.Load(),
		Truncated:     c.truncated.Load(),
		Dropped:       c.dropped.Load(),
		GSOSends:      c.gsoSends.Load(),
		GROReceives:   c.groReceives.Load(),
		CEReceived:    c.ceReceived.Load(),
		Refusals:      c.refusals.Load(),
	}
}

// refused counts a message Send did not send because of err.
func (c *counters) refused(err error) {
	if errors.Is(err, ErrTooLarge) {
		c.oversize.Add(1)
	} else {
		c.sendErrors.Add(1)
	}
}
