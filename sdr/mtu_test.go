package sdr

import (
	"net/netip"
	"testing"

	"github.com/sdrnet/sdrnet/internal/core"
)

func TestPayloadFor(t *testing.T) {
	v4, v6 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	for _, tt := range []struct {
		link int
		addr netip.Addr
		want int
	}{
		{1500, v4, 1400}, // Ethernet: 20 IP + 8 UDP + 48 header + 24 trailer
		{1500, v6, 1380},
		{1500, netip.AddrFrom16(v4.As16()), 1400}, // IPv4 in a dual-stack socket's form
		{9000, v4, MaxAutoMTU},
		{65536, v4, MaxAutoMTU}, // loopback
		{100, v4, 64},           // below what any packet needs: SDR's least
	} {
		if got := payloadFor(tt.link, tt.addr); got != tt.want {
			t.Errorf("payloadFor(%d, %v) = %d, want %d", tt.link, tt.addr, got, tt.want)
		}
	}
}

func TestDefaultChunkSizeIsTheCore(t *testing.T) {
	if DefaultChunkSize != core.DefaultChunkSize {
		t.Fatalf("sdr.DefaultChunkSize %d, the core's %d", DefaultChunkSize, core.DefaultChunkSize)
	}
}
