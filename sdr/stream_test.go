package sdr

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/datapath/udp"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// dialAccept dials addr, which leads to l, and accepts there; the test
// closes both ends.
func dialAccept(ctx context.Context, t *testing.T, l *Listener, addr string, cfg *Config) (*Conn, *Conn) {
	t.Helper()
	a, err := Dial(ctx, addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b, err := l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return a, b
}

// streamResult is what one side of a stream ended with.
type streamResult struct {
	n   int64
	err error
}

// recvInto runs RecvStream on c in the background.
func recvInto(ctx context.Context, c *Conn, w io.Writer, sc *StreamConfig) chan streamResult {
	ch := make(chan streamResult, 1)
	go func() {
		n, err := c.RecvStream(ctx, w, sc)
		ch <- streamResult{n, err}
	}()
	return ch
}

// TestStreamVerified sends streams through linkem with loss, reordering
// and duplication, declared and undeclared, and checks every byte.
func TestStreamVerified(t *testing.T) {
	for _, tt := range []struct {
		name     string
		size     int
		declared bool
	}{
		{"declared", 6<<20 + 123, true},
		{"undeclared", 3<<20 + 1, false},
		{"empty", 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// A listener per stream: a HELLO the link duplicated late
			// would otherwise be the next stream's peer.
			l, err := Listen("127.0.0.1:0", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			proxy := throughLinkem(t, l, "delay=1ms,loss=1%,reorder=0.02/1ms,dup=0.01")
			ctx := ctxFor(t, time.Minute)
			a, b := dialAccept(ctx, t, l, proxy.Addr().String(), &Config{Paths: 4, Rate: 1e9})
			data := payload(tt.size, 5)
			var got bytes.Buffer
			recvd := recvInto(ctx, b, &got, &StreamConfig{MsgSize: 1 << 20, Depth: 4})
			sc := &StreamConfig{MsgSize: 1 << 20, Depth: 4}
			if tt.declared {
				sc.Size = int64(len(data))
			}
			n, err := a.SendStream(ctx, bytes.NewReader(data), sc)
			if err != nil || n != int64(len(data)) {
				t.Fatalf("SendStream = %d, %v", n, err)
			}
			r := <-recvd
			if r.err != nil || r.n != int64(len(data)) {
				t.Fatalf("RecvStream = %d, %v", r.n, r.err)
			}
			if sha256.Sum256(got.Bytes()) != sha256.Sum256(data) {
				t.Fatalf("stream: got %d bytes, want %d identical", got.Len(), len(data))
			}
		})
	}
}

// slowReader yields n bytes, then blocks until its context ends.
type slowReader struct {
	ctx  context.Context
	n    int
	read chan struct{} // closed once the n bytes are out
	once sync.Once
}

func (r *slowReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		r.once.Do(func() { close(r.read) })
		<-r.ctx.Done()
		return 0, r.ctx.Err()
	}
	k := min(len(p), r.n)
	clear(p[:k])
	r.n -= k
	return k, nil
}

// TestStreamCutShort ends streams every way but the right one; the
// receiver must never report success, and must say how much arrived.
func TestStreamCutShort(t *testing.T) {
	const declared = 16 << 20
	const sentBytes = 5 << 20
	for _, tt := range []struct {
		name string
		cut  func(t *testing.T, a, b *Conn, cancel context.CancelFunc)
		// what the receiver's error must also match
		cause error
	}{
		{"sender interrupted", func(_ *testing.T, _, _ *Conn, cancel context.CancelFunc) { cancel() }, ErrPeerAborted},
		{"sender closes early", func(_ *testing.T, a, _ *Conn, _ context.CancelFunc) { _ = a.Close() }, ErrConnClosed},
		{"forged graceful close, auth none", func(t *testing.T, _, b *Conn, _ context.CancelFunc) {
			forgeClose(t, b) // without keys the connection believes it
		}, ErrConnClosed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{Rate: 2e9}
			if strings.Contains(tt.name, "auth none") {
				cfg.Auth = "none"
			}
			a, b := pair(t, cfg, nil)
			ctx := ctxFor(t, time.Minute)
			sendCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			var got bytes.Buffer
			recvd := recvInto(ctx, b, &got, &StreamConfig{MsgSize: 1 << 20})
			src := &slowReader{ctx: sendCtx, n: sentBytes, read: make(chan struct{})}
			sent := make(chan streamResult, 1)
			go func() {
				n, err := a.SendStream(sendCtx, src, &StreamConfig{MsgSize: 1 << 20, Size: declared})
				sent <- streamResult{n, err}
			}()
			<-src.read
			// Let what was read arrive, so the receiver has something.
			for deadline := time.Now().Add(10 * time.Second); b.Stats().RecvBytes < sentBytes-1<<20; {
				if time.Now().After(deadline) {
					t.Fatal("nothing arrived")
				}
				time.Sleep(5 * time.Millisecond)
			}
			tt.cut(t, a, b, cancel)
			r := <-recvd
			var inc *IncompleteError
			if !errors.As(r.err, &inc) || !errors.Is(r.err, ErrIncomplete) || !errors.Is(r.err, tt.cause) {
				t.Fatalf("RecvStream = %d, %v; want an IncompleteError caused by %v", r.n, r.err, tt.cause)
			}
			if inc.Declared != declared || inc.Received != r.n || r.n > sentBytes || int64(got.Len()) != r.n {
				t.Fatalf("IncompleteError %+v, returned %d, wrote %d", inc, r.n, got.Len())
			}
			cancel() // a sender still waiting for its reader gives up
			if s := <-sent; s.err == nil || s.n > sentBytes {
				t.Fatalf("SendStream = %d, %v; want an error and at most %d acknowledged", s.n, s.err, sentBytes)
			}
		})
	}
}

// forgeClose sends, from a stranger's socket, a graceful CLOSE (no code,
// no reason) for b's connection.
func forgeClose(t *testing.T, b *Conn) {
	t.Helper()
	cl := wire.Close{Conn: b.core.ID()}
	buf := make([]byte, wire.CloseLen)
	if _, err := cl.Encode(buf); err != nil {
		t.Fatal(err)
	}
	u, err := net.Dial("udp", b.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if _, err := u.Write(buf); err != nil {
		t.Fatal(err)
	}
}

// TestForgedCloseDropped: with packets authenticated (the default), a
// forged CLOSE is dropped and counted, and the stream completes verified.
func TestForgedCloseDropped(t *testing.T) {
	a, b := pair(t, Config{Rate: 2e9}, nil)
	ctx := ctxFor(t, time.Minute)
	data := payload(16<<20, 8)
	var got bytes.Buffer
	recvd := recvInto(ctx, b, &got, &StreamConfig{MsgSize: 1 << 20})
	sent := make(chan streamResult, 1)
	go func() {
		n, err := a.SendStream(ctx, bytes.NewReader(data), &StreamConfig{MsgSize: 1 << 20, Size: int64(len(data))})
		sent <- streamResult{n, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); b.Stats().RecvPackets < 100; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nothing arrived")
		}
	}
	forgeClose(t, b)
	if r := <-recvd; r.err != nil || sha256.Sum256(got.Bytes()) != sha256.Sum256(data) {
		t.Fatalf("RecvStream = %d, %v", r.n, r.err)
	}
	if s := <-sent; s.err != nil {
		t.Fatal(s.err)
	}
	if st := b.Stats().Protect; st.Unprotected != 1 {
		t.Fatalf("receiver's protection stats %+v: want the forged CLOSE counted", st)
	}
}

// TestStreamDigestMismatch sends frames by hand whose END declares the
// wrong digest: both sides must reject the stream.
func TestStreamDigestMismatch(t *testing.T) {
	a, b := pair(t, Config{}, nil)
	ctx := ctxFor(t, 30*time.Second)
	recvd := recvInto(ctx, b, io.Discard, &StreamConfig{MsgSize: 4096})
	verdict, err := a.PostRecv(make([]byte, wire.StreamVerdictLen))
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, wire.StreamHeaderLen+1000)
	f := wire.StreamFrame{Kind: wire.StreamData}
	_, _ = f.EncodeHeader(msg)
	if err := a.Send(ctx, msg); err != nil {
		t.Fatal(err)
	}
	end := wire.StreamFrame{Kind: wire.StreamEnd, Offset: 1000, Digest: sha256.Sum256([]byte("not these bytes"))}
	endBuf := make([]byte, wire.StreamEndLen)
	_, _ = end.EncodeHeader(endBuf)
	if err := a.Send(ctx, endBuf); err != nil {
		t.Fatal(err)
	}
	if r := <-recvd; !errors.Is(r.err, ErrStreamCorrupt) || r.n != 1000 {
		t.Fatalf("RecvStream = %d, %v; want ErrStreamCorrupt", r.n, r.err)
	}
	n, err := verdict.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := wire.ParseStreamFrame(verdict.buf[:n])
	if err != nil || v.Verdict != wire.VerdictDigest {
		t.Fatalf("verdict %+v, %v", v, err)
	}
}

// TestStreamDeclaredTooLong: a reader shorter than the declared size
// fails the sender, and the receiver learns the stream is incomplete.
func TestStreamDeclaredTooLong(t *testing.T) {
	a, b := pair(t, Config{}, nil)
	ctx := ctxFor(t, 30*time.Second)
	recvd := recvInto(ctx, b, io.Discard, &StreamConfig{MsgSize: 64 << 10})
	n, err := a.SendStream(ctx, bytes.NewReader(make([]byte, 100_000)), &StreamConfig{MsgSize: 64 << 10, Size: 200_000})
	if err == nil || n != 100_000 {
		t.Fatalf("SendStream = %d, %v; want an error after 100000 bytes", n, err)
	}
	if r := <-recvd; !errors.Is(r.err, ErrIncomplete) || !errors.Is(r.err, ErrPeerAborted) || r.n != 100_000 {
		t.Fatalf("RecvStream = %d, %v", r.n, r.err)
	}
}

func TestStreamConfigErrors(t *testing.T) {
	a, _ := pair(t, Config{}, nil)
	for _, sc := range []StreamConfig{{MsgSize: 10}, {Depth: -1}, {Size: -5}} {
		if _, err := a.SendStream(context.Background(), bytes.NewReader(nil), &sc); err == nil {
			t.Errorf("%+v accepted", sc)
		}
	}
}

// TestPeerSilent: a peer that vanishes (SIGKILL, a cable pulled) is
// reported within the idle timeout, naming it and what was delivered.
func TestPeerSilent(t *testing.T) {
	mem := udp.NewMemoryNetwork()
	var mu sync.Mutex
	var dead netip.AddrPort
	mem.SetLoss(func(from, _ netip.AddrPort, _ []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		return from == dead
	})
	a, b := pair(t, Config{IdleTimeout: 300 * time.Millisecond}, mem)
	transfer(t, a, b, payload(100_000, 1))
	mu.Lock()
	dead = b.LocalAddr()
	mu.Unlock()
	start := time.Now()
	select {
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a silent peer went unnoticed")
	}
	var pe *PeerSilentError
	if !errors.As(a.Err(), &pe) || !errors.Is(a.Err(), ErrPeerSilent) || pe.Peer != b.LocalAddr() ||
		pe.Sent != 100_000 || pe.Silent < 300*time.Millisecond {
		t.Fatalf("after %v: %v (%+v)", time.Since(start), a.Err(), pe)
	}
}

// TestDialRefused: dialing a port where nothing listens fails at once,
// naming the address, not after the handshake timeout.
func TestDialRefused(t *testing.T) {
	l, err := Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	start := time.Now()
	_, err = Dial(ctxFor(t, 20*time.Second), addr, &Config{HandshakeTimeout: 10 * time.Second})
	var re *RefusedError
	if !errors.As(err, &re) || !errors.Is(err, ErrRefused) || re.Peer.String() != addr || !strings.Contains(err.Error(), "refused by "+addr) {
		t.Fatalf("after %v: %v", time.Since(start), err)
	}
}

// TestListenerMaxConns: Config.MaxConns bounds a listener's connections;
// a dialer past it is refused, not left to time out.
func TestListenerMaxConns(t *testing.T) {
	l, err := Listen("127.0.0.1:0", &Config{MaxConns: 1, MaxHalfOpen: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := ctxFor(t, 30*time.Second)
	dialAccept(ctx, t, l, l.Addr().String(), nil)
	_, err = Dial(ctx, l.Addr().String(), &Config{HandshakeTimeout: time.Hour})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("second dial past MaxConns 1: %v, want refused", err)
	}
	if _, err := Listen("127.0.0.1:0", &Config{MaxHalfOpen: -1}); err == nil || !strings.Contains(err.Error(), "MaxHalfOpen") {
		t.Fatalf("negative MaxHalfOpen: %v", err)
	}
}
