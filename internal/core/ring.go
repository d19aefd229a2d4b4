package core

// ring is a FIFO queue that grows to its high-water mark and then
// allocates nothing. The core keeps events, retransmissions, timers and
// pending control packets in rings. It starts small: a connection holds
// several, most of which never hold more than a few items.
type ring[T any] struct {
	buf        []T
	head, size int
}

func (q *ring[T]) len() int { return q.size }

func (q *ring[T]) push(v T) {
	if q.size == len(q.buf) {
		nb := make([]T, max(4, 2*len(q.buf)))
		for i := range q.size {
			nb[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = nb, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = v
	q.size++
}

// peek returns a pointer to the oldest element; the queue must not be empty.
func (q *ring[T]) peek() *T { return &q.buf[q.head] }

func (q *ring[T]) pop() (T, bool) {
	var zero T
	if q.size == 0 {
		return zero, false
	}
	v := q.buf[q.head]
	q.buf[q.head] = zero
	q.head++
	if q.head == len(q.buf) {
		q.head = 0
	}
	q.size--
	return v, true
}

func (q *ring[T]) clear() {
	for q.size > 0 {
		q.pop()
	}
}
