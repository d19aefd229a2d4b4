package transfer

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/sdr"
)

// makeTree writes a small tree: nested directories, empty and larger
// files, modes, times, a symbolic link and a pipe.
func makeTree(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "tree")
	for _, d := range []string{"a/b/c", "empty"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string][]byte{"top.txt": []byte("top"), "a/zero": nil, "a/b/big.bin": randomBytes(3<<20+17, 9), "a/b/c/x": []byte("x")}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(root, name), data, 0o640); err != nil {
			t.Fatal(err)
		}
	}
	_ = os.Chmod(filepath.Join(root, "a/b/c/x"), 0o700)
	_ = os.Chmod(filepath.Join(root, "a/b"), 0o750)
	if err := os.Symlink("../top.txt", filepath.Join(root, "a/link")); err != nil {
		t.Fatal(err)
	}
	_ = mkfifo(filepath.Join(root, "a/pipe"))
	when := time.Unix(1.6e9, 0)
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if d.Type()&fs.ModeSymlink == 0 && d.Type()&fs.ModeNamedPipe == 0 {
			_ = os.Chtimes(p, when, when)
		}
		return err
	})
	return root
}

// treeOf describes a tree: each entry's path, kind, mode, size, time and
// content digest (or link target), one per line.
func treeOf(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(&b, "%s %v", rel, info.Mode())
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			fmt.Fprintf(&b, " -> %s", target)
		case info.Mode().IsRegular():
			data, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %d %x %d", len(data), data[:min(len(data), 4)], info.ModTime().Unix())
		case info.IsDir():
			fmt.Fprintf(&b, " %d", info.ModTime().Unix())
		}
		b.WriteByte('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestDirectory sends a tree through a lossy link; the receiver lays out
// the same tree, the pipe left out and named.
func TestDirectory(t *testing.T) {
	root := makeTree(t)
	src, skipped, err := ReadDir(root, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(skipped) != 1 || !strings.Contains(skipped[0], "pipe") {
		t.Errorf("skipped %q, want the pipe", skipped)
	}
	out := filepath.Join(t.TempDir(), "copy")
	target, err := OpenFile(out)
	if err != nil {
		t.Fatal(err)
	}
	sent, received := run(t, "loss=1%,reorder=0.02/1ms,dup=0.01", src, target)
	if sent.err != nil || received.err != nil {
		t.Fatalf("send %v, receive %v", sent.err, received.err)
	}
	got, want := treeOf(t, out), stripPipe(treeOf(t, root))
	if got != want || !strings.Contains(got, "a/b drwxr-x---") || !strings.Contains(got, "a/link Lrwxrwxrwx -> ../top.txt") {
		t.Errorf("tree\n got:\n%s\nwant:\n%s", got, want)
	}
	t.Logf("tree:\n%s", got)
	for _, left := range []string{".partial", ".partial.state", ".partial.d"} {
		if _, err := os.Stat(out + left); !os.IsNotExist(err) {
			t.Errorf("%s left behind", left)
		}
	}
}

func stripPipe(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "a/pipe ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestDirectoryResume cuts a directory's transfer short and reruns it.
func TestDirectoryResume(t *testing.T) {
	root := makeTree(t)
	src, _, err := ReadDir(root, false)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "copy")
	cut := src
	cut.R = &failingReader{data: mustRead(t, src), failAt: 2 << 20}
	// On a loaded host the sender's abort can overtake every block in
	// flight, leaving nothing to resume: cut again (as cutShort does).
	var inc *sdr.IncompleteError
	for try := 1; ; try++ {
		target, _ := OpenFile(out)
		_, received := run(t, "", cut, target)
		if !errors.As(received.err, &inc) {
			t.Fatalf("cut short: %v", received.err)
		}
		if inc.Received > 0 {
			break
		}
		if try == 5 {
			t.Fatalf("cut short five times, and nothing was kept: %v", received.err)
		}
		t.Logf("cut short, try %d: nothing kept; again", try)
		leftovers, _ := filepath.Glob(out + ".partial*")
		for _, f := range leftovers {
			_ = os.RemoveAll(f)
		}
	}
	target, _ := OpenFile(out)
	sent, received := run(t, "", src, target)
	if sent.err != nil || received.err != nil || received.res.Resumed != inc.Received {
		t.Fatalf("resume: send %v, receive %v, %+v; held %d", sent.err, received.err, received.res, inc.Received)
	}
	if got, want := treeOf(t, out), stripPipe(treeOf(t, root)); got != want {
		t.Errorf("tree\n got:\n%s\nwant:\n%s", got, want)
	}
}

func mustRead(t *testing.T, src Source) []byte {
	b := make([]byte, src.Size)
	if _, err := src.R.ReadAt(b, 0); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFollowSymlinks sends what a link points to.
func TestFollowSymlinks(t *testing.T) {
	root := makeTree(t)
	src, _, err := ReadDir(root, true)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "copy")
	target, _ := OpenFile(out)
	if sent, received := run(t, "", src, target); sent.err != nil || received.err != nil {
		t.Fatalf("send %v, receive %v", sent.err, received.err)
	}
	if got, _ := os.ReadFile(filepath.Join(out, "a/link")); string(got) != "top" {
		t.Errorf("a/link holds %q, want the file it pointed to", got)
	}
}

// TestManifestRejects: a manifest that would write outside the tree, or
// through a link, or twice, is refused.
func TestManifestRejects(t *testing.T) {
	dir := Entry{Type: EntryDir, Path: "."}
	for _, tt := range []struct {
		name    string
		entries []Entry
		size    int64
		want    string
	}{
		{"parent", []Entry{dir, {Type: EntryFile, Path: "../evil", Size: 1}}, 1, "not a path inside"},
		{"absolute", []Entry{dir, {Type: EntryFile, Path: "/etc/passwd", Size: 1}}, 1, "not a path inside"},
		{"through a link", []Entry{dir, {Type: EntrySymlink, Path: "l", Link: "/etc"}, {Type: EntryFile, Path: "l/passwd", Size: 1}}, 1, "before its directory"},
		{"twice", []Entry{dir, {Type: EntryFile, Path: "f", Size: 1}, {Type: EntryFile, Path: "f", Size: 0}}, 1, "listed twice"},
		{"no root", []Entry{{Type: EntryFile, Path: "f", Size: 1}}, 1, "the directory itself"},
		{"sizes", []Entry{dir, {Type: EntryFile, Path: "f", Size: 5}}, 4, "the offer says 4"},
	} {
		_, err := parseManifest(encodeManifest(tt.entries), tt.size)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
	good := []Entry{dir, {Type: EntryDir, Path: "d"}, {Type: EntryFile, Path: "d/f", Size: 3}}
	got, err := parseManifest(encodeManifest(good), 3)
	if err != nil || len(got) != 3 || got[2].offset != 0 || !bytes.Equal([]byte(got[2].Path), []byte("d/f")) {
		t.Errorf("good manifest: %+v, %v", got, err)
	}
}

// TestTreeReadBack: a stream written in order is hashed as read back
// file by file; any other order leaves it to the end check's full pass.
func TestTreeReadBack(t *testing.T) {
	entries := []Entry{{Type: EntryDir, Path: "."}, {Type: EntryFile, Path: "a", Size: 5}, {Type: EntryFile, Path: "e"},
		{Type: EntryDir, Path: "d"}, {Type: EntryFile, Path: "d/b", Size: 3000}, {Type: EntryFile, Path: "z", Size: 7}}
	size := setOffsets(entries)
	data := randomBytes(int(size), 10)
	for _, tt := range []struct {
		name  string
		order [][2]int64 // writes: offset, length
		ok    bool
	}{
		{"in order", [][2]int64{{0, 1000}, {1000, size - 1000}}, true},
		{"out of order", [][2]int64{{1000, size - 1000}, {0, 1000}}, false},
	} {
		s, err := newTreeStore(filepath.Join(t.TempDir(), "tree"), entries)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range tt.order {
			if _, err := s.WriteAt(data[w[0]:w[0]+w[1]], w[0]); err != nil {
				t.Fatal(err)
			}
		}
		sum, ok := s.readBackSum(size)
		if ok != tt.ok || ok && sum != sha256.Sum256(data) {
			t.Errorf("%s: read back %v, %x", tt.name, ok, sum)
		}
		got := make([]byte, size)
		if _, err := s.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: the tree holds other bytes (%v)", tt.name, err)
		}
		_ = s.close()
	}
}

// TestFileReadBack: a partial file written in order from its start is
// hashed as each write is read back; any other order leaves it to the
// end check's full pass.
func TestFileReadBack(t *testing.T) {
	data := randomBytes(5000, 11)
	for _, tt := range []struct {
		name  string
		order [][2]int64
		ok    bool
	}{
		{"in order", [][2]int64{{0, 4096}, {4096, 904}}, true},
		{"out of order", [][2]int64{{4096, 904}, {0, 4096}}, false},
	} {
		f, err := os.Create(filepath.Join(t.TempDir(), "partial"))
		if err != nil {
			t.Fatal(err)
		}
		s := newFileStore(f)
		for _, w := range tt.order {
			if _, err := s.WriteAt(data[w[0]:w[0]+w[1]], w[0]); err != nil {
				t.Fatal(err)
			}
		}
		if sum, ok := s.readBackSum(int64(len(data))); ok != tt.ok || ok && sum != sha256.Sum256(data) {
			t.Errorf("%s: read back %v, %x", tt.name, ok, sum)
		}
		f.Close()
	}
}
