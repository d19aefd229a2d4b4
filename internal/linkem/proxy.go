package linkem

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Reader batch shapes: the front socket carries every client's datagrams,
// a path's socket only that path's replies.
const (
	frontBatches, frontBatchLen = 4, 64
	pathBatches, pathBatchLen   = 2, 8
	engineQueue                 = 64 // batches waiting for an engine
)

// Proxy forwards datagrams between clients and one target, impairing them
// as its Config says. Create it with Listen; stop it with Close.
type Proxy struct {
	cfg         Config
	front       *net.UDPConn
	frontBatch  batchConn
	target      *net.UDPAddr
	targetIP    netip.Addr // unmapped, to recognize replies from any of its ports
	start       time.Time
	done        chan struct{}
	maxDatagram int
	maxPaths    int
	sockBuf     int

	fwd, rev engine
	shared   *[2]*shaper // Config.Shared's buckets; nil otherwise

	// Owned by the forward engine.
	byAddr  map[netip.AddrPort]*path
	touched []*path

	// Owned by the reverse engine.
	revMsgs  []message
	revBufs  [][]byte
	revLinks []*link

	mu        sync.Mutex // guards closed and paths
	closed    bool
	paths     []*path
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	rejected  atomic.Uint64
	foreign   atomic.Uint64 // datagrams to a path's socket from another host
}

// path is one client source address and the proxy's socket toward the
// target on its behalf.
type path struct {
	index  int
	client netip.AddrPort
	local  netip.AddrPort // the proxy's socket toward the target
	addr   *net.UDPAddr   // the client, as the front socket writes to it
	conn   *net.UDPConn   // unconnected: writes go to the target, replies come from any of its ports
	batch  batchConn
	links  [2]*link // by direction

	// Forward engine scratch: this path's datagrams in the current write.
	out     []message
	outBufs [][]byte
	outLen  []int
	queued  bool
}

// Listen starts a proxy that receives on listen (host:port; port 0 picks
// a free one, see Addr) and forwards to target. The proxy's clock, against
// which Impairment.Down windows are measured, starts now.
func Listen(listen, target string, cfg Config) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	la, err := net.ResolveUDPAddr("udp", listen)
	if err != nil {
		return nil, fmt.Errorf("linkem: listen address: %w", err)
	}
	ta, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		return nil, fmt.Errorf("linkem: target address: %w", err)
	}
	front, err := net.ListenUDP("udp", la)
	if err != nil {
		return nil, fmt.Errorf("linkem: %w", err)
	}
	p := &Proxy{
		cfg:         cfg,
		front:       front,
		frontBatch:  newBatchConn(front),
		target:      ta,
		targetIP:    ta.AddrPort().Addr().Unmap(),
		start:       time.Now(),
		done:        make(chan struct{}),
		maxDatagram: orDefault(cfg.MaxDatagram, DefaultMaxDatagram),
		maxPaths:    orDefault(cfg.MaxPaths, DefaultMaxPaths),
		sockBuf:     orDefault(cfg.SocketBuffer, DefaultSocketBuffer),
		byAddr:      make(map[netip.AddrPort]*path),
		shared:      sharedShapers(&cfg),
	}
	setBuffers(front, p.sockBuf)
	maxInFlight := orDefault(cfg.MaxInFlight, DefaultMaxInFlight)
	grid := int64(orDefault(cfg.TimerGranularity, DefaultTimerGranularity))
	p.fwd = engine{
		start: p.start, in: make(chan *batch, engineQueue), done: p.done,
		maxDatagram: p.maxDatagram, maxInFlight: maxInFlight, grid: grid,
		classify: p.classifyForward, write: p.writeForward, newWaker: newWaker,
	}
	p.rev = engine{
		start: p.start, in: make(chan *batch, engineQueue), done: p.done,
		maxDatagram: p.maxDatagram, maxInFlight: maxInFlight, grid: grid,
		classify: p.classifyReverse,
		write:    p.writeReverse,
		newWaker: newWaker,
	}
	p.wg.Add(3)
	go func() { defer p.wg.Done(); p.fwd.run() }()
	go func() { defer p.wg.Done(); p.rev.run() }()
	go p.read(front, p.frontBatch, &p.fwd, nil, frontBatches, frontBatchLen)
	return p, nil
}

func newBatchConn(c *net.UDPConn) batchConn {
	if a, ok := c.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() != nil {
		return ipv4.NewPacketConn(c)
	}
	return ipv6.NewPacketConn(c)
}

// Addr returns the address clients send to.
func (p *Proxy) Addr() *net.UDPAddr { return p.front.LocalAddr().(*net.UDPAddr) }

// Target returns the address the proxy forwards to.
func (p *Proxy) Target() *net.UDPAddr { return p.target }

// Started returns the proxy's time origin: Impairment.Down windows count
// from it.
func (p *Proxy) Started() time.Time { return p.start }

// Config returns the configuration the proxy runs.
func (p *Proxy) Config() Config { return p.cfg }

// Close stops the proxy: it closes every socket, drops the datagrams still
// held and waits for its goroutines to end. It is safe to call more than
// once.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		close(p.done)
		p.closeErr = p.front.Close()
		for _, pa := range p.paths {
			pa.conn.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p.closeErr
}

// read feeds an engine with batches read from c until c is closed.
func (p *Proxy) read(conn *net.UDPConn, c batchConn, e *engine, from *path, batches, perBatch int) {
	defer p.wg.Done()
	oob := 0
	if enableRxTimestamps(conn) {
		oob = oobLen
	}
	home := make(chan *batch, batches)
	for range batches {
		home <- newBatch(perBatch, p.maxDatagram+1, oob, home) // +1 detects longer datagrams
	}
	errs := 0
	for {
		var b *batch
		select {
		case b = <-home:
		case <-p.done:
			return
		}
		n, err := c.ReadBatch(b.msgs, 0)
		if err != nil {
			home <- b
			if isClosed(err) {
				return
			}
			// ICMP errors (ECONNREFUSED) surface on reads; go on, but do
			// not spin on an error that persists.
			if errs++; errs > 16 {
				select {
				case <-time.After(time.Millisecond):
				case <-p.done:
					return
				}
			}
			continue
		}
		errs = 0
		b.n, b.from = n, from
		stampArrivals(b, e.start, oob > 0)
		select {
		case e.in <- b:
		case <-p.done:
			return
		}
	}
}

// stampArrivals sets the arrival time of each datagram in b: the kernel's
// receive time when there is one, else now.
func stampArrivals(b *batch, start time.Time, kernel bool) {
	wall := time.Now()
	now := int64(wall.Sub(start)) // monotonic
	for i := range b.n {
		b.ats[i] = now
		if !kernel {
			continue
		}
		if ts, ok := rxTimestamp(b.msgs[i].OOB[:b.msgs[i].NN]); ok {
			// The kernel stamps with the wall clock: take its lag behind
			// now, sanely bounded, off the monotonic clock.
			b.ats[i] = max(now-min(max(wall.UnixNano()-ts, 0), int64(time.Second)), 0)
		}
	}
}

func isClosed(err error) bool { return errors.Is(err, net.ErrClosed) }

// classifyForward finds, or creates, the path of a datagram from a client.
func (p *Proxy) classifyForward(b *batch, i int) *link {
	ua, ok := b.msgs[i].Addr.(*net.UDPAddr)
	if !ok {
		return nil
	}
	ap := ua.AddrPort()
	key := netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
	pa := p.byAddr[key]
	if pa == nil {
		if pa = p.newPath(key, ua); pa == nil {
			p.rejected.Add(1)
			return nil
		}
		p.byAddr[key] = pa
	}
	return pa.links[forward]
}

// classifyReverse takes a reply that arrived on a path's socket through
// that path's reverse link. The socket is not connected, because a
// multipath target (sdrnet recv --paths N) answers from any of its N
// source ports; it takes replies from any port of the target's host, and
// drops what other hosts send it.
func (p *Proxy) classifyReverse(b *batch, i int) *link {
	ua, ok := b.msgs[i].Addr.(*net.UDPAddr)
	if !ok || !p.fromTarget(ua) {
		p.foreign.Add(1)
		return nil
	}
	return b.from.links[reverse]
}

// fromTarget says whether a datagram from a came from the target's host.
func (p *Proxy) fromTarget(a *net.UDPAddr) bool {
	src := a.AddrPort().Addr().Unmap()
	if src == p.targetIP {
		return true
	}
	// A target on the unspecified address (":9000") is this host, reached
	// over loopback, where it answers from.
	return p.targetIP.IsUnspecified() && src.IsLoopback()
}

// newPath opens a socket toward the target for a new client and starts
// reading the target's replies from it. It returns nil when the proxy is
// closed, has MaxPaths paths already, or cannot open a socket.
func (p *Proxy) newPath(client netip.AddrPort, addr *net.UDPAddr) *path {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || len(p.paths) >= p.maxPaths {
		return nil
	}
	conn, err := listenToward(p.target)
	if err != nil {
		return nil
	}
	setBuffers(conn, p.sockBuf)
	index := len(p.paths)
	pa := newPath(&p.cfg, index, client, p.shared)
	pa.addr, pa.conn, pa.batch = addr, conn, newBatchConn(conn)
	if la, ok := conn.LocalAddr().(*net.UDPAddr); ok {
		pa.local = la.AddrPort()
	}
	p.paths = append(p.paths, pa)
	p.wg.Add(1)
	go p.read(conn, pa.batch, &p.rev, pa, pathBatches, pathBatchLen)
	return pa
}

// listenToward opens an unconnected socket on the local address the
// kernel would use to reach target, on a fresh port. A connected socket
// (DialUDP) would be simpler, but the kernel drops every datagram it gets
// from an address other than the one it is connected to, and a multipath
// target replies from several ports. Binding the route's source address,
// rather than the wildcard, keeps the socket's address the one the target
// sees (PathStats.Local).
func listenToward(target *net.UDPAddr) (*net.UDPConn, error) {
	probe, err := net.DialUDP("udp", nil, target) // connect(2) sends nothing
	if err != nil {
		return nil, err
	}
	la, _ := probe.LocalAddr().(*net.UDPAddr)
	probe.Close()
	if la == nil {
		return nil, fmt.Errorf("linkem: no local address toward %v", target)
	}
	return net.ListenUDP("udp", &net.UDPAddr{IP: la.IP, Zone: la.Zone})
}

// newPath makes path number index for a client, with its links. Under
// Config.Shared its links cross shared's buckets (one per direction,
// which the caller keeps for all its paths: see sharedShapers).
func newPath(cfg *Config, index int, client netip.AddrPort, shared *[2]*shaper) *path {
	im := cfg.path(index, int(client.Port()))
	pa := &path{index: index, client: client}
	pa.links[forward] = newLink(im.Forward.clone(), cfg.Seed, index, forward)
	pa.links[reverse] = newLink(im.Reverse.clone(), cfg.Seed, index, reverse)
	for dir, l := range pa.links {
		l.owner = pa
		if cfg.Shared && shared != nil {
			l.bucket = shared[dir]
		}
	}
	return pa
}

// sharedShapers returns the buckets every path shares under
// Config.Shared, the default path's, one per direction; nil otherwise.
func sharedShapers(cfg *Config) *[2]*shaper {
	if !cfg.Shared {
		return nil
	}
	return &[2]*shaper{newShaper(&cfg.Default.Forward), newShaper(&cfg.Default.Reverse)}
}

// writeForward sends due datagrams to the target, each through its path's
// socket, one batch per path.
func (p *Proxy) writeForward(due []pending) {
	for i := range due {
		pa := due[i].link.owner
		if !pa.queued {
			pa.queued = true
			p.touched = append(p.touched, pa)
		}
		pa.outBufs = append(pa.outBufs, due[i].buf)
		pa.outLen = append(pa.outLen, len(due[i].buf))
	}
	for _, pa := range p.touched {
		pa.out = pa.out[:0]
		for k := range pa.outBufs {
			pa.out = append(pa.out, message{Buffers: pa.outBufs[k : k+1 : k+1], Addr: p.target})
		}
		st := &pa.links[forward].stats
		writeAll(pa.batch, pa.out,
			func(k int) { st.forwarded.Add(1); st.forwardedBytes.Add(uint64(pa.outLen[k])) },
			func(int) { st.writeErrors.Add(1) })
		clear(pa.outBufs)
		pa.outBufs, pa.outLen, pa.queued = pa.outBufs[:0], pa.outLen[:0], false
		clear(pa.out)
	}
	clear(p.touched)
	p.touched = p.touched[:0]
}

// writeReverse sends due datagrams to their clients through the front
// socket, in one batch.
func (p *Proxy) writeReverse(due []pending) {
	p.revMsgs, p.revBufs, p.revLinks = p.revMsgs[:0], p.revBufs[:0], p.revLinks[:0]
	for i := range due {
		p.revBufs = append(p.revBufs, due[i].buf)
		p.revLinks = append(p.revLinks, due[i].link)
	}
	for i := range due {
		p.revMsgs = append(p.revMsgs, message{Buffers: p.revBufs[i : i+1 : i+1], Addr: due[i].link.owner.addr})
	}
	writeAll(p.frontBatch, p.revMsgs,
		func(i int) {
			st := &p.revLinks[i].stats
			st.forwarded.Add(1)
			st.forwardedBytes.Add(uint64(len(p.revBufs[i])))
		},
		func(i int) { p.revLinks[i].stats.writeErrors.Add(1) })
	clear(p.revMsgs)
	clear(p.revBufs)
	clear(p.revLinks)
}

// DirStats counts what one direction of a path did.
type DirStats struct {
	Received, ReceivedBytes   uint64 // datagrams and bytes that arrived
	Forwarded, ForwardedBytes uint64 // written out, duplicates included
	DroppedLoss               uint64 // lost by the loss model
	DroppedQueue              uint64 // tail-dropped (queue or MaxInFlight full)
	DroppedFail               uint64 // dropped while the path was down
	DroppedTooBig             uint64 // longer than MaxDatagram
	Duplicated                uint64 // extra copies made
	Reordered                 uint64 // held back by Reorder
	WriteErrors               uint64 // refused by the kernel when written
	// Queued counts the datagrams that crossed a rate limit and went on
	// (not lost after it, nor dropped by a down path; one the engine then
	// drops at MaxInFlight still counts); QueueWait is their summed wait
	// in its queue and bucket, MaxQueueWait the longest: the queueing
	// delay a transport's RTT samples should read.
	Queued                  uint64
	QueueWait, MaxQueueWait time.Duration
}

// MeanQueueWait is the mean of QueueWait over the datagrams queued; zero
// when none were.
func (d DirStats) MeanQueueWait() time.Duration {
	if d.Queued == 0 {
		return 0
	}
	return d.QueueWait / time.Duration(d.Queued)
}

// Dropped returns the datagrams dropped for any reason.
func (d DirStats) Dropped() uint64 {
	return d.DroppedLoss + d.DroppedQueue + d.DroppedFail + d.DroppedTooBig
}

func (d DirStats) add(o DirStats) DirStats {
	return DirStats{
		Received: d.Received + o.Received, ReceivedBytes: d.ReceivedBytes + o.ReceivedBytes,
		Forwarded: d.Forwarded + o.Forwarded, ForwardedBytes: d.ForwardedBytes + o.ForwardedBytes,
		DroppedLoss: d.DroppedLoss + o.DroppedLoss, DroppedQueue: d.DroppedQueue + o.DroppedQueue,
		DroppedFail: d.DroppedFail + o.DroppedFail, DroppedTooBig: d.DroppedTooBig + o.DroppedTooBig,
		Duplicated: d.Duplicated + o.Duplicated, Reordered: d.Reordered + o.Reordered,
		WriteErrors: d.WriteErrors + o.WriteErrors,
		Queued:      d.Queued + o.Queued, QueueWait: d.QueueWait + o.QueueWait,
		MaxQueueWait: max(d.MaxQueueWait, o.MaxQueueWait),
	}
}

// PathStats counts what one path did, in each direction.
type PathStats struct {
	Index            int
	Client           netip.AddrPort // the client's source address
	Local            netip.AddrPort // the proxy's socket toward the target
	Forward, Reverse DirStats
}

// Stats is a snapshot of a proxy's counters.
type Stats struct {
	Paths            []PathStats // by index
	Forward, Reverse DirStats    // sums over the paths
	Rejected         uint64      // datagrams from clients beyond MaxPaths (or no socket)
	// Foreign counts datagrams that reached a path's socket from a host
	// other than the target's; they are dropped.
	Foreign uint64

	// ForwardLate and ReverseLate say how far behind schedule the proxy
	// wrote; much lateness means it is short of CPU.
	ForwardLate, ReverseLate Lateness
}

// Stats returns the counters so far. It may be called at any time, also
// after Close.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	paths := append([]*path(nil), p.paths...)
	p.mu.Unlock()
	s := collectStats(paths, p.rejected.Load(), &p.fwd, &p.rev)
	s.Foreign = p.foreign.Load()
	return s
}

func collectStats(paths []*path, rejected uint64, fwd, rev *engine) Stats {
	s := Stats{Rejected: rejected, ForwardLate: fwd.late.snapshot(), ReverseLate: rev.late.snapshot()}
	for _, pa := range paths {
		ps := PathStats{
			Index:   pa.index,
			Client:  pa.client,
			Local:   pa.local,
			Forward: pa.links[forward].stats.snapshot(),
			Reverse: pa.links[reverse].stats.snapshot(),
		}
		s.Paths = append(s.Paths, ps)
		s.Forward = s.Forward.add(ps.Forward)
		s.Reverse = s.Reverse.add(ps.Reverse)
	}
	return s
}
