package sdr

import (
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/units"
)

// Sentinel errors: every error the package returns for these conditions
// wraps one of them, so errors.Is tells them apart.
var (
	// ErrConnClosed: the connection was closed (by either side).
	ErrConnClosed = errors.New("sdr: connection closed")
	// ErrPeerAborted: the peer closed the connection with an error code
	// (see PeerAbortError).
	ErrPeerAborted = errors.New("sdr: peer aborted the connection")
	// ErrIncomplete: a stream ended before every byte its sender declared
	// arrived (see IncompleteError).
	ErrIncomplete = errors.New("sdr: stream incomplete")
	// ErrStreamCorrupt: a stream's bytes do not match the length or digest
	// its sender declared.
	ErrStreamCorrupt = errors.New("sdr: stream corrupt")
	// ErrRefused: nothing listens at the peer's address any more (its
	// host answered with ICMP port unreachable), or its listener turned
	// the connection away (see RefusedError).
	ErrRefused = errors.New("sdr: connection refused")
	// ErrPeerSilent: the peer stopped answering, keepalives included,
	// for Config.IdleTimeout (see PeerSilentError).
	ErrPeerSilent = errors.New("sdr: peer silent")
	// ErrMessageTooLarge: a message did not fit the buffer the receiver
	// posted for it; both the receive and the send fail with it.
	ErrMessageTooLarge = errors.New("sdr: message larger than the receiver's posted buffer")
)

// messageErr turns the core's reasons a message failed into this
// package's errors.
func messageErr(err error) error {
	if errors.Is(err, core.ErrMessageTooLarge) {
		return ErrMessageTooLarge
	}
	return err
}

// RefusedError names the peer that refused, and how.
type RefusedError struct {
	Peer     netip.AddrPort
	Listener bool // the listener answered, turning the connection away
}

func (e *RefusedError) Error() string {
	if e.Listener {
		return fmt.Sprintf("connection refused by %v: the listener turned it away (not accepting, or the key exchange failed: a different pre-shared key, or protection the listener does not offer)", e.Peer)
	}
	return fmt.Sprintf("connection refused by %v: nothing listens there (ICMP port unreachable)", e.Peer)
}

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// publicErr turns the core's reasons a connection ended into this
// package's errors.
func publicErr(err error, peer netip.AddrPort) error {
	if pe, ok := errors.AsType[*core.PeerClosedError](err); ok {
		return &PeerAbortError{Code: pe.Code, Reason: pe.Reason}
	}
	if errors.Is(err, core.ErrUnreachable) {
		return &RefusedError{Peer: peer}
	}
	if errors.Is(err, core.ErrRefused) {
		return &RefusedError{Peer: peer, Listener: true}
	}
	return err
}

// PeerSilentError says which peer fell silent, for how long, and how much
// had been delivered each way.
type PeerSilentError struct {
	Peer     netip.AddrPort
	Silent   time.Duration
	Sent     uint64 // bytes of our messages the peer had whole
	Received uint64 // payload bytes we received from it
}

func (e *PeerSilentError) Error() string {
	return fmt.Sprintf("peer %v silent for %v (keepalives unanswered); it had %d bytes of ours whole (%s), we had received %d bytes (%s)",
		e.Peer, e.Silent.Round(time.Millisecond), e.Sent, units.FormatSize(int64(e.Sent)), e.Received, units.FormatSize(int64(e.Received)))
}

// Is makes errors.Is(err, ErrPeerSilent) true.
func (e *PeerSilentError) Is(target error) bool { return target == ErrPeerSilent }

// Close codes the stream functions use to tell the peer why they gave up.
const (
	// CodeAborted: the application gave up on the stream (interrupted,
	// a read or write error).
	CodeAborted uint32 = 2
	// CodeProtocol: the peer broke the stream format.
	CodeProtocol uint32 = 3
)

// PeerAbortError is a CLOSE with a non-zero code from the peer.
type PeerAbortError struct {
	Code   uint32
	Reason string
}

func (e *PeerAbortError) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("peer aborted the connection (code %d)", e.Code)
	}
	return fmt.Sprintf("peer aborted the connection (code %d): %s", e.Code, e.Reason)
}

// Is makes errors.Is(err, ErrPeerAborted) true.
func (e *PeerAbortError) Is(target error) bool { return target == ErrPeerAborted }

// IncompleteError says how much of a stream arrived before it ended, and
// why it ended.
type IncompleteError struct {
	Received int64 // bytes received, in order, from the stream's start
	Declared int64 // bytes the sender declared; 0 when it declared none
	Cause    error // why the stream ended
}

func (e *IncompleteError) Error() string {
	var s string
	if e.Declared > 0 {
		s = fmt.Sprintf("incomplete: received %d of %d bytes (%s of %s)", e.Received, e.Declared,
			units.FormatSize(e.Received), units.FormatSize(e.Declared))
	} else {
		s = fmt.Sprintf("incomplete: sender stopped after %d bytes (%s)", e.Received, units.FormatSize(e.Received))
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Is makes errors.Is(err, ErrIncomplete) true.
func (e *IncompleteError) Is(target error) bool { return target == ErrIncomplete }

// Unwrap returns the cause.
func (e *IncompleteError) Unwrap() error { return e.Cause }

// CorruptError is a stream whose END the receiver rejected.
type CorruptError struct {
	// Verdict is the receiver's reason, in words ("length differs",
	// "digest differs", ...).
	Verdict  string
	Received int64 // bytes the receiver holds
	Declared int64 // bytes the END declared
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("stream rejected: %s (received %d bytes, sender declared %d)", e.Verdict, e.Received, e.Declared)
}

// Is makes errors.Is(err, ErrStreamCorrupt) true.
func (e *CorruptError) Is(target error) bool { return target == ErrStreamCorrupt }
