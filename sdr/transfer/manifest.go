package transfer

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"time"
)

// A directory moves as one stream: its files' bytes one after another, in
// the order of a manifest that lists every entry (directories, files,
// symbolic links) with its mode and modification time. Resume, locking
// and the end check work on that stream as on one file; the receiver
// lays the tree out only once the stream is verified on its disk.

// EntryType is what a manifest entry is.
type EntryType uint8

// The entries a manifest holds.
const (
	EntryDir EntryType = iota + 1
	EntryFile
	EntrySymlink
)

// Entry is one entry of a directory being sent.
type Entry struct {
	Type    EntryType
	Path    string // slash-separated, relative to the directory; "." is the directory itself
	Mode    fs.FileMode
	ModTime time.Time
	Size    int64  // files only
	Link    string // symbolic links only: the target as written
	source  string // the sender's path of the entry
	offset  int64  // where the file's bytes start in the stream
}

// ReadDir walks root and returns a Source whose bytes are its files',
// one after another, with the manifest that says where each file starts.
// Symbolic links are sent as links unless follow is set; then links to
// files send the file, and links to directories the directory (each
// directory once). Other kinds of file (devices, sockets, pipes) are left
// out and listed in skipped.
func ReadDir(root string, follow bool) (src Source, skipped []string, err error) {
	st, err := os.Stat(root)
	if err != nil {
		return src, nil, err
	}
	if !st.IsDir() {
		return src, nil, fmt.Errorf("%s is not a directory", root)
	}
	w := dirWalk{follow: follow, seen: map[[2]uint64]bool{}}
	if err := w.walk(root, ".", st); err != nil {
		return src, nil, err
	}
	size := setOffsets(w.entries)
	m := encodeManifest(w.entries)
	sum := sha256.Sum256(m)
	return Source{R: &treeStore{entries: w.entries, openAt: -1}, Size: size, Manifest: m,
		ModTime: time.Unix(0, int64(be.Uint64(sum[:8]))), Mode: st.Mode()}, w.skipped, nil
}

type dirWalk struct {
	follow  bool
	seen    map[[2]uint64]bool
	entries []Entry
	skipped []string
}

func (w *dirWalk) walk(dir, rel string, st fs.FileInfo) error {
	if id, ok := fileID(st); ok {
		if w.seen[id] {
			w.skipped = append(w.skipped, dir+" (a link back into the tree)")
			return nil
		}
		w.seen[id] = true
	}
	w.entries = append(w.entries, Entry{Type: EntryDir, Path: rel, Mode: st.Mode(), ModTime: st.ModTime(), source: dir})
	names, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, d := range names { // os.ReadDir sorts by name
		full, sub := filepath.Join(dir, d.Name()), path.Join(rel, d.Name())
		info, err := os.Lstat(full)
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			if !w.follow {
				target, err := os.Readlink(full)
				if err != nil {
					return err
				}
				w.entries = append(w.entries, Entry{Type: EntrySymlink, Path: sub, Mode: info.Mode(), ModTime: info.ModTime(), Link: target})
				continue
			}
			if info, err = os.Stat(full); err != nil {
				w.skipped = append(w.skipped, full+" (a broken link)")
				continue
			}
		}
		switch {
		case info.IsDir():
			if err := w.walk(full, sub, info); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			w.entries = append(w.entries, Entry{Type: EntryFile, Path: sub, Mode: info.Mode(), ModTime: info.ModTime(), Size: info.Size(), source: full})
		default:
			w.skipped = append(w.skipped, full+" (not a file, directory or link)")
		}
	}
	return nil
}

// setOffsets places each entry in the stream: a file where the files
// before it end, any other entry at the same place with no bytes. It
// returns the stream's length.
func setOffsets(entries []Entry) (size int64) {
	for i := range entries {
		e := &entries[i]
		e.offset = size
		if e.Type == EntryFile {
			size += e.Size
		}
	}
	return size
}

const manifestMagic = "SDRM"

// maxManifest bounds a manifest a receiver takes: 64 MiB lists about a
// million entries.
const maxManifest = 64 << 20

// encodeManifest writes entries: "SDRM", the count, then per entry its
// type, mode, modification time (Unix ns), size, path and link target,
// each string after its 2-byte length; big-endian.
func encodeManifest(entries []Entry) []byte {
	b := append([]byte(manifestMagic), 0, 0, 0, 0)
	be.PutUint32(b[4:], uint32(len(entries)))
	for _, e := range entries {
		b = append(b, byte(e.Type))
		b = be.AppendUint32(b, uint32(e.Mode))
		b = be.AppendUint64(b, uint64(e.ModTime.UnixNano()))
		b = be.AppendUint64(b, uint64(e.Size))
		b = be.AppendUint16(b, uint16(len(e.Path)))
		b = append(b, e.Path...)
		b = be.AppendUint16(b, uint16(len(e.Link)))
		b = append(b, e.Link...)
	}
	return b
}

// parseManifest reads a manifest and checks that it describes a tree the
// receiver can lay out safely: the first entry the directory itself,
// every path local and new, every parent a directory listed before its
// children (so no path runs through a link), and the files' sizes adding
// up to the stream's length.
func parseManifest(b []byte, size int64) ([]Entry, error) {
	bad := func(format string, args ...any) error { return fmt.Errorf("manifest: "+format, args...) }
	if len(b) < 8 || string(b[:4]) != manifestMagic {
		return nil, bad("not a manifest")
	}
	n := int(be.Uint32(b[4:]))
	if n == 0 || n > len(b)/25 {
		return nil, bad("%d entries in %d bytes", n, len(b))
	}
	rest := b[8:]
	str := func() (string, bool) {
		if len(rest) < 2 || len(rest) < 2+int(be.Uint16(rest)) {
			return "", false
		}
		l := int(be.Uint16(rest))
		s := string(rest[2 : 2+l])
		rest = rest[2+l:]
		return s, true
	}
	entries := make([]Entry, 0, n)
	kinds := map[string]EntryType{}
	for i := range n {
		if len(rest) < 21 {
			return nil, bad("truncated at entry %d", i)
		}
		e := Entry{Type: EntryType(rest[0]), Mode: fs.FileMode(be.Uint32(rest[1:])), ModTime: time.Unix(0, int64(be.Uint64(rest[5:]))),
			Size: int64(be.Uint64(rest[13:]))}
		rest = rest[21:]
		var ok1, ok2 bool
		e.Path, ok1 = str()
		e.Link, ok2 = str()
		switch {
		case !ok1 || !ok2:
			return nil, bad("truncated at entry %d", i)
		case e.Type < EntryDir || e.Type > EntrySymlink:
			return nil, bad("entry %d of unknown type %d", i, e.Type)
		case e.Size < 0 || e.Type != EntryFile && e.Size != 0 || e.Type != EntrySymlink && e.Link != "":
			return nil, bad("entry %d (%s) malformed", i, e.Path)
		case i == 0 && (e.Path != "." || e.Type != EntryDir):
			return nil, bad("the first entry is not the directory itself")
		case i > 0 && (e.Path == "." || !fs.ValidPath(e.Path)):
			return nil, bad("entry %d: %q is not a path inside the directory", i, e.Path)
		case kinds[e.Path] != 0:
			return nil, bad("entry %d: %s listed twice", i, e.Path)
		case i > 0 && kinds[path.Dir(e.Path)] != EntryDir:
			return nil, bad("entry %d: %s comes before its directory", i, e.Path)
		}
		kinds[e.Path] = e.Type
		entries = append(entries, e)
	}
	if len(rest) != 0 {
		return nil, bad("%d bytes after the last entry", len(rest))
	}
	if got := setOffsets(entries); got != size {
		return nil, bad("files of %d bytes, the offer says %d", got, size)
	}
	return entries, nil
}
