package sdr

import (
	"context"
	"crypto/sha256"
	"testing"
	"time"
)

// TestAutoThroughLinkem sends 1 MiB messages one at a time with scheme
// auto through the link emulator (20 ms RTT, paced at 400 Mbit/s, so a
// repair round costs about as much as the message's injection) while its
// loss rate goes 0, then 2%, then 0 again (lossat=). Every message must arrive byte for byte; auto must
// give most messages of the lossy span's second half an erasure code and
// most of the last clean ones SR-NACK. (Which is faster is measured by
// bench/auto-linkem.sh, not asserted here.) The chooser forgets the loss
// when a whole block of 4096 packets (16 messages at the 4 KiB MTU the
// test sets, not the route's) contradicts it, and
// the block under way when the loss stops holds some of it: the clean
// span before the last second is 3.5 s, about four blocks at an unloaded
// run's 18 messages a second. A host loaded enough to drop packets on
// the clean span (a full test suite on two cores can) gives the chooser
// real loss there: then the clean-span check does not apply, and the
// test says so.
func TestAutoThroughLinkem(t *testing.T) {
	const size = 1 << 20
	lossFrom, lossTo, end := 1*time.Second, 2500*time.Millisecond, 7*time.Second
	l, err := Listen("127.0.0.1:0", &Config{Scheme: "auto", MTU: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	proxy := throughLinkem(t, l, "delay=10ms,lossat=1s-2500ms/2%")
	started := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	type received struct {
		sum [32]byte
		err error
	}
	got := make(chan received, 1)
	accepted := make(chan *Conn, 1)
	go func() {
		conn, err := l.Accept(ctx)
		if err != nil {
			got <- received{err: err}
			return
		}
		accepted <- conn
	}()
	c, err := Dial(ctx, proxy.Addr().String(), &Config{Scheme: "auto", Rate: 400e6, MTU: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var rc *Conn
	buf := make([]byte, size)
	var lossyEC, lossyAll, cleanEC, cleanAll int
	prev := map[string]uint64{}
	// NACKs, timeouts and packets erasure coding rebuilt from a second
	// after the loss stopped: losses the host made on the clean span.
	var cleanFrom, rcvFrom Stats
	cleanMarked := false
	// The same before the loss starts: a loaded host's own losses there
	// leave the chooser a small loss rate that clean blocks do not
	// contradict (too few losses to tell apart), so it keeps coding.
	var before, rcvBefore Stats
	beforeMarked := false
	for i := 0; time.Since(started) < end; i++ {
		msg := payload(size, uint64(i))
		recvOne := func() {
			r, err := rc.PostRecv(buf)
			if err == nil {
				_, err = r.Wait(ctx)
			}
			got <- received{sha256.Sum256(buf), err}
		}
		if i == 0 { // the first message's handshake lets the listener accept
			go func() { rc = <-accepted; recvOne() }()
		} else {
			go recvOne()
		}
		sentAt := time.Since(started)
		if err := c.Send(ctx, msg); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		r := <-got
		if r.err != nil {
			t.Fatalf("message %d: %v", i, r.err)
		}
		if r.sum != sha256.Sum256(msg) {
			t.Fatalf("message %d arrived with a different SHA-256", i)
		}
		// Which scheme the message got: the one whose count grew.
		st := c.Stats()
		ec := false
		for name, n := range st.Schemes {
			if n > prev[name] && name != "sr-nack" {
				ec = true
			}
		}
		prev = st.Schemes
		if !beforeMarked && sentAt > lossFrom-300*time.Millisecond { // what completed so far met no emulated loss
			before, rcvBefore, beforeMarked = st, rc.Stats(), true
		}
		if !cleanMarked && sentAt > lossTo+time.Second {
			cleanFrom, rcvFrom, cleanMarked = st, rc.Stats(), true
		}
		switch {
		case sentAt > (lossFrom+lossTo)/2 && sentAt < lossTo:
			lossyAll++
			if ec {
				lossyEC++
			}
		case sentAt > end-time.Second:
			cleanAll++
			if ec {
				cleanEC++
			}
		}
	}
	t.Logf("auto chose %v; EC for %d of %d messages late in the lossy span, %d of %d in the last clean second",
		c.Stats().Schemes, lossyEC, lossyAll, cleanEC, cleanAll)
	if lossyAll == 0 || cleanAll == 0 {
		t.Fatalf("no messages in a phase (%d lossy, %d clean): the machine is too slow for the schedule", lossyAll, cleanAll)
	}
	if 2*lossyEC <= lossyAll {
		t.Errorf("EC for %d of %d messages under 2%% loss: want most", lossyEC, lossyAll)
	}
	if lost := before.NacksRecvd + before.RTOs + rcvBefore.RecoveredPackets; lost > 0 {
		t.Logf("the host lost packets before the emulated loss began (%d NACKs, timeouts and rebuilt packets): the chooser's memory holds that loss, and the clean-span check does not apply", lost)
		return
	}
	last, rcvLast := c.Stats(), rc.Stats()
	if lost := (last.NacksRecvd - cleanFrom.NacksRecvd) + (last.RTOs - cleanFrom.RTOs) +
		(rcvLast.RecoveredPackets - rcvFrom.RecoveredPackets); lost > 0 {
		t.Logf("the host lost packets on the clean span (%d NACKs, timeouts and rebuilt packets from %v on): the chooser saw loss there, and the clean-span check does not apply",
			lost, lossTo+time.Second)
		return
	}
	if 2*cleanEC >= cleanAll {
		t.Errorf("EC for %d of %d messages on the clean path again: want SR-NACK for most", cleanEC, cleanAll)
	}
}
