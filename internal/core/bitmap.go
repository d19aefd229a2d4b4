package core

import "math/bits"

// bitset is a growable set of small integers, reused across messages so a
// steady stream of messages allocates nothing.
type bitset []uint64

// reset makes b an empty set of n bits, reusing its storage.
func (b *bitset) reset(n uint32) {
	w := int((uint64(n) + 63) / 64)
	if cap(*b) < w {
		*b = make(bitset, w)
		return
	}
	*b = (*b)[:w]
	clear(*b)
}

func (b bitset) test(i uint32) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) set(i uint32)       { b[i/64] |= 1 << (i % 64) }
func (b bitset) clear(i uint32)     { b[i/64] &^= 1 << (i % 64) }

// nextClear returns the first clear bit at or after i, or n if none is
// below n.
func (b bitset) nextClear(i, n uint32) uint32 {
	for i < n {
		w := ^b[i/64] >> (i % 64)
		if w != 0 {
			return min(i+uint32(bits.TrailingZeros64(w)), n)
		}
		i = (i/64 + 1) * 64
	}
	return n
}

// nextSet returns the first set bit at or after i, or n if none is below n.
func (b bitset) nextSet(i, n uint32) uint32 {
	for i < n {
		w := b[i/64] >> (i % 64)
		if w != 0 {
			return min(i+uint32(bits.TrailingZeros64(w)), n)
		}
		i = (i/64 + 1) * 64
	}
	return n
}

// Bitmap is a read-only view of a receive bitmap: bit i says unit i (a
// chunk, or a packet of an expanded chunk) arrived whole. It aliases the
// connection's state and is valid until the receive is completed.
type Bitmap struct {
	words []uint64
	off   uint32 // bit offset of unit 0 in words
	n     uint32
}

// Len returns the number of units.
func (m Bitmap) Len() int { return int(m.n) }

// Test reports whether unit i arrived. It is false for i out of range.
func (m Bitmap) Test(i int) bool {
	if i < 0 || uint32(i) >= m.n {
		return false
	}
	j := m.off + uint32(i)
	return m.words[j/64]&(1<<(j%64)) != 0
}

// Count returns the number of units that arrived.
func (m Bitmap) Count() int {
	c := 0
	for i := uint32(0); i < m.n; {
		j := m.off + i
		w := m.words[j/64] >> (j % 64)
		take := min(64-j%64, m.n-i)
		if take < 64 {
			w &= 1<<take - 1
		}
		c += bits.OnesCount64(w)
		i += take
	}
	return c
}

// word returns the first 64 units as a word, unit 0 in bit 0.
func (m Bitmap) word() uint64 { return m.wordAt(0) }

// wordAt returns units [from, from+64) as a word, unit from in bit 0;
// units past the end are zero.
func (m Bitmap) wordAt(from uint32) uint64 {
	var w uint64
	end := min(m.n, from+64)
	for i := from; i < end; {
		j := m.off + i
		take := min(64-j%64, end-i)
		part := m.words[j/64] >> (j % 64)
		if take < 64 {
			part &= 1<<take - 1
		}
		w |= part << (i - from)
		i += take
	}
	return w
}

// AppendWords appends the units to dst as words, unit 0 in bit 0 of the
// first, and returns the extended slice: a copy that outlives the receive.
func (m Bitmap) AppendWords(dst []uint64) []uint64 {
	for i := uint32(0); i < m.n; i += 64 {
		dst = append(dst, m.wordAt(i))
	}
	return dst
}

// All reports whether every unit arrived.
func (m Bitmap) All() bool { return m.Count() == int(m.n) }

// String renders the bitmap as 0s and 1s, unit 0 first.
func (m Bitmap) String() string {
	b := make([]byte, m.n)
	for i := range b {
		b[i] = '0'
		if m.Test(i) {
			b[i] = '1'
		}
	}
	return string(b)
}
