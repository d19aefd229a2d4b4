//go:build !linux

package linkem

import "net"

// setBuffers asks for n-byte kernel buffers on c, up to the system limits.
func setBuffers(c *net.UDPConn, n int) {
	_ = c.SetReadBuffer(n)
	_ = c.SetWriteBuffer(n)
}

// oobLen is zero: no receive timestamps here.
const oobLen = 0

func enableRxTimestamps(*net.UDPConn) bool { return false }

func rxTimestamp([]byte) (int64, bool) { return 0, false }

func newWaker() waker { return newTimeWaker() }
