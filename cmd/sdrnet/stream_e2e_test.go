package main

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var built struct {
	once sync.Once
	path string
	err  error
}

// sdrnetBinary builds sdrnet once per test run: the end-to-end tests run the
// real program, signals and exit codes included.
func sdrnetBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		dir, err := os.MkdirTemp("", "sdrnet-bin")
		if err != nil {
			built.err = err
			return
		}
		built.path = filepath.Join(dir, "sdrnet")
		out, err := exec.Command("go", "build", "-o", built.path, ".").CombinedOutput()
		if err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

// freePort returns a UDP port on loopback that nothing uses right now.
func freePort(t *testing.T) string {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().String()
}

// proc is a running sdrnet.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan error
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(sdrnetBinary(t), args...), done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	return p
}

// startLinkem starts sdrnet linkem in front of target and returns the
// address it listens on. It binds a port of its own choosing: a port
// picked free beforehand may be taken (by a receiver's other paths) by the
// time linkem binds it.
func startLinkem(t *testing.T, target, spec string) string {
	t.Helper()
	em := start(t, "linkem", "--listen", "127.0.0.1:0", "--target", target, "--spec", spec)
	var addr string
	waitFor(t, 10*time.Second, "linkem to listen", func() bool {
		line, _, ok := strings.Cut(em.stderr.String(), " -> ")
		addr = strings.TrimPrefix(line, "sdrnet linkem: ")
		return ok
	})
	return addr
}

// waitFor waits until cond holds, or fails the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// exit waits for the process and returns its exit code and output: what
// it printed on stdout (results), then on stderr (diagnostics).
func (p *proc) exit(t *testing.T) (int, string) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(60 * time.Second):
		// SIGQUIT makes the Go runtime print every goroutine's stack, so a
		// hang in CI leaves the evidence needed to find it.
		_ = p.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
		t.Fatalf("%v still running:\n%s", p.cmd.Args, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode(), p.stdout.String() + p.stderr.String()
}

func randomFile(t *testing.T, dir string, size int) (string, [32]byte) {
	t.Helper()
	data := make([]byte, size)
	_, _ = rand.Read(data)
	name := filepath.Join(dir, "in")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return name, sha256.Sum256(data)
}

// slowTransfer starts recv and a 64 MiB send paced to 200 Mbit/s, and
// returns once more than a MiB has arrived, with recv's --out file.
// sendArgs are added to send's flags.
func slowTransfer(t *testing.T, sendArgs ...string) (recv, send *proc, out string) {
	t.Helper()
	dir := t.TempDir()
	in, _ := randomFile(t, dir, 64<<20)
	out = filepath.Join(dir, "out")
	addr := freePort(t)
	recv = start(t, "recv", "--listen", addr, "--out", out, "--msg", "1MiB")
	waitFor(t, 10*time.Second, "recv to listen", func() bool { return strings.Contains(recv.stderr.String(), "listening") })
	send = start(t, append([]string{"send", addr, in, "--msg", "1MiB", "--rate", "200Mbps"}, sendArgs...)...)
	waitFor(t, 20*time.Second, "bytes to arrive", func() bool {
		st, err := os.Stat(out + ".partial")
		return err == nil && st.Size() > 1<<20
	})
	return recv, send, out
}

// TestE2EInterruptedSend interrupts `sdrnet send` mid-transfer (SIGINT,
// as Ctrl-C does): both ends must exit non-zero, the receiver must say how
// much arrived, and the file must never appear under its final name.
func TestE2EInterruptedSend(t *testing.T) {
	recv, send, out := slowTransfer(t)
	if err := send.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	sendCode, sendLog := send.exit(t)
	recvCode, recvLog := recv.exit(t)
	if sendCode == 0 || !strings.Contains(sendLog, "interrupted (the receiver acknowledged") {
		t.Errorf("send exited %d:\n%s", sendCode, sendLog)
	}
	if recvCode == 0 || !strings.Contains(recvLog, "incomplete: received") || !strings.Contains(recvLog, "of 67108864 bytes") ||
		!strings.Contains(recvLog, "sender stopped") || !strings.Contains(recvLog, out+".partial") {
		t.Errorf("recv exited %d:\n%s", recvCode, recvLog)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("the incomplete stream was written to %s (%v)", out, err)
	}
	if st, err := os.Stat(out + ".partial"); err != nil || st.Size() == 0 || st.Size() >= 64<<20 {
		t.Errorf("partial file: %v, %v", st, err)
	}
}

// TestE2EVerifiedFile is the transfer done right: the file appears under
// its name, whole, and no partial file is left.
func TestE2EVerifiedFile(t *testing.T) {
	dir := t.TempDir()
	in, want := randomFile(t, dir, 3<<20+5)
	out := filepath.Join(dir, "out")
	addr := freePort(t)
	recv := start(t, "recv", "--listen", addr, "--out", out, "--msg", "1MiB")
	waitFor(t, 10*time.Second, "recv to listen", func() bool { return strings.Contains(recv.stderr.String(), "listening") })
	send := start(t, "send", addr, in, "--msg", "1MiB")
	if code, log := send.exit(t); code != 0 || !strings.Contains(log, "sent and verified 3MiB") {
		t.Fatalf("send exited %d:\n%s", code, log)
	}
	if code, log := recv.exit(t); code != 0 || !strings.Contains(log, "received and verified") {
		t.Fatalf("recv exited %d:\n%s", code, log)
	}
	got, err := os.ReadFile(out)
	if err != nil || sha256.Sum256(got) != want {
		t.Fatalf("%s: %d bytes, %v", out, len(got), err)
	}
	if _, err := os.Stat(out + ".partial"); !os.IsNotExist(err) {
		t.Fatalf("partial file left behind: %v", err)
	}
}

// TestE2ERecvChecksOutFirst: an --out recv cannot write fails before it
// listens.
func TestE2ERecvChecksOutFirst(t *testing.T) {
	dir := t.TempDir()
	for _, out := range []string{filepath.Join(dir, "no", "such", "dir", "f"), dir} {
		recv := start(t, "recv", "--listen", freePort(t), "--out", out)
		code, log := recv.exit(t)
		if code == 0 || strings.Contains(log, "listening") || !strings.Contains(log, "invalid --out") {
			t.Errorf("--out %s: exit %d:\n%s", out, code, log)
		}
	}
}

// TestE2EKilledPeer: SIGKILL of either side; the survivor exits non-zero
// (an ICMP refusal, or the 5 s idle timeout: well inside exit's minute),
// saying what happened, instead of waiting 30 s to say "connection
// closed".
func TestE2EKilledPeer(t *testing.T) {
	for _, victim := range []string{"send", "recv"} {
		t.Run(victim, func(t *testing.T) {
			recv, send, _ := slowTransfer(t)
			killed, survivor := send, recv
			if victim == "recv" {
				killed, survivor = recv, send
			}
			if err := killed.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			code, log := survivor.exit(t)
			if code == 0 {
				t.Fatalf("survivor exited 0:\n%s", log)
			}
			if !strings.Contains(log, "refused by") && !strings.Contains(log, "silent for") {
				t.Fatalf("survivor does not say the peer is gone:\n%s", log)
			}
		})
	}
}

// TestE2ESilentPeer: a receiver that stops answering (SIGSTOP: its socket
// stays open, so no ICMP refusal comes) is declared gone by the sender
// after --idle-timeout, with the peer, the silence and what was delivered.
func TestE2ESilentPeer(t *testing.T) {
	recv, send, _ := slowTransfer(t, "--idle-timeout", "1s")
	if err := recv.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = recv.cmd.Process.Signal(syscall.SIGCONT) })
	code, log := send.exit(t)
	if code == 0 || !strings.Contains(log, "silent for") || !strings.Contains(log, "127.0.0.1:") {
		t.Fatalf("send exited %d:\n%s", code, log)
	}
}

// TestE2ERefused: send to a port where nothing listens fails at once with
// "connection refused by ADDR". The handshake timeout is an hour, so only
// the refusal can end it within exit's minute.
func TestE2ERefused(t *testing.T) {
	in, _ := randomFile(t, t.TempDir(), 1000)
	addr := freePort(t)
	send := start(t, "send", addr, in, "--handshake-timeout", "1h")
	if code, log := send.exit(t); code == 0 || !strings.Contains(log, "connection refused by "+addr) {
		t.Fatalf("send exited %d:\n%s", code, log)
	}
}

// TestE2EMultipathRecvBehindLinkem: recv --paths 4 behind sdrnet linkem
// (1% loss each way) completes its handshake and receives byte-exact
// from a sender spraying over 4 paths.
func TestE2EMultipathRecvBehindLinkem(t *testing.T) {
	dir := t.TempDir()
	in, want := randomFile(t, dir, 8<<20)
	out := filepath.Join(dir, "out")
	raddr := freePort(t)
	recv := start(t, "recv", "--listen", raddr, "--paths", "4", "--out", out, "--msg", "1MiB")
	waitFor(t, 10*time.Second, "recv to listen", func() bool { return strings.Contains(recv.stderr.String(), "listening") })
	laddr := startLinkem(t, raddr, "delay=1ms,loss=1%")
	send := start(t, "send", laddr, in, "--paths", "4", "--msg", "1MiB")
	if code, log := send.exit(t); code != 0 || !strings.Contains(log, "sent and verified") {
		t.Fatalf("send exited %d:\n%s", code, log)
	}
	if code, log := recv.exit(t); code != 0 || !strings.Contains(log, "received and verified") {
		t.Fatalf("recv exited %d:\n%s", code, log)
	}
	if got, err := os.ReadFile(out); err != nil || sha256.Sum256(got) != want {
		t.Fatalf("%s: %d bytes, %v", out, len(got), err)
	}
}

// TestE2EMessageTooLarge: a sender whose messages (--msg 8MiB) exceed the
// receiver's buffers (--msg 1MiB) fails on both ends, and both say which
// flag to change.
func TestE2EMessageTooLarge(t *testing.T) {
	addr := freePort(t)
	recv := start(t, "recv", "--listen", addr, "--msg", "1MiB")
	waitFor(t, 10*time.Second, "recv to listen", func() bool { return strings.Contains(recv.stderr.String(), "listening") })
	send := start(t, "send", addr, "--size", "32MiB", "--msg", "8MiB")
	const fix = "recv --msg"
	if code, log := send.exit(t); code == 0 || !strings.Contains(log, fix) {
		t.Errorf("send exited %d, want non-zero and %q:\n%s", code, fix, log)
	}
	if code, log := recv.exit(t); code == 0 || !strings.Contains(log, fix) || !strings.Contains(log, "--msg 1MiB") {
		t.Errorf("recv exited %d, want non-zero and %q:\n%s", code, fix, log)
	}
}
