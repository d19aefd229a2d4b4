package transfer

import (
	"errors"
	"fmt"
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
}

// fileStore is a file's stream: the partial file.
type fileStore struct{ *os.File }

func (s fileStore) sync() error  { return s.Sync() }
func (s fileStore) close() error { return nil } // the partial file is the lock: File closes it

// treeStore is a directory's stream written straight into its files
// under root, so a tree's files are created while its bytes arrive, and
// nothing is written twice.
type treeStore struct {
	root    string
	entries []Entry // with their offsets (setOffsets)
	open    *os.File
	openAt  int // the entry open holds
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
	return &treeStore{root: root, entries: entries, openAt: -1}, nil
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
	err := s.pieces(off, len(p), func(i int, at int64, from, to int) error {
		if s.openAt != i {
			if err := s.closeOpen(); err != nil {
				return err
			}
			f, err := os.OpenFile(s.path(&s.entries[i]), os.O_WRONLY|os.O_CREATE, 0o600)
			if err != nil {
				return err
			}
			s.open, s.openAt = f, i
		}
		_, err := s.open.WriteAt(p[from:to], at)
		return err
	})
	if err != nil {
		return 0, err
	}
	return len(p), nil
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
