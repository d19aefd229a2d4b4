package sdr

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"

	"github.com/flynn/noise"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// Keys: every connection runs a Noise handshake (github.com/flynn/noise)
// in its HELLO and ACCEPT, then seals its packets with the keys it
// derived. Without a pre-shared key the pattern is NN: fresh X25519 keys
// on both sides, so no one who was not on the path during the handshake
// can read, forge, inject or replay a packet (blind injection, as in
// NeVerMore, is over), though an active man in the middle could have
// keyed itself in. With Config.PSK both ends prove they hold the key
// (NNpsk0), which stops that too. The suite is X25519, AES-GCM (hardware
// AES makes it the cheap AEAD here) and SHA-256.

// PSKLen is the length of a pre-shared key.
const PSKLen = 32

// noisePrologue binds the handshake to this protocol and version.
var noisePrologue = []byte("sdrnet/1")

// noiseKeys is one side's Noise handshake, behind core.KeyExchange.
type noiseKeys struct {
	hs  *noise.HandshakeState
	err error // from setting it up, reported by the first call
}

func newNoiseKeys(psk []byte, initiator bool) core.KeyExchange {
	cfg := noise.Config{
		CipherSuite: noise.NewCipherSuite(noise.DH25519, noise.CipherAESGCM, noise.HashSHA256),
		Pattern:     noise.HandshakeNN,
		Initiator:   initiator,
		Prologue:    noisePrologue,
	}
	if len(psk) > 0 {
		cfg.PresharedKey, cfg.PresharedKeyPlacement = psk, 0
	}
	hs, err := noise.NewHandshakeState(cfg)
	return &noiseKeys{hs: hs, err: err}
}

func (k *noiseKeys) Initiate() ([]byte, error) {
	if k.err != nil {
		return nil, k.err
	}
	msg, _, _, err := k.hs.WriteMessage(nil, nil)
	return msg, err
}

func (k *noiseKeys) Respond(msg []byte) ([]byte, core.PacketCipher, core.PacketCipher, error) {
	if k.err != nil {
		return nil, nil, nil, k.err
	}
	if _, _, _, err := k.hs.ReadMessage(nil, msg); err != nil {
		return nil, nil, nil, fmt.Errorf("reading the dialer's handshake (a different pre-shared key?): %w", err)
	}
	answer, toResponder, toInitiator, err := k.hs.WriteMessage(nil, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	seal, err := packetCipher(toInitiator)
	if err != nil {
		return nil, nil, nil, err
	}
	open, err := packetCipher(toResponder)
	return answer, seal, open, err
}

func (k *noiseKeys) Finish(answer []byte) (core.PacketCipher, core.PacketCipher, error) {
	if k.err != nil {
		return nil, nil, k.err
	}
	_, toResponder, toInitiator, err := k.hs.ReadMessage(nil, answer)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the listener's handshake (a different pre-shared key?): %w", err)
	}
	seal, err := packetCipher(toResponder)
	if err != nil {
		return nil, nil, err
	}
	open, err := packetCipher(toInitiator)
	return seal, open, err
}

// packetCipher turns one direction's Noise cipher state into the core's
// packet cipher: the same key, with the packet number as the nonce (UDP
// reorders and loses packets, so Noise's implicit counter cannot be used).
func packetCipher(cs *noise.CipherState) (core.PacketCipher, error) {
	if cs == nil {
		return nil, fmt.Errorf("sdr: the Noise handshake derived no keys")
	}
	key := cs.UnsafeKey()
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return core.NewAEADCipher(gcm), nil
}

// parseAuth reads Config.Auth.
func parseAuth(s string) (wire.Protection, error) {
	if s == "" {
		s = DefaultAuth
	}
	if p, ok := wire.ParseProtection(s); ok {
		return p, nil
	}
	return 0, fmt.Errorf("sdr: Config.Auth %q: want full, header or none", s)
}
