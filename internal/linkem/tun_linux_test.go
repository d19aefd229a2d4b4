package linkem

import (
	"bytes"
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func newTestTunnel(t *testing.T, cfg Config) *Tunnel {
	t.Helper()
	if err := TunnelSupported(); err != nil {
		t.Skipf("no tunnel here: %v", err)
	}
	tun, err := NewTunnel(cfg)
	if err != nil {
		t.Skipf("no tunnel here: %v", err) // e.g. namespaces not allowed in this container
	}
	t.Cleanup(func() {
		if err := tun.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		out, _ := exec.Command("ip", "netns", "list").Output()
		for side := range 2 {
			if strings.Contains(string(out), tun.Namespace(Side(side))) {
				t.Errorf("namespace %s left behind", tun.Namespace(Side(side)))
			}
		}
	})
	return tun
}

// TestTunnelTCP sends kernel TCP from namespace A to B across a delayed,
// lossy tunnel: the handshake takes a round trip of delays, and the data
// arrives intact despite the losses.
func TestTunnelTCP(t *testing.T) {
	const delay = 5 * time.Millisecond
	tun := newTestTunnel(t, Config{Seed: 1, Default: Both(Impairment{Delay: delay, Loss: 0.01})})

	var ln net.Listener
	if err := tun.Do(SideB, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(TunnelAddrB.String(), "0"))
		return
	}); err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(30 * time.Second))
		h := sha256.New()
		io.Copy(h, c)
		got <- h.Sum(nil)
	}()

	var c net.Conn
	start := time.Now()
	if err := tun.Do(SideA, func() (err error) {
		c, err = net.DialTimeout("tcp", ln.Addr().String(), 10*time.Second)
		return
	}); err != nil {
		t.Fatal(err)
	}
	if rtt := time.Since(start); rtt < 2*delay {
		t.Errorf("handshake took %v, less than a round trip of %v", rtt, 2*delay)
	}
	data := make([]byte, 2<<20)
	rand.NewChaCha8([32]byte{1}).Read(data)
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(data); err != nil {
		t.Fatal(err)
	}
	c.Close()
	want := sha256.Sum256(data)
	select {
	case h := <-got:
		if !bytes.Equal(h, want[:]) {
			t.Fatal("data corrupted or cut short")
		}
	case <-time.After(40 * time.Second):
		t.Fatal("transfer timed out")
	}
	s := tun.Stats()
	port := c.LocalAddr().(*net.TCPAddr).Port
	var ps *PathStats
	for i := range s.Paths {
		if int(s.Paths[i].Client.Port()) == port {
			ps = &s.Paths[i]
		}
	}
	if ps == nil || ps.Client.Addr() != TunnelAddrA {
		t.Fatalf("paths %+v; want one from %v:%d", s.Paths, TunnelAddrA, port)
	}
	if ps.Forward.Forwarded < 1000 || ps.Forward.DroppedLoss == 0 || ps.Reverse.Forwarded == 0 {
		t.Errorf("forward %+v, reverse %+v; want traffic both ways and losses", ps.Forward, ps.Reverse)
	}
	t.Logf("TCP path: forward %+v, reverse %+v", ps.Forward, ps.Reverse)
}

// TestTunnelUDPPerPort fails one UDP port's path from the start, leaving
// another port alone. The namespaces are new, so the ports are free.
func TestTunnelUDPPerPort(t *testing.T) {
	const failed, fine = 40001, 40002
	tun := newTestTunnel(t, Config{Ports: map[int]Path{failed: {Forward: Impairment{Down: []Window{{0, 0}}}}}})
	var sink *net.UDPConn
	if err := tun.Do(SideB, func() (err error) {
		sink, err = net.ListenUDP("udp", &net.UDPAddr{IP: TunnelAddrB.AsSlice()})
		return
	}); err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	var senders []*net.UDPConn
	if err := tun.Do(SideA, func() error {
		for _, port := range []int{failed, fine} {
			c, err := net.DialUDP("udp", &net.UDPAddr{IP: TunnelAddrA.AsSlice(), Port: port}, sink.LocalAddr().(*net.UDPAddr))
			if err != nil {
				return err
			}
			senders = append(senders, c)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range senders {
		defer c.Close()
	}
	for range 20 {
		for _, c := range senders {
			c.Write([]byte("x"))
		}
	}
	waitFor(t, 5*time.Second, "40 packets", func() bool { return tun.Stats().Forward.Received >= 40 })
	got := 0
	sink.SetReadDeadline(time.Now().Add(time.Second))
	buf := make([]byte, 64)
	for {
		if _, err := sink.Read(buf); err != nil {
			break
		}
		got++
	}
	if got != 20 {
		t.Errorf("sink got %d datagrams, want 20", got)
	}
	for _, ps := range tun.Stats().Paths {
		f := ps.Forward
		switch ps.Client.Port() {
		case failed:
			if f.Received != 20 || f.DroppedFail != 20 {
				t.Errorf("failed port: %+v", f)
			}
		case fine:
			if f.Received != 20 || f.Forwarded != 20 {
				t.Errorf("fine port: %+v", f)
			}
		}
	}
}

func TestASidePort(t *testing.T) {
	ip4 := func(proto byte, sport, dport uint16) []byte {
		p := make([]byte, 28)
		p[0], p[9] = 0x45, proto
		p[20], p[21], p[22], p[23] = byte(sport>>8), byte(sport), byte(dport>>8), byte(dport)
		return p
	}
	if got := aSidePort(ip4(6, 1234, 80), true); got != 1234 {
		t.Errorf("TCP from A: %d", got)
	}
	if got := aSidePort(ip4(17, 80, 1234), false); got != 1234 {
		t.Errorf("UDP to A: %d", got)
	}
	if got := aSidePort(ip4(1, 1, 2), true); got != 0 {
		t.Errorf("ICMP: %d", got)
	}
	frag := ip4(17, 1, 2)
	frag[7] = 1
	if got := aSidePort(frag, true); got != 0 {
		t.Errorf("fragment: %d", got)
	}
	if got := aSidePort([]byte{0x45}, true); got != 0 {
		t.Errorf("short: %d", got)
	}
}
