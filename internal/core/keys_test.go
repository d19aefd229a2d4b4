package core_test

import (
	"crypto/sha256"
	"errors"
	"testing"

	"golang.org/x/crypto/chacha20poly1305"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/core/coretest"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// fixedKeys is a stand-in key exchange (package sdr runs Noise): the
// dialer's message is a secret, both directions' keys hash from it. It
// exercises the core's plumbing, not cryptography.
type fixedKeys struct{ fail bool }

func (k fixedKeys) Initiate() ([]byte, error) { return []byte("a shared secret"), nil }

func (k fixedKeys) ciphers(secret []byte, initiator bool) (core.PacketCipher, core.PacketCipher) {
	up, down := sha256.Sum256(append([]byte("up"), secret...)), sha256.Sum256(append([]byte("down"), secret...))
	a, _ := chacha20poly1305.New(up[:])
	b, _ := chacha20poly1305.New(down[:])
	if initiator {
		return core.NewAEADCipher(a), core.NewAEADCipher(b)
	}
	return core.NewAEADCipher(b), core.NewAEADCipher(a)
}

func (k fixedKeys) Respond(msg []byte) ([]byte, core.PacketCipher, core.PacketCipher, error) {
	seal, open := k.ciphers(msg, false)
	return []byte("ok"), seal, open, nil
}

func (k fixedKeys) Finish(answer []byte) (core.PacketCipher, core.PacketCipher, error) {
	if k.fail || string(answer) != "ok" {
		return nil, nil, errors.New("bad answer")
	}
	seal, open := k.ciphers([]byte("a shared secret"), true)
	return seal, open, nil
}

func keyed(mode wire.Protection, k fixedKeys) core.Config {
	return core.Config{Keys: func(bool) core.KeyExchange { return k }, Protection: mode}
}

// TestKeyedTransfer keys a connection in its handshake and moves a
// message over a link that loses, duplicates and reorders: every packet
// is sealed, every duplicate the link made is rejected as a replay, and
// the message arrives whole.
func TestKeyedTransfer(t *testing.T) {
	for _, mode := range []wire.Protection{wire.ProtectHeader, wire.ProtectFull} {
		link := testLink()
		link.Loss, link.Duplicate, link.Reorder, link.ReorderDelay = 0.01, 0.02, 0.02, 200*monotime.Microsecond
		p, events := dialPair(t, link, keyed(mode, fixedKeys{}), keyed(mode, fixedKeys{}))
		if err := p.Drive(func() bool { return has(*events, core.EventEstablished) != nil }, coretest.Limits{}); err != nil {
			t.Fatal(err)
		}
		msg := message(2 << 20)
		if _, err := p.Transfer(msg, len(msg), nil, coretest.Limits{}); err != nil { // checks the SHA-256
			t.Fatalf("%v: transfer: %v", mode, err)
		}
		st := p.B.Conn.ProtectStats()
		if st.Replayed == 0 || st.Forged != 0 || st.Unprotected != 0 {
			t.Errorf("%v: receiver's protection stats %+v: want the link's duplicates caught as replays", mode, st)
		}
	}
}

func TestKeyedHandshakeFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b core.Config
		want error
	}{
		{"listener without keys", keyed(wire.ProtectFull, fixedKeys{}), core.Config{}, core.ErrNoKeys},
		{"bad answer", keyed(wire.ProtectFull, fixedKeys{fail: true}), keyed(wire.ProtectFull, fixedKeys{}), core.ErrKeyExchange},
	} {
		p, events := dialPair(t, testLink(), tc.a, tc.b)
		_ = p.Drive(func() bool { return has(*events, core.EventClosed) != nil }, coretest.Limits{Time: monotime.Second})
		ev := has(*events, core.EventClosed)
		if ev == nil || !errors.Is(ev.Err, tc.want) {
			t.Errorf("%s: %+v, want closed with %v", tc.name, ev, tc.want)
		}
	}
	if _, err := core.NewEndpoint().Dial(0, testAddr, core.Config{Protection: wire.ProtectFull}); err == nil {
		t.Error("protection without a key exchange accepted")
	}
}
