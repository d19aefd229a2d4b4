package sdr

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

// TestSDKSurface: a send started without waiting carries an immediate
// value; the receive signals its bitmap's changes without polling, and
// copies the bitmap and one chunk's packets into reusable Bitmaps.
func TestSDKSurface(t *testing.T) {
	a, b := pair(t, Config{}, nil)
	ctx := ctxFor(t, 20*time.Second)
	msg := make([]byte, 1<<20+100)
	for i := range msg {
		msg[i] = byte(i * 13)
	}
	buf := make([]byte, len(msg))
	r, err := b.PostRecv(buf)
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.SendAsyncImm(msg, 0x5d12)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ResendChunks(0, 1); !errors.Is(err, ErrNotOpen) {
		t.Errorf("ResendChunks on a plain send: %v, want ErrNotOpen", err)
	}
	var bm Bitmap
	changes := 0
	for done := false; !done; {
		select {
		case <-r.Changed():
			changes++
			if _, err := r.ChunkBitmap(&bm); err != nil { // re-arms Changed
				t.Fatal(err)
			}
		case <-r.Done():
			done = true
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	if changes == 0 {
		t.Error("Changed never fired")
	}
	if err := s.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if imm, ok, err := r.Immediate(); err != nil || !ok || imm != 0x5d12 {
		t.Fatalf("Immediate = %#x, %v, %v", imm, ok, err)
	}
	n, err := r.ChunkBitmap(&bm)
	if err != nil || n != len(msg) || bm.Len() != 17 || !bm.All() || bm.NextMissing(0) != 17 {
		t.Fatalf("bitmap of the whole message: length %d, %d chunks, all %v, %v", n, bm.Len(), bm.All(), err)
	}
	if err := r.ExpandChunk(16, &bm); err != nil || bm.Len() != 1 || !bm.Test(0) {
		t.Fatalf("last chunk's packets: %d, %v", bm.Len(), err)
	}
	if err := r.ExpandChunk(17, &bm); !errors.Is(err, ErrChunkRange) {
		t.Errorf("ExpandChunk past the end: %v, want ErrChunkRange", err)
	}
	if !bytes.Equal(buf, msg) {
		t.Fatal("message differs")
	}
	if err := r.Complete(); err != nil {
		t.Fatal(err)
	}
}
