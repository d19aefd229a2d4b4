package transfer

import (
	"bytes"
	"testing"
)

// TestFramesRoundTrip encodes each message and parses it back.
func TestFramesRoundTrip(t *testing.T) {
	o := offer{Size: 5<<20 + 3, ModTime: 1e18, Mode: 0o644, BlockSize: 1 << 20, MaxData: 7 << 20, Flags: 0}
	if got, err := parseOffer(o.encode()); err != nil || got != o {
		t.Errorf("offer: %+v, %v", got, err)
	}
	st := state{Have: newBitmap(o.blocks()), Digests: make([][32]byte, o.blocks())}
	st.Have.set(0)
	st.Have.set(5)
	st.Digests[0][0], st.Digests[5][31] = 1, 2
	got, err := parseState(st.encode(), o.blocks())
	if err != nil || !bytes.Equal(got.Have, st.Have) || got.Digests[0] != st.Digests[0] || got.Digests[5] != st.Digests[5] {
		t.Errorf("state: %+v, %v", got, err)
	}
	if reuse, err := parsePlan(encodePlan(true)); err != nil || !reuse {
		t.Errorf("plan: %v, %v", reuse, err)
	}
	size, digest, err := parseEnd(encodeEnd(42, [32]byte{9}))
	if err != nil || size != 42 || digest != [32]byte{9} {
		t.Errorf("end: %d %x %v", size, digest, err)
	}
	v := verdict{OK: true, Written: 7, Resumed: 3, Reason: "fine"}
	if got, err := parseVerdict(v.encode()); err != nil || got != v {
		t.Errorf("verdict: %+v, %v", got, err)
	}
	s := savedState{size: o.Size, modTime: o.ModTime, blockSize: o.BlockSize, have: st.Have}
	if got, err := parseSavedState(s.encode()); err != nil || !bytes.Equal(got.have, s.have) || got.size != s.size {
		t.Errorf("saved state: %+v, %v", got, err)
	}
}

// FuzzParse feeds every decoder arbitrary bytes: none may panic, and what
// one accepts must encode back to the same bytes.
func FuzzParse(f *testing.F) {
	o := offer{Size: 3 << 20, ModTime: 1, BlockSize: 1 << 20, MaxData: 1 << 20}
	st := state{Have: bitmap{0b101}, Digests: make([][32]byte, 3)}
	v := verdict{Reason: "digest differs"}
	saved := savedState{size: o.Size, blockSize: o.BlockSize, have: st.Have}
	m := encodeManifest([]Entry{{Type: EntryDir, Path: "."}, {Type: EntryFile, Path: "f", Size: 3}, {Type: EntrySymlink, Path: "l", Link: "f"}})
	for _, b := range [][]byte{o.encode(), st.encode(), encodePlan(true), encodeEnd(1, [32]byte{}), v.encode(), saved.encode(), m, {}, []byte("SDRF")} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, err := parseOffer(b); err == nil && !bytes.Equal(got.encode(), b) {
			t.Errorf("offer %+v does not encode back", got)
		}
		for _, n := range []int{0, 1, 3, 9} {
			if got, err := parseState(b, n); err == nil && !bytes.Equal(got.encode(), b) {
				t.Errorf("state of %d blocks %+v does not encode back", n, got)
			}
		}
		if reuse, err := parsePlan(b); err == nil && !bytes.Equal(encodePlan(reuse), b) {
			t.Errorf("plan does not encode back")
		}
		_, _, _ = parseData(b)
		if size, d, err := parseEnd(b); err == nil && !bytes.Equal(encodeEnd(size, d), b) {
			t.Errorf("end does not encode back")
		}
		if got, err := parseVerdict(b); err == nil && !bytes.Equal(got.encode(), b) {
			t.Errorf("verdict %+v does not encode back", got)
		}
		if got, err := parseSavedState(b); err == nil && !bytes.Equal(got.encode(), b) {
			t.Errorf("saved state does not encode back")
		}
		for _, size := range []int64{0, 3} {
			if got, err := parseManifest(b, size); err == nil && !bytes.Equal(encodeManifest(got), b) {
				t.Errorf("manifest does not encode back")
			}
		}
	})
}
