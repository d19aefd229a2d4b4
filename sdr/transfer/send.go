// Package transfer moves a file, or a directory tree, over an sdr.Conn
// so that a transfer cut short resumes where it stopped. The receiver keeps, beside the partial
// file, SDR's receive bitmap for the whole file - which blocks it holds,
// with each block's SHA-256 - and a rerun of the same transfer moves only
// the blocks still missing. Held blocks are kept only if they are of the
// sender's file (same size and modification time, and the sender's own
// bytes hash to the digests the receiver holds); anything else is set
// aside under a new name, never mixed in. Every transfer ends with the
// file's SHA-256 checked against the bytes on the receiver's disk. A
// directory moves as its files' bytes in one stream, with a manifest of
// its entries (manifest.go).
package transfer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/sdrnet/sdrnet/sdr"
)

// Sizes of a transfer.
const (
	// DefaultMsgSize is the most bytes one DATA message holds, its head
	// included; a receiver's must be at least its sender's.
	DefaultMsgSize = 8 << 20
	// DefaultDepth is how many DATA messages are in flight at once.
	DefaultDepth = 8
	// BlockSize is the least unit a resume keeps or moves; larger files
	// use larger blocks, so the bitmap has at most targetBlocks bits.
	BlockSize    = 1 << 20
	minBlock     = 4096
	targetBlocks = 1 << 16
	maxBlocks    = 1 << 20
)

// Source is what a sender sends: Size bytes read from R.
type Source struct {
	R    io.ReaderAt
	Size int64
	// ModTime and Mode say which file it is; a resume keeps held blocks
	// only for the same size and ModTime. A zero ModTime is data that is
	// no file (synthetic), identified by its size alone.
	ModTime time.Time
	Mode    fs.FileMode
	// Manifest, for a directory (ReadDir), lists its entries; R then
	// reads its files' bytes one after another.
	Manifest []byte
}

// Options set up a transfer on either side. The zero value works.
type Options struct {
	MsgSize int // see DefaultMsgSize
	Depth   int // see DefaultDepth
	// Progress, where set, is called with the transfer so far as DATA is
	// acknowledged (sender) or written (receiver).
	Progress func(Result)
	// Stall ends a transfer whose data has not moved for this long while
	// the peer is still there; zero means sdr.DefaultIdleTimeout.
	Stall time.Duration
}

func (o Options) withDefaults() Options {
	if o.MsgSize == 0 {
		o.MsgSize = DefaultMsgSize
	}
	if o.Depth == 0 {
		o.Depth = DefaultDepth
	}
	if o.Stall == 0 {
		o.Stall = sdr.DefaultIdleTimeout
	}
	return o
}

// Result is what a transfer did.
type Result struct {
	Size    int64 // the file's length
	Moved   int64 // payload bytes this transfer carried
	Resumed int64 // bytes the receiver held from before and kept
}

// blockFor picks the block size for a file: BlockSize, doubled until the
// file has at most targetBlocks, and no larger than a DATA can carry.
func blockFor(size int64, msgSize int) (uint32, error) {
	room := msgSize - dataHead
	if room < minBlock {
		return 0, fmt.Errorf("transfer: message size %d leaves no room for a %d-byte block", msgSize, minBlock)
	}
	b := int64(BlockSize)
	for size/b > targetBlocks && b*2 <= int64(room) {
		b *= 2
	}
	for b > int64(room) {
		b /= 2
	}
	if (size+b-1)/b > maxBlocks {
		return 0, fmt.Errorf("transfer: %d bytes in blocks of %d make more than %d blocks; use larger messages", size, b, maxBlocks)
	}
	return uint32(b), nil
}

// Send offers src to the receiver, sends the blocks it lacks, and waits
// for its verdict. It returns nil only once the receiver has checked the
// whole file's length and SHA-256 against the bytes on its disk. Send does
// not close c.
func Send(ctx context.Context, c *sdr.Conn, src Source, opt Options) (Result, error) {
	opt = opt.withDefaults()
	res := Result{Size: src.Size}
	block, err := blockFor(src.Size, opt.MsgSize)
	if err != nil {
		return res, err
	}
	o := offer{Size: src.Size, Mode: uint32(src.Mode), BlockSize: block,
		MaxData: uint32((opt.MsgSize-dataHead)/int(block)) * block}
	if !src.ModTime.IsZero() {
		o.ModTime = src.ModTime.UnixNano()
	}
	if src.Manifest != nil {
		o.Flags, o.ManifestLen = flagDir, uint32(len(src.Manifest))
	}
	stateRecv, err := c.PostRecv(make([]byte, stateLen(o.blocks())))
	if err != nil {
		return res, err
	}
	verdictRecv, err := c.PostRecv(make([]byte, verdictLen))
	if err != nil {
		return res, err
	}
	if _, err := c.SendAsync(o.encode()); err != nil {
		return res, err
	}
	if src.Manifest != nil {
		if _, err := c.SendAsync(encodeManifestMsg(src.Manifest)); err != nil {
			return res, err
		}
	}
	n, err := stateRecv.Wait(ctx)
	if err != nil {
		return res, fmt.Errorf("waiting for the receiver's state: %w", err)
	}
	st, err := parseState(stateRecv.Buffer()[:n], o.blocks())
	_ = stateRecv.Complete()
	if err != nil {
		if errors.Is(err, errNotTransfer) {
			err = fmt.Errorf("the receiver does not speak sdrnet's transfer (an older sdrnet?): %w", err)
		}
		return res, err
	}
	reuse := st.Have.count() > 0
	if reuse {
		if reuse, err = holdsSame(src, &o, &st); err != nil {
			return res, err
		}
	}
	if !reuse {
		st.Have = newBitmap(o.blocks())
	}
	for i := range o.blocks() {
		if st.Have.has(i) {
			res.Resumed += blockLen(&o, i)
		}
	}
	if _, err := c.SendAsync(encodePlan(reuse)); err != nil {
		return res, err
	}
	// Data moves while first transmissions go out or ACKs come back.
	dctx, stop := watchProgress(ctx, c, opt.Stall, func(st *sdr.Stats) uint64 { return st.DataBytes + st.AckedBytes }, func() error {
		return fmt.Errorf("nothing sent or acknowledged for %v while the receiver is still there", opt.Stall)
	})
	defer stop()
	sum, err := sendMissing(dctx, c, src, &o, st.Have, opt, &res)
	if err != nil {
		return res, cause(dctx, err)
	}
	if err := c.Send(dctx, encodeEnd(src.Size, sum)); err != nil {
		return res, cause(dctx, err)
	}
	stop() // the receiver now reads the whole file back: no data moves
	n, err = verdictRecv.Wait(ctx)
	if err != nil {
		return res, fmt.Errorf("the receiver has every block but sent no verdict: %w", err)
	}
	v, err := parseVerdict(verdictRecv.Buffer()[:n])
	_ = verdictRecv.Complete()
	if err != nil {
		return res, err
	}
	if !v.OK {
		return res, fmt.Errorf("the receiver rejected the file: %s (it holds %d of %d bytes)", v.Reason, v.Written, src.Size)
	}
	return res, nil
}

// blockLen is block i's length: the last may be short.
func blockLen(o *offer, i int) int64 {
	return min(int64(o.BlockSize), o.Size-int64(i)*int64(o.BlockSize))
}

// holdsSame reports whether the blocks the receiver holds are of src:
// each hashes to the digest the receiver keeps for it.
func holdsSame(src Source, o *offer, st *state) (bool, error) {
	buf := make([]byte, o.BlockSize)
	for i := range o.blocks() {
		if !st.Have.has(i) {
			continue
		}
		b := buf[:blockLen(o, i)]
		if err := readAt(src.R, b, int64(i)*int64(o.BlockSize)); err != nil {
			return false, err
		}
		if sha256.Sum256(b) != st.Digests[i] {
			return false, nil
		}
	}
	return true, nil
}

// sendMissing sends every block have lacks, in runs of consecutive
// blocks up to a DATA's size, Depth messages in flight, and returns the
// whole file's SHA-256: one pass in order, the held blocks read for the
// digest alone.
func sendMissing(ctx context.Context, c *sdr.Conn, src Source, o *offer, have bitmap, opt Options, res *Result) ([32]byte, error) {
	h := sha256.New()
	bufs := make([][]byte, opt.Depth)
	waits := make([]*sdr.Sending, opt.Depth)
	lens := make([]int64, opt.Depth)
	perMsg := int(o.MaxData / o.BlockSize)
	var acked int64
	reap := func(slot int) error {
		if waits[slot] == nil {
			return nil
		}
		if err := waits[slot].Wait(ctx); err != nil {
			return err
		}
		acked += lens[slot]
		res.Moved = acked
		waits[slot] = nil
		if opt.Progress != nil {
			opt.Progress(*res)
		}
		return nil
	}
	var heldBuf []byte
	slot := 0
	for i := 0; i < o.blocks(); {
		if have.has(i) {
			if heldBuf == nil {
				heldBuf = make([]byte, o.BlockSize)
			}
			b := heldBuf[:blockLen(o, i)]
			if err := readAt(src.R, b, int64(i)*int64(o.BlockSize)); err != nil {
				return [32]byte{}, err
			}
			h.Write(b)
			i++
			continue
		}
		first := i
		for i < o.blocks() && i-first < perMsg && !have.has(i) {
			i++
		}
		if err := reap(slot); err != nil {
			return [32]byte{}, err
		}
		if bufs[slot] == nil {
			bufs[slot] = make([]byte, dataHead+int(o.MaxData))
		}
		off := int64(first) * int64(o.BlockSize)
		n := min(int64(i-first)*int64(o.BlockSize), o.Size-off)
		b := bufs[slot][:dataHead+n]
		putHead(b, kindData)
		be.PutUint64(b[8:], uint64(off))
		if err := readAt(src.R, b[dataHead:], off); err != nil {
			return [32]byte{}, err
		}
		h.Write(b[dataHead:])
		s, err := c.SendAsync(b)
		if err != nil {
			return [32]byte{}, err
		}
		waits[slot], lens[slot] = s, n
		slot = (slot + 1) % opt.Depth
	}
	for range opt.Depth {
		if err := reap(slot); err != nil {
			return [32]byte{}, err
		}
		slot = (slot + 1) % opt.Depth
	}
	return [32]byte(h.Sum(nil)), nil
}

// readAt fills b from off; a file that ends sooner changed since it was
// offered.
func readAt(r io.ReaderAt, b []byte, off int64) error {
	n, err := r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("the file ends at byte %d, before the length it was offered with: it changed while being sent", off+int64(n))
	}
	return fmt.Errorf("reading the file: %w", err)
}
