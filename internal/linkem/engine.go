package linkem

import (
	"math/bits"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/sdrnet/sdrnet/internal/minheap"
)

// message is one datagram in a batch: golang.org/x/net's Message, which
// ipv4 and ipv6 share.
type message = ipv4.Message

// batchConn reads and writes batches of datagrams: an ipv4.PacketConn or
// ipv6.PacketConn (recvmmsg/sendmmsg on Linux, one at a time elsewhere).
type batchConn interface {
	ReadBatch(ms []message, flags int) (int, error)
	WriteBatch(ms []message, flags int) (int, error)
}

// batch is a set of datagrams read together, handed from a reader to an
// engine and back.
type batch struct {
	msgs []message
	ats  []int64 // arrival times, ns since start
	n    int     // datagrams read into msgs
	from *path   // the path whose socket read it; nil for the front socket
	home chan *batch
}

func newBatch(n, size, oob int, home chan *batch) *batch {
	b := &batch{msgs: make([]message, n), ats: make([]int64, n), home: home}
	for i := range b.msgs {
		b.msgs[i].Buffers = [][]byte{make([]byte, size)}
		if oob > 0 {
			b.msgs[i].OOB = make([]byte, oob)
		}
	}
	return b
}

// pending is a datagram waiting for its departure time.
type pending struct {
	at   int64  // departure, ns since start
	seq  uint64 // arrival order, for FIFO ties
	buf  []byte
	link *link
}

// Before orders the queue of pending datagrams, a heap, by departure
// and then arrival.
func (p pending) Before(q pending) bool { return p.at < q.at || (p.at == q.at && p.seq < q.seq) }

// pool recycles datagram buffers in power-of-two size classes. Only the
// engine goroutine uses it.
type pool struct {
	free [17][][]byte // class k holds buffers of capacity 1<<(k+6)
}

func sizeClass(n int) int { return max(bits.Len(uint(n-1)), 6) - 6 }

func (p *pool) get(n int) []byte {
	c := sizeClass(n)
	if l := len(p.free[c]); l > 0 {
		b := p.free[c][l-1]
		p.free[c] = p.free[c][:l-1]
		return b[:n]
	}
	return make([]byte, n, 1<<(c+6))
}

func (p *pool) put(b []byte) {
	c := sizeClass(cap(b))
	if 1<<(c+6) == cap(b) {
		p.free[c] = append(p.free[c], b)
	}
}

// maxWrite is the most datagrams written in one batch.
const maxWrite = 64

// engine drives one direction: it admits arriving datagrams, holds them
// until their departure time and writes them out. One goroutine runs it.
type engine struct {
	start       time.Time
	in          chan *batch
	done        <-chan struct{}
	maxDatagram int
	maxInFlight int64
	grid        int64 // wake granularity, ns

	// classify returns the link a datagram crosses, or nil to drop it.
	classify func(b *batch, i int) *link
	// write sends due datagrams, all with at <= now, and counts them.
	write func(due []pending)
	// newWaker makes the engine's alarm clock.
	newWaker func() waker

	late lateness

	q        []pending // a heap (minheap)
	seq      uint64
	inFlight int64
	bufs     pool
	due      []pending
}

func (e *engine) now() int64 { return int64(time.Since(e.start)) }

func (e *engine) run() {
	w := e.newWaker()
	defer w.close()
	armed := int64(-1) // the time the waker is armed for
	for {
		e.flush(e.now())
		if len(e.q) > 0 {
			// Wake on a grid: departures close together share one wake and
			// one write, and the timer is reprogrammed far less often
			// (which costs microseconds in a virtual machine).
			if at := (e.q[0].at + e.grid - 1) / e.grid * e.grid; at != armed {
				armed = at
				w.arm(time.Duration(armed - e.now()))
			}
		}
		select {
		case b := <-e.in:
			e.admit(b)
			// Take whatever else is ready before writing.
		more:
			for range cap(e.in) {
				select {
				case b := <-e.in:
					e.admit(b)
				default:
					break more
				}
			}
		case <-w.wake():
			armed = -1
		case <-e.done:
			return
		}
	}
}

// admit decides the fate of every datagram in b and returns b to its
// reader.
func (e *engine) admit(b *batch) {
	for i := range b.n {
		m := &b.msgs[i]
		l := e.classify(b, i)
		if l == nil {
			continue
		}
		if m.N > e.maxDatagram {
			l.stats.received.Add(1)
			l.stats.receivedBytes.Add(uint64(m.N))
			l.stats.dropTooBig.Add(1)
			continue
		}
		at, dup, v := l.admit(b.ats[i], m.N)
		if v != pass {
			continue
		}
		copies := 1
		if dup {
			copies = 2
		}
		for range copies {
			if e.inFlight+int64(m.N) > e.maxInFlight {
				l.stats.dropQueue.Add(1)
				break
			}
			buf := e.bufs.get(m.N)
			copy(buf, m.Buffers[0][:m.N])
			e.seq++
			e.inFlight += int64(m.N)
			minheap.Push(&e.q, pending{at: at, seq: e.seq, buf: buf, link: l})
		}
	}
	b.n = 0
	b.home <- b
}

// flush writes every datagram due by now.
func (e *engine) flush(now int64) {
	for len(e.q) > 0 && e.q[0].at <= now {
		e.due = e.due[:0]
		for len(e.q) > 0 && e.q[0].at <= now && len(e.due) < maxWrite {
			e.due = append(e.due, minheap.Pop(&e.q))
		}
		e.write(e.due)
		e.late.record(now - e.due[0].at) // the earliest is the latest
		for i := range e.due {
			e.inFlight -= int64(len(e.due[i].buf))
			e.bufs.put(e.due[i].buf)
			e.due[i] = pending{}
		}
	}
}

// writeAll writes ms through c, skipping datagrams the kernel refuses, and
// calls sent for each datagram written and failed for each refused. It
// stops early when c is closed.
func writeAll(c batchConn, ms []message, sent, failed func(i int)) {
	for i := 0; i < len(ms); {
		n, err := c.WriteBatch(ms[i:], 0)
		for j := range n {
			sent(i + j)
		}
		i += n
		if err != nil {
			if isClosed(err) {
				return
			}
			if i < len(ms) {
				failed(i)
				i++
			}
		} else if n == 0 {
			for ; i < len(ms); i++ {
				failed(i)
			}
		}
	}
}

// lateness tracks how far behind their departure times datagrams are
// written: a proxy short of CPU falls behind, and this says so.
type lateness struct {
	writes, over100us, over1ms atomic.Uint64
	max                        atomic.Int64
}

// record notes one write whose earliest datagram was late ns late.
func (l *lateness) record(late int64) {
	l.writes.Add(1)
	if late > int64(100*time.Microsecond) {
		l.over100us.Add(1)
	}
	if late > int64(time.Millisecond) {
		l.over1ms.Add(1)
	}
	if late > l.max.Load() {
		l.max.Store(late)
	}
}

func (l *lateness) snapshot() Lateness {
	return Lateness{
		Writes:    l.writes.Load(),
		Over100us: l.over100us.Load(),
		Over1ms:   l.over1ms.Load(),
		Max:       time.Duration(l.max.Load()),
	}
}

// Lateness says how far behind schedule one direction's writes were: how
// many batch writes there were, how many began more than 100 us and 1 ms
// after their earliest datagram was due, and the worst.
type Lateness struct {
	Writes, Over100us, Over1ms uint64
	Max                        time.Duration
}
