package sdr_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/sdrnet/sdrnet/sdr"
)

// A receiver posts a buffer for each message; the sender sends it whole.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := sdr.Listen("127.0.0.1:0", nil)
	if err != nil {
		panic(err)
	}
	defer l.Close()

	go func() {
		conn, err := sdr.Dial(ctx, l.Addr().String(), &sdr.Config{Scheme: "ec:32,8"})
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		_ = conn.Send(ctx, []byte("hello, long-haul RDMA"))
	}()

	conn, err := l.Accept(ctx)
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 1<<20)
	r, err := conn.PostRecv(buf)
	if err != nil {
		panic(err)
	}
	n, err := r.Wait(ctx)
	if err != nil {
		panic(err)
	}
	var chunks sdr.Bitmap
	_, _ = r.ChunkBitmap(&chunks)
	fmt.Printf("%s (%d chunk)\n", buf[:n], chunks.Len())
	_ = r.Complete()
	// Output: hello, long-haul RDMA (1 chunk)
}

// Streams cut an io.Reader into messages and reassemble them in order.
func ExampleConn_SendStream() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := sdr.Listen("127.0.0.1:0", nil)
	if err != nil {
		panic(err)
	}
	defer l.Close()
	go func() {
		conn, err := sdr.Dial(ctx, l.Addr().String(), &sdr.Config{Paths: 4})
		if err != nil {
			panic(err)
		}
		data := strings.Repeat("0123456789", 100_000) // 1 MB
		if _, err := conn.SendStream(ctx, strings.NewReader(data), &sdr.StreamConfig{MsgSize: 64 << 10}); err != nil {
			panic(err)
		}
		_ = conn.Close() // the receiver has verified the stream
	}()
	conn, err := l.Accept(ctx)
	if err != nil {
		panic(err)
	}
	var got bytes.Buffer
	n, err := conn.RecvStream(ctx, &got, &sdr.StreamConfig{MsgSize: 64 << 10})
	fmt.Println(n, err, got.String()[:10])
	// Output: 1000000 <nil> 0123456789
}
