package sim

import (
	"testing"
	"unsafe"
)

// TestPacketLayout keeps the per-hop fields in a packet's first cache line
// and a packet a whole number of lines, so packets in a slab never
// straddle lines.
func TestPacketLayout(t *testing.T) {
	var p Packet
	if size := unsafe.Sizeof(p); size%64 != 0 {
		t.Errorf("Packet is %d bytes, not a whole number of 64-byte lines", size)
	}
	if end := unsafe.Offsetof(p.ECN) + unsafe.Sizeof(p.ECN); end > 64 {
		t.Errorf("the per-hop fields end at byte %d, past the first line", end)
	}
	if slab := 256 * unsafe.Sizeof(p); slab <= 32<<10 {
		t.Errorf("a slab of 256 packets is %d bytes: small objects are not page-aligned", slab)
	}
}
