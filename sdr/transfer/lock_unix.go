//go:build unix

package transfer

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lock takes f's advisory lock without waiting; errBusy where another
// process holds it. The lock ends when f is closed.
func lock(f *os.File) error {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return errBusy
	}
	return err
}
