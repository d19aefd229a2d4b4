package sdr

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/datapath/udp"
)

// lossyBind is a real UDP Bind that loses a share of what it sends.
type lossyBind struct {
	udp.Bind
	mu   sync.Mutex
	rng  *rand.Rand
	loss float64
	kept []udp.Message
	lost *atomic.Int64
}

func (b *lossyBind) Send(msgs []udp.Message) error {
	b.mu.Lock()
	b.kept = b.kept[:0]
	for _, m := range msgs {
		if b.rng.Float64() < b.loss {
			b.lost.Add(1)
			continue
		}
		b.kept = append(b.kept, m)
	}
	kept := b.kept
	b.mu.Unlock()
	if len(kept) == 0 {
		return nil
	}
	return b.Bind.Send(kept)
}

// TestDatagramPeers runs 64 datagram endpoints in one process over
// loopback sockets that lose 1% of datagrams. One of them (the hub)
// exchanges messages with all 63 others through one socket and no
// connections; every message is checked byte for byte, and once all are
// done the hub's peers hold no message slots.
func TestDatagramPeers(t *testing.T) {
	const n = 64
	var mu sync.Mutex
	var lost atomic.Int64
	seed := uint64(0)
	cfg := Config{Auth: "none", Scheme: "csaud", Paths: 2, Rate: 1e9, MTU: 1400}
	cfg.bind = func() udp.Bind {
		mu.Lock()
		defer mu.Unlock()
		seed++
		return &lossyBind{Bind: udp.NewUDPBind(udp.Config{}), rng: rand.New(rand.NewPCG(seed, 7)), loss: 0.01, lost: &lost}
	}
	eps := make([]*Datagram, n)
	for i := range eps {
		d, err := ListenDatagram("127.0.0.1:0", &cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		eps[i] = d
	}
	hub := eps[0]
	ctx := ctxFor(t, 60*time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 4*n)
	// exchange sends msg from a to b, b having posted for it, and checks
	// what b received.
	exchange := func(a, b *Datagram, msg []byte) {
		defer wg.Done()
		toB, err := a.Peer(b.Addr().String())
		if err == nil {
			var fromA *Conn
			if fromA, err = b.Peer(a.Addr().String()); err == nil {
				err = checkedExchange(ctx, toB, fromA, msg)
			}
		}
		if err != nil {
			errs <- fmt.Errorf("%v -> %v: %w", a.Addr(), b.Addr(), err)
		}
	}
	for i := 1; i < n; i++ {
		wg.Add(2)
		go exchange(hub, eps[i], payload(64<<10+i*977, uint64(i)))
		go exchange(eps[i], hub, payload(32<<10+i*131, uint64(1000+i)))
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("datagrams lost: %d", lost.Load())
	if lost.Load() == 0 {
		t.Error("the lossy sockets lost nothing")
	}
	// Slots go back to the pool once the last ACK has left.
	deadline := time.Now().Add(10 * time.Second)
	for hub.Stats().Leased != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	st := hub.Stats()
	t.Logf("hub: %+v", st)
	if st.Peers != n-1 || st.Leased != 0 {
		t.Errorf("hub has %d peers (want %d), %d still leasing slots", st.Peers, n-1, st.Leased)
	}
}

// checkedExchange posts a buffer on to, sends msg on from and checks that
// every byte arrived.
func checkedExchange(ctx context.Context, from, to *Conn, msg []byte) error {
	buf := make([]byte, len(msg))
	r, err := to.PostRecv(buf)
	if err != nil {
		return err
	}
	sendErr := make(chan error, 1)
	go func() { sendErr <- from.Send(ctx, msg) }()
	got, err := r.Wait(ctx)
	if err != nil {
		return err
	}
	if err := <-sendErr; err != nil {
		return err
	}
	if got != len(msg) || sha256.Sum256(buf) != sha256.Sum256(msg) {
		return errors.New("received bytes differ from those sent")
	}
	return r.Complete()
}

func TestDatagramConfig(t *testing.T) {
	if _, err := ListenDatagram("127.0.0.1:0", nil); !errors.Is(err, ErrDatagramAuth) {
		t.Errorf("default Auth: %v, want ErrDatagramAuth", err)
	}
	if _, err := ListenDatagram("0.0.0.0:0", &Config{Auth: "none"}); err == nil {
		t.Error("an unspecified address was accepted")
	}
}
