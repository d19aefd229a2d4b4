package linkem

import (
	"encoding/binary"
	"net"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// setBuffers asks for n-byte kernel buffers on c, past the system limits
// (SO_RCVBUFFORCE, SO_SNDBUFFORCE) where the process may, up to them
// otherwise.
func setBuffers(c *net.UDPConn, n int) {
	forced := [2]bool{}
	if rc, err := c.SyscallConn(); err == nil {
		_ = rc.Control(func(fd uintptr) {
			forced[0] = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUFFORCE, n) == nil
			forced[1] = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_SNDBUFFORCE, n) == nil
		})
	}
	if !forced[0] {
		_ = c.SetReadBuffer(n)
	}
	if !forced[1] {
		_ = c.SetWriteBuffer(n)
	}
}

// sizeofTimespec is the size of struct timespec, two C longs.
const sizeofTimespec = 2 * strconv.IntSize / 8

// oobLen is the control-message space for one receive timestamp.
var oobLen = unix.CmsgSpace(sizeofTimespec)

// enableRxTimestamps makes the kernel stamp every datagram c receives
// (SO_TIMESTAMPNS), so arrival times do not depend on when the reader
// goroutine runs. It reports whether it could.
func enableRxTimestamps(c *net.UDPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	_ = rc.Control(func(fd uintptr) {
		ok = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) == nil
	})
	return ok
}

// rxTimestamp returns the kernel's receive time (CLOCK_REALTIME, ns) from
// a datagram's control messages.
func rxTimestamp(oob []byte) (int64, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level != unix.SOL_SOCKET || m.Header.Type != unix.SCM_TIMESTAMPNS {
			continue
		}
		d := m.Data
		switch {
		case sizeofTimespec == 16 && len(d) >= 16:
			return int64(binary.NativeEndian.Uint64(d))*1e9 + int64(binary.NativeEndian.Uint64(d[8:])), true
		case sizeofTimespec == 8 && len(d) >= 8:
			return int64(int32(binary.NativeEndian.Uint32(d)))*1e9 + int64(int32(binary.NativeEndian.Uint32(d[4:]))), true
		}
	}
	return 0, false
}

// timerfdWaker wakes the engine through a timerfd in Go's netpoller: the
// runtime's own timers sleep in whole milliseconds when the process is
// idle, a timerfd wakes it within microseconds.
type timerfdWaker struct {
	fd   int
	f    *os.File
	c    chan struct{}
	done sync.WaitGroup
}

func newWaker() waker {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return newTimeWaker()
	}
	w := &timerfdWaker{fd: fd, f: os.NewFile(uintptr(fd), "linkem-timerfd"), c: make(chan struct{}, 1)}
	w.done.Go(func() {
		var buf [8]byte
		for {
			if _, err := w.f.Read(buf[:]); err != nil {
				if os.IsTimeout(err) || err == syscall.EAGAIN || err == syscall.EINTR {
					continue
				}
				return // closed
			}
			select {
			case w.c <- struct{}{}:
			default:
			}
		}
	})
	return w
}

func (w *timerfdWaker) wake() <-chan struct{} { return w.c }

func (w *timerfdWaker) arm(d time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(max(int64(d), 1))}
	_ = unix.TimerfdSettime(w.fd, 0, &spec, nil)
}

func (w *timerfdWaker) close() {
	w.f.Close()
	w.done.Wait()
}
