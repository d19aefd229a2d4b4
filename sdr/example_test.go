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
	sent := make(chan error, 1)
	go func() {
		conn, err := sdr.Dial(ctx, l.Addr().String(), &sdr.Config{Paths: 4})
		if err != nil {
			sent <- err
			return
		}
		defer conn.Close()
		data := strings.Repeat("0123456789", 100_000) // 1 MB
		_, err = conn.SendStream(ctx, strings.NewReader(data), &sdr.StreamConfig{MsgSize: 64 << 10})
		sent <- err
	}()
	conn, err := l.Accept(ctx)
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	var got bytes.Buffer
	n, err := conn.RecvStream(ctx, &got, &sdr.StreamConfig{MsgSize: 64 << 10})
	// The sender learns the stream was verified from the receiver's last
	// acknowledgement, which may come after RecvStream returns: wait for it
	// before the deferred cancel ends the context under it.
	fmt.Println(n, err, <-sent, got.String()[:10])
	// Output: 1000000 <nil> <nil> 0123456789
}

// Three ranks of a collective on datagram endpoints: each talks to the
// others through one socket, with no connection to any of them.
func ExampleListenDatagram() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg := &sdr.Config{Auth: "none", Scheme: "csaud"} // trusted fabric: no handshake, no keys
	var ranks []*sdr.Datagram
	for range 3 {
		d, err := sdr.ListenDatagram("127.0.0.1:0", cfg)
		if err != nil {
			panic(err)
		}
		defer d.Close()
		ranks = append(ranks, d)
	}
	// Rank 0 receives one message from each of the others.
	var recvs []*sdr.Recv
	for _, from := range ranks[1:] {
		peer, err := ranks[0].Peer(from.Addr().String())
		if err != nil {
			panic(err)
		}
		r, err := peer.PostRecv(make([]byte, 64))
		if err != nil {
			panic(err)
		}
		recvs = append(recvs, r)
	}
	for i, d := range ranks[1:] {
		to, err := d.Peer(ranks[0].Addr().String())
		if err != nil {
			panic(err)
		}
		if err := to.Send(ctx, fmt.Appendf(nil, "gradient shard %d", i+1)); err != nil {
			panic(err)
		}
	}
	for _, r := range recvs {
		n, err := r.Wait(ctx)
		if err != nil {
			panic(err)
		}
		fmt.Println(string(r.Buffer()[:n]))
		_ = r.Complete()
	}
	fmt.Println("peers of rank 0:", ranks[0].Stats().Peers)
	// Output:
	// gradient shard 1
	// gradient shard 2
	// peers of rank 0: 2
}
