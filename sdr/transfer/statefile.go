package transfer

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
)

// savedState is NAME.partial.state: which file the partial one is of, and
// its receive bitmap. On disk: "SDRSTATE", then block size (4 bytes), file
// size and modification time (8 each), block count (4), the bitmap, and
// the SHA-256 of everything before it, all big-endian. The held blocks'
// own digests are not kept: a resume reads them back from the partial
// file, so they are of what is on disk.
type savedState struct {
	size, modTime int64
	blockSize     uint32
	have          bitmap
}

var stateMagic = [8]byte{'S', 'D', 'R', 'S', 'T', 'A', 'T', 'E'}

const stateHead = 8 + 4 + 8 + 8 + 4

func (s *savedState) encode() []byte {
	n := int((s.size + int64(s.blockSize) - 1) / int64(s.blockSize))
	b := make([]byte, stateHead, stateHead+len(s.have)+32)
	copy(b, stateMagic[:])
	be.PutUint32(b[8:], s.blockSize)
	be.PutUint64(b[12:], uint64(s.size))
	be.PutUint64(b[20:], uint64(s.modTime))
	be.PutUint32(b[28:], uint32(n))
	b = append(b, s.have...)
	sum := sha256.Sum256(b)
	return append(b, sum[:]...)
}

func parseSavedState(b []byte) (*savedState, error) {
	bad := errors.New("its bitmap file is damaged")
	if len(b) < stateHead+32 || [8]byte(b[:8]) != stateMagic {
		return nil, bad
	}
	body, sum := b[:len(b)-32], b[len(b)-32:]
	if sha256.Sum256(body) != [32]byte(sum) {
		return nil, bad
	}
	s := &savedState{blockSize: be.Uint32(b[8:]), size: int64(be.Uint64(b[12:])), modTime: int64(be.Uint64(b[20:]))}
	n := int(be.Uint32(b[28:]))
	if s.blockSize == 0 || n > maxBlocks || s.size < 0 || int64(n) != (s.size+int64(s.blockSize)-1)/int64(s.blockSize) ||
		len(body) != stateHead+(n+7)/8 {
		return nil, bad
	}
	s.have = bitmap(append([]byte(nil), body[stateHead:]...))
	return s, nil
}

func readState(name string) (*savedState, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return parseSavedState(b)
}

// writeState replaces name's content atomically: a temporary file,
// fsynced, renamed over it.
func writeState(name string, s *savedState) error {
	tmp := name + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(s.encode())
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		return fmt.Errorf("saving the bitmap: %w", err)
	}
	return nil
}
