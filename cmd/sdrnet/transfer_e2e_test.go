package main

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/sdr/transfer"
)

// TestE2EResume kills the receiver outright (SIGKILL) half-way through a
// 256 MiB file, then reruns the same recv and send: the second run moves
// less than 60% of the file and the file ends byte-exact.
func TestE2EResume(t *testing.T) {
	size := 256 << 20
	if testing.Short() {
		size = 32 << 20
	}
	dir := t.TempDir()
	in, want := randomFile(t, dir, size)
	out := filepath.Join(dir, "out")
	addr := freePort(t)
	recvArgs := []string{"recv", "--listen", addr, "--out", out, "--json", "--idle-timeout", "1s"}
	sendArgs := []string{"send", addr, in, "--rate", "1Gbps", "--json", "--idle-timeout", "1s"}
	recv := start(t, recvArgs...)
	waitFor(t, 10*time.Second, "recv to listen", func() bool { return strings.Contains(recv.stderr.String(), "listening") })
	send := start(t, sendArgs...)
	waitFor(t, 60*time.Second, "half the file", func() bool {
		st, err := os.Stat(out + ".partial")
		return err == nil && st.Size() >= int64(size/2)
	})
	if err := recv.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if code, log := send.exit(t); code == 0 {
		t.Fatalf("send exited 0 with its receiver killed:\n%s", log)
	}
	if _, err := os.Stat(out + ".partial.state"); err != nil {
		t.Fatalf("no bitmap beside the partial file: %v", err)
	}

	recv = start(t, recvArgs...)
	waitFor(t, 10*time.Second, "recv to listen again", func() bool { return strings.Contains(recv.stderr.String(), "listening") })
	send = start(t, sendArgs...)
	for _, p := range []*proc{send, recv} {
		code, log := p.exit(t)
		var s summary
		if err := json.Unmarshal([]byte(p.stdout.String()), &s); code != 0 || err != nil || !s.OK {
			t.Fatalf("%s exited %d (%v):\n%s", p.cmd.Args[1], code, err, log)
		}
		t.Logf("%s: moved %d, resumed %d of %d bytes", p.cmd.Args[1], s.MovedBytes, s.ResumedBytes, s.Bytes)
		// Under -short the file is a few checkpoints long, so only some
		// resume is asked of it; the full run holds the 60% bound.
		limit := 0.6
		if testing.Short() {
			limit = 1
		}
		if s.Bytes != int64(size) || s.MovedBytes+s.ResumedBytes != int64(size) || s.ResumedBytes == 0 || float64(s.MovedBytes) >= limit*float64(size) {
			t.Errorf("%s: moved %d and resumed %d of %d bytes, want under %.0f%% moved", p.cmd.Args[1], s.MovedBytes, s.ResumedBytes, size, 100*limit)
		}
	}
	got, err := os.ReadFile(out)
	if err != nil || sha256.Sum256(got) != want {
		t.Fatalf("%s: %d bytes, %v", out, len(got), err)
	}
	for _, left := range []string{".partial", ".partial.state"} {
		if _, err := os.Stat(out + left); !os.IsNotExist(err) {
			t.Errorf("%s%s left behind: %v", out, left, err)
		}
	}
}

// TestE2EPartialKept: a retry never truncates what arrived. A recv
// interrupted before any sender came keeps an existing FILE.partial, and
// a FILE.partial that is not of the sender's file is set aside and named.
func TestE2EPartialKept(t *testing.T) {
	dir := t.TempDir()
	in, want := randomFile(t, dir, 3<<20)
	out := filepath.Join(dir, "out")
	old := []byte(strings.Repeat("what arrived before ", 1000))
	if err := os.WriteFile(out+".partial", old, 0o644); err != nil {
		t.Fatal(err)
	}
	addr := freePort(t)
	recv := start(t, "recv", "--listen", addr, "--out", out)
	waitFor(t, 10*time.Second, "recv to listen", func() bool { return strings.Contains(recv.stderr.String(), "listening") })
	_ = recv.cmd.Process.Signal(syscall.SIGINT)
	recv.exit(t)
	if got, _ := os.ReadFile(out + ".partial"); string(got) != string(old) {
		t.Fatalf("an interrupted recv changed %s.partial to %d bytes", out, len(got))
	}
	recv = start(t, "recv", "--listen", addr, "--out", out)
	waitFor(t, 10*time.Second, "recv to listen", func() bool { return strings.Contains(recv.stderr.String(), "listening") })
	send := start(t, "send", addr, in)
	if code, log := send.exit(t); code != 0 {
		t.Fatalf("send exited %d:\n%s", code, log)
	}
	code, log := recv.exit(t)
	if code != 0 || !strings.Contains(log, out+".partial.stale (set aside: it has no bitmap beside it)") {
		t.Fatalf("recv exited %d, without naming where the old partial file went:\n%s", code, log)
	}
	if got, _ := os.ReadFile(out + ".partial.stale"); string(got) != string(old) {
		t.Errorf("the old partial file was not kept")
	}
	if got, _ := os.ReadFile(out); sha256.Sum256(got) != want {
		t.Errorf("%s is not the sender's file", out)
	}
}

// TestE2ETwoReceivers: a second recv on the same --out refuses at once,
// and the first still ends verified.
func TestE2ETwoReceivers(t *testing.T) {
	recv, send, out := slowTransfer(t)
	second := start(t, "recv", "--listen", freePort(t), "--out", out)
	if code, log := second.exit(t); code == 0 || !strings.Contains(log, "another receiver is writing it") || strings.Contains(log, "listening") {
		t.Errorf("second recv exited %d:\n%s", code, log)
	}
	for _, p := range []*proc{send, recv} {
		if code, log := p.exit(t); code != 0 {
			t.Fatalf("%s exited %d:\n%s", p.cmd.Args[1], code, log)
		}
	}
}

// TestE2ESchemeNoneEnds: --scheme none through a lossy link cannot
// deliver the file; both ends must end within the idle timeout, the
// receiver saying how much is missing, instead of hanging on keepalives.
func TestE2ESchemeNoneEnds(t *testing.T) {
	dir := t.TempDir()
	in, _ := randomFile(t, dir, 8<<20)
	raddr := freePort(t)
	recv := start(t, "recv", "--listen", raddr, "--out", filepath.Join(dir, "out"), "--scheme", "none", "--idle-timeout", "1s")
	waitFor(t, 10*time.Second, "recv to listen", func() bool { return strings.Contains(recv.stderr.String(), "listening") })
	laddr := startLinkem(t, raddr, "loss=1%")
	begin := time.Now()
	send := start(t, "send", laddr, in, "--scheme", "none", "--idle-timeout", "1s")
	code, log := recv.exit(t)
	if code == 0 || !strings.Contains(log, "no data arrived for 1s") || !strings.Contains(log, "missing") {
		t.Errorf("recv exited %d:\n%s", code, log)
	}
	if code, log := send.exit(t); code == 0 || !strings.Contains(log, "receiver stopped") {
		t.Errorf("send exited %d:\n%s", code, log)
	}
	if d := time.Since(begin); d > 15*time.Second {
		t.Errorf("took %v to end", d)
	}
}

// TestE2EDirectory sends a directory tree through the built binary: the
// receiver lays out the same files, links, modes and times.
func TestE2EDirectory(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for i := range 50 {
		sub := filepath.Join(src, fmt.Sprintf("d%d", i%5))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("f%02d", i)), []byte(strings.Repeat("x", i*100)), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("d0/f00", filepath.Join(src, "link")); err != nil {
		t.Fatal(err)
	}
	when := time.Unix(1.5e9, 0)
	_ = os.Chtimes(filepath.Join(src, "d1", "f01"), when, when)
	out := filepath.Join(dir, "copy")
	addr := freePort(t)
	recv := start(t, "recv", "--listen", addr, "--out", out)
	waitFor(t, 10*time.Second, "recv to listen", func() bool { return strings.Contains(recv.stderr.String(), "listening") })
	send := start(t, "send", addr, src)
	for _, p := range []*proc{send, recv} {
		if code, log := p.exit(t); code != 0 {
			t.Fatalf("%s exited %d:\n%s", p.cmd.Args[1], code, log)
		}
	}
	if out, err := exec.Command("diff", "-r", "--no-dereference", src, out).CombinedOutput(); err != nil {
		t.Fatalf("the trees differ: %v\n%s", err, out)
	}
	if st, err := os.Stat(filepath.Join(out, "d1", "f01")); err != nil || !st.ModTime().Equal(when) || st.Mode().Perm() != 0o640 {
		t.Errorf("d1/f01: %v, %v", st, err)
	}
	if target, err := os.Readlink(filepath.Join(out, "link")); err != nil || target != "d0/f00" {
		t.Errorf("link: %q, %v", target, err)
	}
}

// TestE2ENotSdrnet: a UDP service that answers with something else is
// named as such, not reported as a silent peer.
func TestE2ENotSdrnet(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	go func() {
		buf := make([]byte, 2048)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo([]byte("SSH-2.0-OpenSSH_9.6\r\n"), from)
		}
	}()
	in, _ := randomFile(t, t.TempDir(), 1000)
	send := start(t, "send", pc.LocalAddr().String(), in, "--handshake-timeout", "2s")
	if code, log := send.exit(t); code == 0 || !strings.Contains(log, "but not as sdrnet") || strings.Contains(log, "no answer") {
		t.Fatalf("send exited %d:\n%s", code, log)
	}
}

// TestE2EFullDisk: a receiver whose disk fills fails, and both ends give
// the same count of bytes it holds (the receiver's), not what the sender
// saw acknowledged.
func TestE2EFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	if err := os.Mkdir(small, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", small).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", small).Run() })
	in, _ := randomFile(t, dir, 16<<20)
	addr := freePort(t)
	recv := start(t, "recv", "--listen", addr, "--out", filepath.Join(small, "out"), "--msg", "1MiB")
	waitFor(t, 10*time.Second, "recv to listen", func() bool { return strings.Contains(recv.stderr.String(), "listening") })
	send := start(t, "send", addr, in, "--msg", "1MiB")
	rcode, rlog := recv.exit(t)
	scode, slog := send.exit(t)
	m := regexp.MustCompile(`received (\d+) of 16777216 bytes`).FindStringSubmatch(rlog)
	if rcode == 0 || m == nil || !strings.Contains(rlog, "no space left") {
		t.Fatalf("recv exited %d:\n%s", rcode, rlog)
	}
	t.Logf("both ends: the receiver holds %s bytes", m[1])
	if scode == 0 || !strings.Contains(slog, "receiver could not write") || !strings.Contains(slog, "it holds "+m[1]+" of 16777216 bytes") {
		t.Fatalf("send exited %d, want the receiver's %s bytes:\n%s", scode, m[1], slog)
	}
}

// TestTreeUnchanged: a directory written while it was sent is not
// reported as sent.
func TestTreeUnchanged(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f"), []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, _, err := transfer.ReadDir(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := treeUnchanged(dir, false, src); err != nil {
		t.Fatalf("unchanged tree: %v", err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "f"), later, later); err != nil {
		t.Fatal(err)
	}
	if err := treeUnchanged(dir, false, src); err == nil || !strings.Contains(err.Error(), "changed while it was sent") {
		t.Fatalf("a file written meanwhile: %v", err)
	}
}
