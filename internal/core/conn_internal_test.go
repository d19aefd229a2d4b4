package core

import (
	"testing"
	"unsafe"
)

// TestConnSizeClass: a Conn fits Go's 1,024-byte size class, the 8-byte
// header Go puts before an object of over 512 bytes with pointers
// included. A datagram endpoint holds a Conn per peer, so a field added
// here moves every peer to the next class, 128 bytes more: what only some
// connections use belongs behind a pointer made when first needed.
func TestConnSizeClass(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("the size classes checked are a 64-bit platform's")
	}
	const class, header = 1024, 8
	if n := unsafe.Sizeof(Conn{}); n+header > class {
		t.Errorf("a Conn is %d bytes, over the %d-byte size class with Go's %d-byte header", n, class, header)
	}
}
