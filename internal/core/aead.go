package core

import (
	"crypto/cipher"
	"encoding/binary"
)

// AEADCipher adapts an AEAD with a 12-byte nonce (ChaCha20-Poly1305 from
// golang.org/x/crypto, AES-GCM from the standard library) to
// PacketCipher. The nonce is the packet number as Noise forms it for
// ChaChaPoly (four zero bytes, then the number little endian), so keys
// from a flynn/noise handshake work as they would through its CipherState;
// unlike flynn/noise's adapter it keeps the nonce in the struct, so a
// packet costs no allocation. Not safe for concurrent use: one per
// direction of a connection.
type AEADCipher struct {
	aead  cipher.AEAD
	nonce [12]byte
}

// NewAEADCipher wraps a. It panics if a's nonce is not 12 bytes, a
// programming error.
func NewAEADCipher(a cipher.AEAD) *AEADCipher {
	if a.NonceSize() != 12 {
		panic("core: NewAEADCipher needs a 12-byte nonce")
	}
	return &AEADCipher{aead: a}
}

// Encrypt appends the sealed plaintext to out.
func (c *AEADCipher) Encrypt(out []byte, n uint64, ad, plaintext []byte) []byte {
	binary.LittleEndian.PutUint64(c.nonce[4:], n)
	return c.aead.Seal(out, c.nonce[:], plaintext, ad)
}

// Decrypt appends the opened ciphertext to out.
func (c *AEADCipher) Decrypt(out []byte, n uint64, ad, ciphertext []byte) ([]byte, error) {
	binary.LittleEndian.PutUint64(c.nonce[4:], n)
	return c.aead.Open(out, c.nonce[:], ciphertext, ad)
}
