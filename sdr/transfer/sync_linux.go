package transfer

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncTree flushes the file system that holds dir: one call for a tree of
// many files, where an fsync each would cost a disk round trip each.
func syncTree(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return unix.Syncfs(int(d.Fd()))
}
