package sdr

import (
	"bytes"
	"crypto/sha256"
	"testing"
	"time"
)

// TestLinkemMultipathReceiver puts the link emulator in front of a
// receiver that sprays its own packets (ACCEPT, ACKs, CTS) over 8 source
// ports. Each of the proxy's per-client sockets must take the replies from
// every one of those ports, not only from the address it forwards to:
// otherwise the handshake never completes (recv --paths N behind linkem).
func TestLinkemMultipathReceiver(t *testing.T) {
	const size = 8 << 20
	msg := payload(size, 88)
	want := sha256.Sum256(msg)

	l, err := Listen("127.0.0.1:0", &Config{Paths: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	proxy := throughLinkem(t, l, "delay=1ms")

	ctx := ctxFor(t, time.Minute)
	type result struct {
		n   int64
		sum [32]byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		conn, err := l.Accept(ctx)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer conn.Close()
		h := sha256.New()
		n, err := conn.RecvStream(ctx, h, &StreamConfig{MsgSize: 1 << 20})
		var r result
		r.n, r.err = n, err
		copy(r.sum[:], h.Sum(nil))
		done <- r
	}()

	// A short handshake timeout turns the bug (replies from the
	// receiver's other ports dropped) into a prompt failure.
	c, err := Dial(ctx, proxy.Addr().String(), &Config{Paths: 4, HandshakeTimeout: 10 * time.Second})
	if err != nil {
		t.Fatalf("dial through linkem to a receiver with 8 paths: %v", err)
	}
	defer c.Close()
	acked, err := c.SendStream(ctx, bytes.NewReader(msg), &StreamConfig{MsgSize: 1 << 20, Size: size})
	if err != nil {
		t.Fatalf("send stream: %v (%d bytes acknowledged)", err, acked)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("receive stream: %v", r.err)
	}
	if r.n != size || r.sum != want {
		t.Fatalf("received %d bytes with SHA-256 %x, want %d bytes with %x", r.n, r.sum, size, want)
	}
}
