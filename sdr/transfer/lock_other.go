//go:build !unix

package transfer

import "os"

// lock does nothing where there is no flock: two receivers on one output
// are not kept apart there, but the end check still reads the bytes on
// disk, so a clobbered file is never called verified.
func lock(*os.File) error { return nil }
