package sdr

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/datapath/udp"
)

func payload(n int, seed uint64) []byte {
	b := make([]byte, n)
	_, _ = rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), 's', 'd', 'r'}).Read(b)
	return b
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// pair listens and dials with cfg, on real loopback sockets unless mem is
// set, and returns both ends.
func pair(t *testing.T, cfg Config, mem *udp.MemoryNetwork) (client, server *Conn) {
	t.Helper()
	if mem != nil {
		cfg.bind = func() udp.Bind { return mem.NewBind() }
	}
	l, err := Listen("127.0.0.1:0", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	ctx := ctxFor(t, 20*time.Second)
	var acceptErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		server, acceptErr = l.Accept(ctx)
	}()
	client, err = Dial(ctx, l.Addr().String(), &cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	wg.Wait()
	if acceptErr != nil {
		t.Fatal(acceptErr)
	}
	return client, server
}

// transfer sends msg from a to b and checks it arrived intact.
func transfer(t *testing.T, a, b *Conn, msg []byte) {
	t.Helper()
	ctx := ctxFor(t, 60*time.Second)
	buf := make([]byte, len(msg))
	r, err := b.PostRecv(buf)
	if err != nil {
		t.Fatal(err)
	}
	sendErr := make(chan error, 1)
	go func() { sendErr <- a.Send(ctx, msg) }()
	n, err := r.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-sendErr; err != nil {
		t.Fatal(err)
	}
	if n != len(msg) || sha256.Sum256(buf) != sha256.Sum256(msg) {
		t.Fatalf("received %d bytes, hash mismatch: %v", n, sha256.Sum256(buf) != sha256.Sum256(msg))
	}
	var chunks Bitmap
	msgLen, err := r.ChunkBitmap(&chunks)
	if err != nil || chunks.Len() == 0 || msgLen != len(msg) {
		t.Fatalf("bitmap: %v, %d chunks, length %d", err, chunks.Len(), msgLen)
	}
	if i := chunks.NextMissing(0); i != chunks.Len() {
		t.Fatalf("chunk %d missing in a complete message", i)
	}
	if err := r.Complete(); err != nil {
		t.Fatal(err)
	}
}

func TestLoopback(t *testing.T) {
	for _, scheme := range []string{"sr", "sr-nack", "ec:32,8", "xor:32,8", "gbn", "csaud"} {
		t.Run(scheme, func(t *testing.T) {
			cfg := Config{Scheme: scheme, Paths: 4, Rate: 4e9}
			a, b := pair(t, cfg, nil)
			for i := range 3 {
				transfer(t, a, b, payload(3<<20+i*1000, uint64(i)))
			}
			transfer(t, b, a, payload(1<<20, 9)) // and the other way
			if st := a.Stats(); len(st.Paths) != 4 || st.DataPackets == 0 {
				t.Fatalf("stats: %d paths, %d data packets", len(st.Paths), st.DataPackets)
			}
		})
	}
}

// TestLossyMemoryNetwork runs 16 paths over an in-memory network that
// loses 1% of datagrams, one path dying mid-transfer.
func TestLossyMemoryNetwork(t *testing.T) {
	for _, scheme := range []string{"sr", "sr-nack", "ec:32,8", "ec:32,8/codec-workers", "gbn", "csaud"} {
		t.Run(scheme, func(t *testing.T) {
			workers := 0
			if name, ok := strings.CutSuffix(scheme, "/codec-workers"); ok {
				scheme, workers = name, 2
			}
			mem := udp.NewMemoryNetwork()
			var mu sync.Mutex
			rng := rand.New(rand.NewPCG(1, 2))
			var deadPort uint16
			start := time.Now()
			mem.SetLoss(func(from, to netip.AddrPort, _ []byte) bool {
				mu.Lock()
				defer mu.Unlock()
				if deadPort != 0 && from.Port() == deadPort && time.Since(start) > 50*time.Millisecond {
					return true
				}
				return rng.Float64() < 0.01
			})
			cfg := Config{Scheme: scheme, Paths: 16, Rate: 2e9, CodecWorkers: workers}
			a, b := pair(t, cfg, mem)
			mu.Lock()
			deadPort = a.LocalAddr().Port() + 0 // path 0's port: the client's first socket
			mu.Unlock()
			transfer(t, a, b, payload(16<<20, 3))
			// 16 MiB of (32,8) over 64 KiB chunks: 8 sub-messages.
			if got := a.Stats().ParityCodedAhead; (workers > 0) != (got == 8) {
				t.Fatalf("%d sub-messages coded ahead with %d codec workers", got, workers)
			}
		})
	}
}

func TestDialNobody(t *testing.T) {
	l, err := Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nobody listens there any more
	start := time.Now()
	_, err = Dial(ctxFor(t, 10*time.Second), addr, &Config{HandshakeTimeout: 700 * time.Millisecond})
	if err == nil {
		t.Fatal("dial to nobody succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("dial gave up after %v", d)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want string
	}{
		{Config{Scheme: "fec"}, "Config.Scheme"},
		{Config{Select: "fastest"}, "Config.Select"},
		{Config{Paths: 200}, "Config.Paths"},
		{Config{MTU: 10}, "MTU 10 out of range"},
		{Config{Rate: -1}, "Config.Rate"},
		{Config{TargetDelay: -time.Millisecond}, "Config.TargetDelay"},
		{Config{TargetDelay: time.Millisecond}, "Config.TargetDelay is nscc's"},
		{Config{CodecWorkers: -1}, "Config.CodecWorkers"},
	} {
		_, err := Listen("127.0.0.1:0", &tt.cfg)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tt.want)) {
			t.Errorf("%+v: %v, want %q", tt.cfg, err, tt.want)
		}
	}
	if _, err := Dial(context.Background(), "not an address", nil); err == nil {
		t.Error("bad address accepted")
	}
	var _ io.Reader = bytes.NewReader(nil)
	_ = errors.New
}

// TestMessageTooLarge: a message longer than the posted buffer fails both
// the receive and the send with ErrMessageTooLarge, an error an outside
// program can name.
func TestMessageTooLarge(t *testing.T) {
	a, b := pair(t, Config{}, nil)
	ctx := ctxFor(t, 10*time.Second)
	r, err := b.PostRecv(make([]byte, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	sendErr := a.Send(ctx, make([]byte, 2<<20))
	_, recvErr := r.Wait(ctx)
	if !errors.Is(sendErr, ErrMessageTooLarge) || !errors.Is(recvErr, ErrMessageTooLarge) {
		t.Errorf("send: %v; receive: %v; want both ErrMessageTooLarge", sendErr, recvErr)
	}
}

// TestDialNotSdrnet: a UDP service that answers, but not as sdrnet, is
// named as such when the handshake times out, not as a silent peer.
func TestDialNotSdrnet(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo([]byte("220 hello from some other service\r\n"), from)
		}
	}()
	_, err = Dial(ctxFor(t, 10*time.Second), pc.LocalAddr().String(), &Config{HandshakeTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "but not as sdrnet") || !errors.Is(err, core.ErrHandshakeTimeout) {
		t.Fatalf("dial: %v, want a handshake timeout naming a service that is not sdrnet", err)
	}
}
