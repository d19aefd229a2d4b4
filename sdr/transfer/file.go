package transfer

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sdrnet/sdrnet/internal/units"
)

// ErrBusy is returned by OpenFile where another receiver holds the file.
var ErrBusy = errors.New("another receiver is writing it")

// A checkpoint marks the blocks written since the last one as held, once
// this many bytes or this much time has passed: a receiver killed
// outright loses at most that much.
const (
	checkpointBytes = 8 << 20
	checkpointEvery = 500 * time.Millisecond
)

// File is a target on disk that a later transfer can resume. The bytes go
// to NAME.partial and the receive bitmap - which blocks it holds - to
// NAME.partial.state; NAME appears only once the
// whole file is verified on disk. NAME.partial is locked (flock) while a
// receiver writes it, so a second one refuses at once.
//
// Crash safety: blocks are written to NAME.partial, which is fsynced, and
// only then marked held in the state, which is written to a temporary
// file, fsynced and renamed over the old state. A crash loses at most the
// blocks since the last checkpoint, and never marks a block whose bytes
// are not on disk. A resume reads every held block back and sends its
// SHA-256, which the sender checks against its own bytes before the
// block is kept. At the end NAME.partial is fsynced, read
// back whole and hashed; only a match removes the state and renames
// NAME.partial to NAME, and the directory is fsynced.
type File struct {
	name    string
	f       *os.File
	o       *offer
	entries []Entry // a directory's manifest; nil for a file
	st      store   // the stream: the partial file, or a directory's tree
	have    bitmap
	digests [][32]byte
	pending []int // blocks written since the last checkpoint
	dirty   int64
	last    time.Time
	aside   string
}

// OpenFile opens name's partial file for a transfer and locks it; it
// fails at once where another receiver holds it.
func OpenFile(name string) (*File, error) {
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s is a directory; want a file name", name)
	}
	t := &File{name: name}
	if err := t.openPartial(os.O_CREATE); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *File) partial() string { return t.name + ".partial" }
func (t *File) tree() string    { return t.name + ".partial.d" }
func (t *File) state() string   { return t.name + ".partial.state" }

func (t *File) openPartial(flags int) error {
	f, err := os.OpenFile(t.partial(), os.O_RDWR|flags, 0o644)
	if err != nil {
		return err
	}
	if err := lock(f); err != nil {
		f.Close()
		if errors.Is(err, ErrBusy) {
			return fmt.Errorf("%s: %w (it holds %s)", t.name, ErrBusy, t.partial())
		}
		return fmt.Errorf("locking %s: %w", t.partial(), err)
	}
	t.f = f
	return nil
}

// SetAside names where bytes that were not of the sender's file went, and
// why; empty where nothing was set aside.
func (t *File) SetAside() string { return t.aside }

// Close gives up the file without a transfer: an empty partial file it
// created is removed.
func (t *File) Close() error {
	if t.f == nil {
		return nil
	}
	if t.st != nil {
		_ = t.st.close()
	}
	if st, err := t.f.Stat(); err == nil && st.Size() == 0 && t.o == nil {
		_ = os.Remove(t.partial())
	}
	err := t.f.Close()
	t.f = nil
	return err
}

func (t *File) begin(o *offer, entries []Entry) (state, error) {
	t.o, t.entries = o, entries
	t.have, t.digests = newBitmap(o.blocks()), make([][32]byte, o.blocks())
	why := ""
	saved, err := readState(t.state())
	st, serr := t.f.Stat()
	if serr != nil {
		return state{}, serr
	}
	_, treeErr := os.Lstat(t.tree())
	switch {
	case errors.Is(err, os.ErrNotExist) && st.Size() == 0 && errors.Is(treeErr, os.ErrNotExist):
	case errors.Is(err, os.ErrNotExist):
		why = "it has no bitmap beside it"
	case err != nil:
		why = err.Error()
	case saved.size != o.Size || saved.modTime != o.ModTime || saved.blockSize != o.BlockSize:
		why = fmt.Sprintf("it is of another file (%s, modified %s)", units.FormatSize(saved.size), time.Unix(0, saved.modTime).UTC().Format(time.RFC3339))
	default:
		t.have = saved.have
	}
	if why == "" {
		if err := t.openStore(); err != nil {
			why = err.Error()
		} else {
			why = t.hashHeld()
		}
	}
	if why != "" {
		if err := t.setAside(why); err != nil {
			return state{}, err
		}
	}
	return state{Have: bytes.Clone(t.have), Digests: t.digests}, nil
}

// openStore opens the stream: the partial file, or a directory's tree.
func (t *File) openStore() error {
	if t.entries == nil {
		t.st = newFileStore(t.f)
		return nil
	}
	var err error
	t.st, err = newTreeStore(t.tree(), t.entries)
	return err
}

// hashHeld reads every held block back and takes its SHA-256, for the
// sender to check against its own bytes; it says what is wrong where a
// block cannot be read.
func (t *File) hashHeld() string {
	buf := make([]byte, t.o.BlockSize)
	for i := range t.o.blocks() {
		if !t.have.has(i) {
			continue
		}
		b := buf[:blockLen(t.o, i)]
		if _, err := t.st.ReadAt(b, int64(i)*int64(t.o.BlockSize)); err != nil {
			return fmt.Sprintf("block %d cannot be read back: %v", i, err)
		}
		t.digests[i] = sha256.Sum256(b)
	}
	return ""
}

// setAside renames what a transfer held out of the way - the partial
// file, a directory's tree - names it, and starts afresh.
func (t *File) setAside(why string) error {
	aside := t.partial() + ".stale"
	for n := 2; exists(aside) || exists(aside+".d"); n++ {
		aside = fmt.Sprintf("%s.stale.%d", t.partial(), n)
	}
	var moved []string
	if st, err := t.f.Stat(); err == nil && st.Size() > 0 {
		if err := os.Rename(t.partial(), aside); err != nil {
			return err
		}
		moved = append(moved, aside)
		t.f.Close()
		if err := t.openPartial(os.O_CREATE | os.O_EXCL); err != nil {
			return err
		}
	}
	if exists(t.tree()) {
		if t.st != nil {
			_ = t.st.close()
		}
		if err := os.Rename(t.tree(), aside+".d"); err != nil {
			return err
		}
		moved = append(moved, aside+".d")
	}
	_ = os.Remove(t.state())
	t.aside = fmt.Sprintf("%s (set aside: %s)", strings.Join(moved, " and "), why)
	t.have, t.digests = newBitmap(t.o.blocks()), make([][32]byte, t.o.blocks())
	return t.openStore()
}

func exists(name string) bool {
	_, err := os.Lstat(name)
	return err == nil
}

func (t *File) drop() error {
	return t.setAside("the sender's file does not hash to its blocks")
}

func (t *File) write(off int64, p []byte) error {
	if _, err := t.st.WriteAt(p, off); err != nil {
		return err
	}
	bs := int64(t.o.BlockSize)
	for i := off / bs; i*bs < off+int64(len(p)); i++ {
		t.pending = append(t.pending, int(i))
	}
	t.dirty += int64(len(p))
	if t.dirty >= checkpointBytes || time.Since(t.last) >= checkpointEvery {
		return t.checkpoint()
	}
	return nil
}

// checkpoint makes the blocks written since the last one durable, then
// marks them held.
func (t *File) checkpoint() error {
	t.last = time.Now()
	if len(t.pending) == 0 {
		return nil
	}
	if err := t.st.sync(); err != nil {
		return err
	}
	for _, i := range t.pending {
		t.have.set(i)
	}
	t.pending, t.dirty = t.pending[:0], 0
	return writeState(t.state(), &savedState{size: t.o.Size, modTime: t.o.ModTime, blockSize: t.o.BlockSize, have: t.have})
}

func (t *File) finish(size int64, digest [32]byte) error {
	if err := t.checkpoint(); err != nil {
		return err
	}
	if t.entries == nil {
		if err := t.f.Truncate(size); err != nil {
			return err
		}
	}
	sum, ok := t.st.readBackSum(size)
	if !ok {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(t.st, 0, size)); err != nil {
			return fmt.Errorf("reading what arrived back: %w", err)
		}
		sum = [32]byte(h.Sum(nil))
	}
	if sum != digest {
		err := errors.New("the SHA-256 of the bytes on disk differs from the sender's")
		if aerr := t.setAside(err.Error()); aerr != nil {
			return errors.Join(err, aerr)
		}
		return fmt.Errorf("%w: %s", err, t.aside)
	}
	if t.entries != nil {
		return t.finishDir()
	}
	if err := os.Remove(t.state()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.Rename(t.partial(), t.name); err != nil {
		return err
	}
	syncDir(filepath.Dir(t.name))
	err := t.f.Close()
	t.f = nil
	return err
}

// finishDir completes a verified directory's tree (modes, times, empty
// files and links) and renames it into place.
func (t *File) finishDir() error {
	if err := t.st.(*treeStore).complete(); err != nil {
		return fmt.Errorf("completing the directory: %w", err)
	}
	if err := os.Rename(t.tree(), t.name); err != nil {
		return fmt.Errorf("%w (the verified directory is in %s)", err, t.tree())
	}
	syncDir(filepath.Dir(t.name))
	_ = os.Remove(t.state())
	_ = os.Remove(t.partial())
	err := t.f.Close()
	t.f = nil
	return err
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

func (t *File) stop() error {
	if t.f == nil {
		return nil
	}
	var err error
	if t.o != nil {
		err = t.checkpoint()
	}
	return errors.Join(err, t.Close())
}
