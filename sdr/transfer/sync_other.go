//go:build !linux

package transfer

import (
	"io/fs"
	"os"
	"path/filepath"
)

// syncTree fsyncs every file under dir, where there is no syncfs.
func syncTree(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
}
