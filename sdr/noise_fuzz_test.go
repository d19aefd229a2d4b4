package sdr

import (
	"testing"
)

// FuzzNoiseKeys feeds arbitrary bytes to both sides of the Noise key
// exchange, as a forged HELLO's or ACCEPT's key message would: neither
// side panics, a side that accepts the bytes derives both ciphers, and a
// dialer never accepts an answer it did not get from a listener (an
// answer is authenticated, so no input but a real one passes). With a
// pre-shared key the listener accepts no forged first message either.
func FuzzNoiseKeys(f *testing.F) {
	psk := make([]byte, PSKLen)
	psk[0] = 9
	for _, key := range [][]byte{nil, psk} {
		d := newNoiseKeys(key, true)
		hello, err := d.Initiate()
		if err != nil {
			f.Fatal(err)
		}
		answer, _, _, err := newNoiseKeys(key, false).Respond(hello)
		if err != nil {
			f.Fatal(err)
		}
		if key == nil {
			// Not with the key: each fuzzing process makes its own seeds
			// (fresh ephemeral keys), so a genuine keyed HELLO could not
			// be told from a forged one here. TestPSK covers it.
			f.Add(hello, false, false)
		}
		f.Add(answer, key != nil, true)
	}
	f.Add([]byte{}, false, false)
	f.Fuzz(func(t *testing.T, msg []byte, withPSK, asAnswer bool) {
		var key []byte
		if withPSK {
			key = psk
		}
		if asAnswer {
			d := newNoiseKeys(key, true)
			if _, err := d.Initiate(); err != nil {
				t.Fatal(err)
			}
			// A fresh ephemeral key each run: no fixed input can be
			// the answer to it.
			if seal, open, err := d.Finish(msg); err == nil {
				t.Fatalf("dialer accepted a forged answer %x (ciphers %v %v)", msg, seal, open)
			}
			return
		}
		answer, seal, open, err := newNoiseKeys(key, false).Respond(msg)
		if err != nil {
			return
		}
		if withPSK {
			t.Fatalf("listener with a pre-shared key accepted a forged first message %x", msg)
		}
		if len(answer) == 0 || seal == nil || open == nil {
			t.Fatalf("listener accepted %x but derived answer %x, ciphers %v %v", msg, answer, seal, open)
		}
	})
}
