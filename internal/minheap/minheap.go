// Package minheap is a binary min-heap kept in a caller's slice: the
// timer queues of the protocol core and of the link emulator. The slice
// is the caller's, so a heap that has grown to its peak allocates nothing
// more.
package minheap

// Item is an element of a heap: a.Before(b) puts a nearer the top.
type Item[T any] interface{ Before(T) bool }

// Push adds x to the heap h.
func Push[T Item[T]](h *[]T, x T) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		up := (i - 1) / 2
		if !s[i].Before(s[up]) {
			break
		}
		s[up], s[i] = s[i], s[up]
		i = up
	}
}

// Pop removes and returns the least element of h, which must not be
// empty. The slot it leaves is zeroed, so the heap holds no reference to
// what it gave back.
func Pop[T Item[T]](h *[]T) T {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	var zero T
	s[last] = zero
	s = s[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < last && s[l].Before(s[least]) {
			least = l
		}
		if r < last && s[r].Before(s[least]) {
			least = r
		}
		if least == i {
			break
		}
		s[i], s[least] = s[least], s[i]
		i = least
	}
	*h = s
	return top
}
