package sdr

import (
	"crypto/sha256"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/internal/linkem"
)

// TestRouteMTU sends between two network namespaces whose link carries
// 1280-byte IP packets (the dialer's side, or the listener's alone). With
// the default MTU each packet must fit one IP packet both ways, so the
// sending namespace fragments nothing; with an MTU the route cannot
// carry, it fragments (the check can fail). Every byte arrives either
// way.
func TestRouteMTU(t *testing.T) {
	if err := linkem.TunnelSupported(); err != nil {
		t.Skipf("no tunnel here: %v", err)
	}
	const linkMTU = 1280
	for _, tt := range []struct {
		name      string
		mtu       int
		dialerMTU int // the dialer's link; the listener's is linkMTU
		wantMTU   int
	}{
		{"default", 0, linkMTU, payloadFor(linkMTU, linkem.TunnelAddrA)},
		// The listener asks its own namespace's route, from its loop.
		{"default, the listener's route the smaller", 0, linkem.TunnelMTU, payloadFor(linkMTU, linkem.TunnelAddrA)},
		{"too large for the route", 4096, linkMTU, 4096},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tun, err := linkem.NewTunnel(linkem.Config{Seed: 1})
			if err != nil {
				t.Skipf("no tunnel here: %v", err)
			}
			defer tun.Close()
			if err := tun.SetMTU(linkem.SideA, tt.dialerMTU); err != nil {
				t.Fatal(err)
			}
			if err := tun.SetMTU(linkem.SideB, linkMTU); err != nil {
				t.Fatal(err)
			}
			var l *Listener
			if err := tun.Do(linkem.SideB, func() (err error) {
				l, err = Listen(netip.AddrPortFrom(linkem.TunnelAddrB, 0).String(), &Config{MTU: tt.mtu})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			ctx := ctxFor(t, time.Minute)
			var c *Conn
			var fragsBefore, fragsAfter int
			if err := tun.Do(linkem.SideA, func() (err error) {
				if fragsBefore, err = fragmentsCreated(); err != nil {
					return err
				}
				c, err = Dial(ctx, l.Addr().String(), &Config{MTU: tt.mtu})
				return err
			}); err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			peer, err := l.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, conn := range []*Conn{c, peer} {
				if mtu, _ := conn.MTU(); mtu != tt.wantMTU {
					t.Fatalf("MTU %d, want %d", mtu, tt.wantMTU)
				}
			}
			msg := payload(4<<20, 9)
			sent := make(chan error, 1)
			go func() { sent <- c.Send(ctx, msg) }()
			buf := make([]byte, len(msg))
			r, err := peer.PostRecv(buf)
			if err != nil {
				t.Fatal(err)
			}
			n, err := r.Wait(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			if n != len(msg) || sha256.Sum256(buf) != sha256.Sum256(msg) {
				t.Fatalf("received %d of %d bytes, SHA-256 match %v", n, len(msg), sha256.Sum256(buf) == sha256.Sum256(msg))
			}
			if err := tun.Do(linkem.SideA, func() (err error) { fragsAfter, err = fragmentsCreated(); return err }); err != nil {
				t.Fatal(err)
			}
			frags := fragsAfter - fragsBefore
			if tt.mtu == 0 && frags != 0 || tt.mtu != 0 && frags == 0 {
				t.Fatalf("MTU %d on a %d-byte link: the sender made %d IP fragments", tt.wantMTU, linkMTU, frags)
			}
			t.Logf("MTU %d: %d IP fragments made", tt.wantMTU, frags)
		})
	}
}

// fragmentsCreated is the calling thread's network namespace's count of
// IP fragments made (FragCreates in /proc/net/snmp).
func fragmentsCreated() (int, error) {
	b, err := os.ReadFile("/proc/thread-self/net/snmp")
	if err != nil {
		return 0, err
	}
	var names []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "Ip:" {
			continue
		}
		if names == nil {
			names = f
			continue
		}
		for i, name := range names {
			if name == "FragCreates" && i < len(f) {
				return strconv.Atoi(f[i])
			}
		}
	}
	return 0, fmt.Errorf("no FragCreates in /proc/net/snmp")
}
