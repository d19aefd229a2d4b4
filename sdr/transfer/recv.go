package transfer

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/sdrnet/sdrnet/internal/units"
	"github.com/sdrnet/sdrnet/sdr"
)

// Target is where a receiver puts a file: a file on disk that a later
// transfer can resume (OpenFile), or a writer that takes the bytes in
// order (Writer).
type Target interface {
	// begin returns the blocks already held for o, an empty state where
	// none are; entries is a directory's manifest, nil for a file.
	begin(o *offer, entries []Entry) (state, error)
	// drop sets aside what begin returned: the sender found that those
	// blocks are not of its file.
	drop() error
	// write puts p, whole blocks of the file, at off.
	write(off int64, p []byte) error
	// finish checks the whole file against size and digest and, where it
	// matches, makes it final; the error says what differs.
	finish(size int64, digest [32]byte) error
	// stop keeps what arrived, for a later transfer to resume.
	stop() error
}

// verdictLinger bounds how long a receiver waits for its verdict to be
// acknowledged: past it the sender is gone, and the file is verified
// either way.
const verdictLinger = 3 * time.Second

// Receive takes the file a peer's Send offers and puts it in t. It returns
// nil only once the length and SHA-256 the sender declared match the
// bytes t holds. A transfer that ends any other way leaves what arrived in
// t for a later one and returns an sdr.IncompleteError saying how much t
// holds; the sender learns the verdict in both cases where it is still
// there.
func Receive(ctx context.Context, c *sdr.Conn, t Target, opt Options) (res Result, err error) {
	opt = opt.withDefaults()
	var have bitmap
	var o offer
	defer func() {
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			_ = c.CloseWithError(sdr.CodeAborted, "receiver stopped: interrupted")
		}
		err = errors.Join(err, t.stop())
		if !errors.Is(err, sdr.ErrStreamCorrupt) && !errors.Is(err, sdr.ErrMessageTooLarge) {
			err = &sdr.IncompleteError{Received: held(&o, have), Declared: o.Size, Cause: err}
		}
	}()
	offerRecv, err := c.PostRecv(make([]byte, offerLen))
	if err != nil {
		return res, err
	}
	n, err := offerRecv.Wait(ctx)
	if err != nil {
		return res, err
	}
	o, err = parseOffer(offerRecv.Buffer()[:n])
	_ = offerRecv.Complete()
	if err != nil {
		return res, protocolErr(c, "the sender's OFFER", err)
	}
	res.Size = o.Size
	if need := dataHead + int(o.MaxData); need > opt.MsgSize {
		why := fmt.Sprintf("the sender's messages (%d bytes) exceed the receiver's (%d bytes): give the receiver a message size at least the sender's (sdrnet recv --msg)", need, opt.MsgSize)
		_ = c.CloseWithError(CodeTooLarge, why)
		return res, fmt.Errorf("%w (%s)", sdr.ErrMessageTooLarge, why)
	}
	var entries []Entry
	if o.Flags&flagDir != 0 {
		if entries, err = recvManifest(ctx, c, &o); err != nil {
			return res, err
		}
	}
	st, err := t.begin(&o, entries)
	if err != nil {
		return res, err
	}
	planRecv, err := c.PostRecv(make([]byte, planLen))
	if err != nil {
		return res, err
	}
	if _, err := c.SendAsync(st.encode()); err != nil {
		return res, err
	}
	n, err = planRecv.Wait(ctx)
	if err != nil {
		return res, err
	}
	reuse, err := parsePlan(planRecv.Buffer()[:n])
	_ = planRecv.Complete()
	if err != nil {
		return res, protocolErr(c, "the sender's PLAN", err)
	}
	have = st.Have
	if !reuse && have.count() > 0 {
		if err := t.drop(); err != nil {
			return res, err
		}
		have = newBitmap(o.blocks())
	}
	res.Resumed = held(&o, have)
	return res, receiveData(ctx, c, t, &o, have, opt, &res)
}

// recvManifest takes a directory's MANIFEST.
func recvManifest(ctx context.Context, c *sdr.Conn, o *offer) ([]Entry, error) {
	r, err := c.PostRecv(make([]byte, headLen+int(o.ManifestLen)))
	if err != nil {
		return nil, err
	}
	n, err := r.Wait(ctx)
	if err != nil {
		return nil, err
	}
	defer r.Complete()
	b := r.Buffer()[:n]
	if err := parseHead(b, kindManifest); err != nil {
		return nil, protocolErr(c, "the sender's MANIFEST", err)
	}
	entries, err := parseManifest(b[headLen:], o.Size)
	if err != nil {
		return nil, protocolErr(c, "the sender's MANIFEST", err)
	}
	return entries, nil
}

// errStalled: no data moved for Options.Stall.
var errStalled = errors.New("stalled")

// held is how many bytes of the file the blocks in have hold.
func held(o *offer, have bitmap) (n int64) {
	if have == nil {
		return 0 // before the offer
	}
	for i := range o.blocks() {
		if have.has(i) {
			n += blockLen(o, i)
		}
	}
	return n
}

// CodeTooLarge is the code a receiver closes with when the sender's
// messages do not fit its buffers.
const CodeTooLarge uint32 = 4

func protocolErr(c *sdr.Conn, what string, err error) error {
	err = fmt.Errorf("%s: %w", what, err)
	if errors.Is(err, errNotTransfer) {
		err = fmt.Errorf("%w (the sender does not speak sdrnet's transfer: an older sdrnet?)", err)
	}
	_ = c.CloseWithError(sdr.CodeProtocol, err.Error())
	return err
}

// receiveData takes DATA until the END, then checks the file and answers
// with the verdict.
func receiveData(ctx context.Context, c *sdr.Conn, t Target, o *offer, have bitmap, opt Options, res *Result) error {
	dctx, stop := watchProgress(ctx, c, opt.Stall, func(st *sdr.Stats) uint64 { return st.RecvBytes }, func() error { return errStalled })
	defer stop()
	posted := make([]*sdr.Recv, opt.Depth)
	for i := range posted {
		var err error
		if posted[i], err = c.PostRecv(make([]byte, dataHead+int(o.MaxData))); err != nil {
			return err
		}
	}
	for i := 0; ; i++ {
		r := posted[i%opt.Depth]
		n, err := r.Wait(dctx)
		if err != nil {
			if cause(dctx, err) == errStalled {
				err = fmt.Errorf("no data arrived for %v while the sender is still there, %s in %d of %d blocks missing "+
					"(losses are repaired only by a scheme that resends: not by --scheme none)",
					opt.Stall, units.FormatSize(o.Size-held(o, have)), o.blocks()-have.count(), o.blocks())
				_ = c.CloseWithError(sdr.CodeAborted, "receiver stopped: "+err.Error())
			}
			return err
		}
		msg := r.Buffer()[:n]
		if len(msg) > 4 && kind(msg[4]) == kindEnd {
			size, digest, err := parseEnd(msg)
			if err != nil {
				return protocolErr(c, "the sender's END", err)
			}
			stop() // reading the file back moves no data
			return finish(ctx, c, t, o, have, size, digest, res)
		}
		off, payload, err := parseData(msg)
		if err != nil {
			return protocolErr(c, fmt.Sprintf("message %d of the data", i), err)
		}
		if err := checkData(o, have, off, len(payload)); err != nil {
			return protocolErr(c, fmt.Sprintf("DATA at byte %d", off), err)
		}
		if err := t.write(off, payload); err != nil {
			_ = c.CloseWithError(sdr.CodeAborted, fmt.Sprintf("receiver could not write: %v (it holds %d of %d bytes)", err, held(o, have), o.Size))
			return err
		}
		for b := off / int64(o.BlockSize); b*int64(o.BlockSize) < off+int64(len(payload)); b++ {
			have.set(int(b))
		}
		res.Moved += int64(len(payload))
		if opt.Progress != nil {
			opt.Progress(*res)
		}
		if err := r.Complete(); err != nil {
			return err
		}
		if posted[i%opt.Depth], err = c.PostRecv(r.Buffer()); err != nil {
			return err
		}
	}
}

// checkData checks that a DATA is whole blocks the receiver lacks, the
// file's last block short only.
func checkData(o *offer, have bitmap, off int64, n int) error {
	bs := int64(o.BlockSize)
	switch {
	case off < 0 || off%bs != 0 || off >= o.Size:
		return fmt.Errorf("not at a block of the %d-byte file", o.Size)
	case n == 0 || int64(n) > o.Size-off || int64(n)%bs != 0 && off+int64(n) != o.Size:
		return fmt.Errorf("%d bytes are not whole blocks of the file", n)
	}
	for b := off / bs; b*bs < off+int64(n); b++ {
		if have.has(int(b)) {
			return fmt.Errorf("block %d, which the receiver holds", b)
		}
	}
	return nil
}

// finish checks the file at the sender's END and answers with a verdict.
func finish(ctx context.Context, c *sdr.Conn, t Target, o *offer, have bitmap, size int64, digest [32]byte, res *Result) error {
	v := verdict{Resumed: res.Resumed}
	var err error
	missing := o.blocks() - have.count()
	switch {
	case size != o.Size:
		err = fmt.Errorf("the END declares %d bytes, the OFFER %d", size, o.Size)
	case missing > 0:
		err = fmt.Errorf("%d of %d blocks never arrived", missing, o.blocks())
	default:
		err = t.finish(size, digest)
	}
	v.OK = err == nil
	v.Written = res.Resumed + res.Moved
	if err != nil {
		v.Reason = err.Error()
	}
	if s, serr := c.SendAsync(v.encode()); serr == nil {
		linger, cancel := context.WithTimeout(ctx, verdictLinger)
		select {
		case <-s.Done():
		case <-c.Done():
		case <-linger.Done():
		}
		cancel()
	}
	if err != nil {
		return &sdr.CorruptError{Verdict: err.Error(), Received: v.Written, Declared: size}
	}
	return nil
}

// Writer returns a target that writes the file to w in order: no resume.
// A directory it takes only where w is io.Discard.
func Writer(w io.Writer) Target { return &writerTarget{w: w, h: sha256.New()} }

type writerTarget struct {
	w       io.Writer
	h       hash.Hash
	written int64
}

func (t *writerTarget) begin(o *offer, entries []Entry) (state, error) {
	if entries != nil && t.w != io.Discard {
		return state{}, errors.New("a directory cannot be written to a stream: give the receiver a path")
	}
	return state{Have: newBitmap(o.blocks()), Digests: make([][32]byte, o.blocks())}, nil
}

func (t *writerTarget) drop() error { return nil }

func (t *writerTarget) write(off int64, p []byte) error {
	if off != t.written {
		return fmt.Errorf("bytes at %d, want %d: a writer takes the file in order", off, t.written)
	}
	if _, err := t.w.Write(p); err != nil {
		return err
	}
	t.h.Write(p)
	t.written += int64(len(p))
	return nil
}

func (t *writerTarget) finish(size int64, digest [32]byte) error {
	if [32]byte(t.h.Sum(nil)) != digest {
		return errors.New("SHA-256 differs")
	}
	return nil
}

func (t *writerTarget) stop() error { return nil }
