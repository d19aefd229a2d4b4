package transfer

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// store is where a transfer's stream lives on the receiver's disk: the
// partial file itself, or, for a directory, the tree of its files.
type store interface {
	io.ReaderAt
	io.WriterAt
	sync() error
	close() error
	// readBackSum is the SHA-256 of the stream's size bytes as read back
	// while they were written; ok is false where that did not cover them.
	readBackSum(size int64) (sum [32]byte, ok bool)
}

// fileStore is a file's stream: the partial file. Written in order from
// its start, each write is read back at once, while its pages are warm,
// and hashed, so the end check needs no second pass over the file; any
// other order (a resume) leaves it to that pass.
type fileStore struct {
	*os.File
	disordered bool
	readBack   hash.Hash
	readTo     int64
	buf        []byte
}

func newFileStore(f *os.File) *fileStore { return &fileStore{File: f, readBack: sha256.New()} }

func (s *fileStore) WriteAt(p []byte, off int64) (int, error) {
	n, err := s.File.WriteAt(p, off)
	if err != nil || s.disordered {
		return n, err
	}
	if off != s.readTo {
		s.disordered = true
		return n, nil
	}
	if cap(s.buf) < len(p) {
		s.buf = make([]byte, len(p))
	}
	b := s.buf[:len(p)]
	if _, err := s.File.ReadAt(b, off); err != nil {
		return n, fmt.Errorf("reading %s back: %w", s.Name(), err)
	}
	s.readBack.Write(b)
	s.readTo += int64(len(p))
	return n, nil
}

func (s *fileStore) readBackSum(size int64) (sum [32]byte, ok bool) {
	if s.disordered || s.readTo != size {
		return sum, false
	}
	return [32]byte(s.readBack.Sum(nil)), true
}

func (s *fileStore) sync() error  { return s.Sync() }
func (s *fileStore) close() error { return nil } // the partial file is the lock: File closes it

// treeStore is a directory's stream written straight into its files
// under root, so a tree's files are created while its bytes arrive, and
// nothing is written twice.
type treeStore struct {
	root    string
	entries []Entry // with their offsets (setOffsets)
	open    *os.File
	openAt  int // the entry open holds
	// A stream written in order from its start is read back file by file
	// as each is complete, through the descriptor that wrote it: the end
	// check then needs no second pass opening every file. Any other order
	// (a resume) leaves it to that pass.
	disordered bool
	next       int64     // where an in-order write comes next
	readBack   hash.Hash // SHA-256 of the stream read back so far
	readTo     int64     // ... up to here
	buf        []byte
}

// newTreeStore makes root's directories; files appear as their bytes
// arrive.
func newTreeStore(root string, entries []Entry) (*treeStore, error) {
	for _, e := range entries {
		if e.Type == EntryDir {
			// Owner-only until the end sets its mode: a read-only
			// directory takes no files.
			if err := os.Mkdir(filepath.Join(root, filepath.FromSlash(e.Path)), 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
				return nil, err
			}
		}
	}
	return &treeStore{root: root, entries: entries, openAt: -1, readBack: sha256.New()}, nil
}

// path is where entry e is: under root, or where the sender read it.
func (s *treeStore) path(e *Entry) string {
	if e.source != "" {
		return e.source
	}
	return filepath.Join(s.root, filepath.FromSlash(e.Path))
}

// pieces calls f with each file's share of the n bytes at off, in order.
func (s *treeStore) pieces(off int64, n int, f func(i int, fileOff int64, from, to int) error) error {
	i := sort.Search(len(s.entries), func(i int) bool { return s.entries[i].offset+s.entries[i].Size > off })
	done := 0
	for ; done < n && i < len(s.entries); i++ {
		e := &s.entries[i]
		if e.Type != EntryFile || e.Size == 0 {
			continue
		}
		at := off + int64(done) - e.offset
		k := int(min(int64(n-done), e.Size-at))
		if err := f(i, at, done, done+k); err != nil {
			return err
		}
		done += k
	}
	if done < n {
		return io.EOF
	}
	return nil
}

func (s *treeStore) WriteAt(p []byte, off int64) (int, error) {
	if off != s.next {
		s.disordered = true
	}
	s.next = off + int64(len(p))
	err := s.pieces(off, len(p), func(i int, at int64, from, to int) error {
		if s.openAt != i {
			if err := s.closeOpen(); err != nil {
				return err
			}
			f, err := os.OpenFile(s.path(&s.entries[i]), os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				return err
			}
			s.open, s.openAt = f, i
		}
		if _, err := s.open.WriteAt(p[from:to], at); err != nil {
			return err
		}
		if e := &s.entries[i]; !s.disordered && at+int64(to-from) == e.Size {
			return s.readBackFile(e)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// readBackFile hashes the open file e, complete, as it is on disk.
func (s *treeStore) readBackFile(e *Entry) error {
	if e.offset != s.readTo {
		s.disordered = true
		return nil
	}
	if s.buf == nil {
		s.buf = make([]byte, 1<<20)
	}
	for at := int64(0); at < e.Size; {
		n, err := s.open.ReadAt(s.buf[:min(int64(len(s.buf)), e.Size-at)], at)
		if n == 0 && err != nil {
			return fmt.Errorf("reading %s back: %w", s.open.Name(), err)
		}
		s.readBack.Write(s.buf[:n])
		at += int64(n)
	}
	s.readTo = e.offset + e.Size
	return nil
}

// readBackSum is the stream's SHA-256 as read back while it was written;
// ok is false where that did not cover all size bytes.
func (s *treeStore) readBackSum(size int64) (sum [32]byte, ok bool) {
	if s.disordered || s.readTo != size || s.readBack == nil {
		return sum, false
	}
	return [32]byte(s.readBack.Sum(nil)), true
}

func (s *treeStore) ReadAt(p []byte, off int64) (int, error) {
	err := s.pieces(off, len(p), func(i int, at int64, from, to int) error {
		f, err := os.Open(s.path(&s.entries[i]))
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := f.ReadAt(p[from:to], at)
		if n < to-from && (err == nil || errors.Is(err, io.EOF)) {
			err = fmt.Errorf("%s is shorter than its bytes so far", s.path(&s.entries[i]))
		}
		if n == to-from {
			err = nil
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

func (s *treeStore) closeOpen() error {
	if s.open == nil {
		return nil
	}
	err := s.open.Close()
	s.open, s.openAt = nil, -1
	return err
}

// sync flushes every file written so far.
func (s *treeStore) sync() error {
	return errors.Join(s.closeOpen(), syncTree(s.root))
}

func (s *treeStore) close() error { return s.closeOpen() }

// complete finishes a verified tree: empty files and links made, every
// entry's mode and time set (children first: writing into a directory
// changes its time, and a read-only one takes no entries), flushed.
// Set-user and set-group bits are not kept: a tree from the network gets
// no privileges.
func (s *treeStore) complete() error {
	if err := s.closeOpen(); err != nil {
		return err
	}
	for i := range s.entries {
		e := &s.entries[i]
		var err error
		switch {
		case e.Type == EntryFile && e.Size == 0:
			var f *os.File
			if f, err = os.OpenFile(s.path(e), os.O_WRONLY|os.O_CREATE, 0o600); err == nil {
				err = f.Close()
			}
		case e.Type == EntrySymlink:
			if err = os.Symlink(e.Link, s.path(e)); errors.Is(err, fs.ErrExist) {
				err = nil // laid out before a crash
			}
		}
		if err != nil {
			return err
		}
	}
	for i := len(s.entries) - 1; i >= 0; i-- {
		e := &s.entries[i]
		if e.Type == EntrySymlink {
			continue // a link's own mode and time are not kept
		}
		if err := os.Chmod(s.path(e), e.Mode&(fs.ModePerm|fs.ModeSticky)); err != nil {
			return err
		}
		if err := os.Chtimes(s.path(e), e.ModTime, e.ModTime); err != nil {
			return err
		}
	}
	return syncTree(s.root)
}
