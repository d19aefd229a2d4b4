package sdr_test

import (
	"context"
	"crypto/sha256"
	"sync"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/linkem"
	"github.com/sdrnet/sdrnet/sdr"
)

// TestApplicationSchemeThroughLoss runs the example's application-built
// reliability (scheme none, bitmap reports, chunks resent at their
// offsets) over real sockets through the link emulator with 2% loss each
// way and 10 ms of delay: every byte must arrive, by resending only.
func TestApplicationSchemeThroughLoss(t *testing.T) {
	l, err := sdr.Listen("127.0.0.1:0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	lcfg, err := linkem.ParseSpec("delay=5ms,loss=2%")
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := linkem.Listen("127.0.0.1:0", l.Addr().String(), lcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	msg := make([]byte, 8<<20)
	for i := range msg {
		msg[i] = byte(i*131 + i>>12)
	}
	var wg sync.WaitGroup
	var sendErr error
	var st sdr.Stats
	// The sender hangs up only once the receiver is through: it may hear
	// the final report before the receiver hears it acknowledged, and a
	// CLOSE then would fail the receiver's send of it (under 2% loss,
	// one run in a loaded full suite did).
	received := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		conn, err := sdr.Dial(ctx, proxy.Addr().String(), &sdr.Config{Rate: 1e9})
		if err != nil {
			sendErr = err
			return
		}
		defer conn.Close()
		sendErr = sendRepaired(ctx, conn, msg)
		st = conn.Stats()
		select {
		case <-received:
		case <-ctx.Done(): // the test failed before receiving
		}
	}()
	conn, err := l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(msg))
	n, err := recvRepaired(ctx, conn, buf, 60*time.Millisecond)
	close(received)
	wg.Wait()
	if err != nil || sendErr != nil {
		t.Fatalf("receive: %v; send: %v", err, sendErr)
	}
	if n != len(msg) || sha256.Sum256(buf) != sha256.Sum256(msg) {
		t.Fatalf("received %d of %d bytes, SHA-256 match %v", n, len(msg), sha256.Sum256(buf) == sha256.Sum256(msg))
	}
	if st.RetxBytes == 0 {
		t.Fatal("nothing was resent through 2% loss: the application's scheme was not exercised")
	}
	t.Logf("%d bytes resent by the application's scheme, %d data packets", st.RetxBytes, st.DataPackets)
}
