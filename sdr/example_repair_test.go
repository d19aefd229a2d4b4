package sdr_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/sdrnet/sdrnet/sdr"
)

// An application builds its own reliability on the receive bitmap, as
// SDR-RDMA's SDK lets it: the data goes out once under scheme none
// (SendOpen); the receiver watches its chunk bitmap fill (Changed,
// ChunkBitmap) and, once nothing new has arrived for a while, reports the
// missing chunks in a message of its own; the sender writes exactly those
// chunks again at their offsets (ResendChunks) until the receiver reports
// the message whole.
func Example_applicationScheme() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, err := sdr.Listen("127.0.0.1:0", nil)
	if err != nil {
		panic(err)
	}
	defer l.Close()
	msg := make([]byte, 1<<20)
	for i := range msg {
		msg[i] = byte(i * 7)
	}
	sent := make(chan error, 1)
	go func() {
		conn, err := sdr.Dial(ctx, l.Addr().String(), nil)
		if err != nil {
			sent <- err
			return
		}
		defer conn.Close()
		sent <- sendRepaired(ctx, conn, msg)
	}()
	conn, err := l.Accept(ctx)
	if err != nil {
		panic(err)
	}
	buf := make([]byte, len(msg))
	n, err := recvRepaired(ctx, conn, buf, 20*time.Millisecond)
	fmt.Println(n, err, sha256.Sum256(buf) == sha256.Sum256(msg), <-sent)
	// Output: 1048576 <nil> true <nil>
}

// A report is the receiver's word on the message: whole, or the runs of
// chunks still missing (first, count), as big-endian uint32s.
const reportWhole = 1

// sendRepaired sends msg under the application's scheme: once, then the
// chunks each report names, until a report says the message is whole.
func sendRepaired(ctx context.Context, conn *sdr.Conn, msg []byte) error {
	s, err := conn.SendOpen(msg)
	if err != nil {
		return err
	}
	report := make([]byte, 4+8*maxRuns)
	for {
		r, err := conn.PostRecv(report)
		if err != nil {
			return err
		}
		n, err := r.Wait(ctx)
		if err != nil {
			return err
		}
		if err := r.Complete(); err != nil {
			return err
		}
		if binary.BigEndian.Uint32(report) == reportWhole {
			return s.End()
		}
		for b := report[4:n]; len(b) >= 8; b = b[8:] {
			first, count := binary.BigEndian.Uint32(b), binary.BigEndian.Uint32(b[4:])
			if err := s.ResendChunks(int(first), int(count)); err != nil {
				return err
			}
		}
	}
}

// maxRuns bounds the missing runs one report names; the rest wait for the
// next.
const maxRuns = 64

// recvRepaired receives one message into buf under the application's
// scheme: whenever quiet passes with no new chunk after the first, it
// reports what is missing. It returns the message's length once every
// byte is in, or ctx's error.
func recvRepaired(ctx context.Context, conn *sdr.Conn, buf []byte, quiet time.Duration) (int, error) {
	r, err := conn.PostRecv(buf)
	if err != nil {
		return 0, err
	}
	var bm sdr.Bitmap
	report := make([]byte, 0, 4+8*maxRuns)
	timer := time.NewTimer(quiet)
	defer timer.Stop()
	for {
		select {
		case <-r.Done():
			n, err := r.Wait(ctx)
			if err != nil {
				return 0, err
			}
			if err := r.Complete(); err != nil {
				return 0, err
			}
			return n, conn.Send(ctx, binary.BigEndian.AppendUint32(report[:0], reportWhole))
		case <-r.Changed():
			if _, err := r.ChunkBitmap(&bm); err != nil { // reading re-arms Changed
				return 0, err
			}
			timer.Reset(quiet)
		case <-timer.C:
			if _, err := r.ChunkBitmap(&bm); err != nil {
				return 0, err
			}
			if bm.Len() == 0 { // nothing yet: the sender is late, not lossy
				timer.Reset(quiet)
				continue
			}
			report = binary.BigEndian.AppendUint32(report[:0], 0)
			for i := bm.NextMissing(0); i < bm.Len() && len(report) < cap(report); {
				end := i + 1
				for end < bm.Len() && !bm.Test(end) {
					end++
				}
				report = binary.BigEndian.AppendUint32(report, uint32(i))
				report = binary.BigEndian.AppendUint32(report, uint32(end-i))
				i = bm.NextMissing(end)
			}
			if err := conn.Send(ctx, report); err != nil {
				return 0, err
			}
			timer.Reset(quiet)
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}
