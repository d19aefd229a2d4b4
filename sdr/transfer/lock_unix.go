//go:build unix

package transfer

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// lock takes f's advisory lock without waiting; ErrBusy where another
// process holds it. The lock ends when f is closed.
func lock(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrBusy
	}
	return err
}

// fileID is a file's device and inode: a walk that follows links meets a
// directory twice only through a loop.
func fileID(st fs.FileInfo) ([2]uint64, bool) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return [2]uint64{uint64(s.Dev), uint64(s.Ino)}, true
	}
	return [2]uint64{}, false
}
