package core

// A connection makes its message slots as its sequence numbers first
// reach them, up to MaxMsgs, rather than all at once: one that carries a
// few messages (a collective's connection to each peer) holds a few
// slots, where MaxMsgs of them cost about a kilobyte each. Up to
// smallSlots they grow one at a time, to fit; beyond, they double. Until slot
// i is made it is free and holds message 0, as a slot made at once would
// be, so the protocol cannot tell. Slots grow only where the application
// hands in a message (PostRecv, Send) or a grant arrives for one to come,
// when no pointer into them is held. A datagram peer's slots are leased
// whole (datagram.go).

const smallSlots = 16

// grown returns slots with room for slot i, of at most most.
func grown[T any](slots []T, i uint32, most int) []T {
	if int(i) < len(slots) {
		return slots
	}
	n := int(i) + 1
	if n > smallSlots {
		n = max(n, 2*len(slots))
	}
	out := make([]T, min(n, most))
	copy(out, slots)
	return out
}

// reach makes the receive slot of message seq.
func (r *receiver) reach(seq uint32) {
	if r.slots == nil {
		r.useSlots()
	}
	if i := seq & r.c.slotMask; int(i) >= len(r.slots) {
		r.slots = grown(r.slots, i, r.c.cfg.MaxMsgs)
		r.sizeDue()
	}
}

// reach makes the send slot of message seq.
func (s *sender) reach(seq uint32) {
	if s.slots == nil {
		s.useSlots()
	}
	s.slots = grown(s.slots, seq&s.c.slotMask, s.c.cfg.MaxMsgs)
}

// grantFor returns the grant kept for message id's slot, made if need be.
func (s *sender) grantFor(slot uint16) *grant {
	if s.slots == nil {
		s.useSlots()
	}
	s.grants = grown(s.grants, uint32(slot), s.c.cfg.MaxMsgs)
	return &s.grants[slot]
}

// pool keeps objects given back for reuse, buffers and all: the state of
// messages under way, which an endpoint needs only as many of as it has
// messages in flight at once.
type pool[T any] []*T

// take returns an object given back, or a new one.
func (p *pool[T]) take() *T {
	n := len(*p)
	if n == 0 {
		return new(T)
	}
	x := (*p)[n-1]
	*p = (*p)[:n-1]
	return x
}

// put gives x back.
func (p *pool[T]) put(x *T) { *p = append(*p, x) }
