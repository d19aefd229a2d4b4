package linkem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Side names one end of a Tunnel.
type Side int

const (
	SideA Side = iota // the client side: forward is A to B
	SideB             // the target side: reverse is B to A
)

// The tunnel's addresses: RFC 2544 benchmarking space, only ever
// configured inside the tunnel's own namespaces.
var (
	TunnelAddrA = netip.MustParseAddr("198.18.0.1")
	TunnelAddrB = netip.MustParseAddr("198.18.0.2")
)

// TunnelMTU is the MTU of the tunnel's devices.
const TunnelMTU = 1500

const tunDevice = "linkem0"

var tunnelSeq atomic.Uint64

// Tunnel joins two new network namespaces, A and B, through the same
// impairments as a Proxy, so the kernel's own TCP (or anything else) can
// cross them. Each namespace has a loopback and one TUN device, linkem0,
// with address TunnelAddrA or TunnelAddrB; the tunnel's goroutines move IP
// packets between the two devices. Nothing is routed anywhere else.
//
// Paths are keyed by the A side's port: a TCP or UDP flow from or to port
// P in namespace A is the path of client port P (port[P] in a spec; path
// indexes count in order of first packet), forward from A to B, reverse
// from B to A. Packets without ports (ICMP, fragments) share port 0.
//
// It needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN), /dev/net/tun and the
// ip command; TunnelSupported says whether it can work here.
type Tunnel struct {
	cfg    Config
	ns     [2]string   // namespace names, for ip netns exec
	tun    [2]*os.File // by side
	start  time.Time
	done   chan struct{}
	fwd    engine
	rev    engine
	maxDgm int

	mu       sync.Mutex
	closed   bool
	byPort   map[int]*path
	paths    []*path
	shared   *[2]*shaper // Config.Shared's buckets; nil otherwise
	wg       sync.WaitGroup
	once     sync.Once
	closeErr error
	rejected atomic.Uint64
}

// TunnelSupported returns nil when a Tunnel can be made here, or why not.
func TunnelSupported() error {
	if os.Geteuid() != 0 {
		return errors.New("linkem: tunnel needs root")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		return fmt.Errorf("linkem: tunnel needs /dev/net/tun: %w", err)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("linkem: tunnel needs the ip command: %w", err)
	}
	if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err != nil {
		return fmt.Errorf("linkem: ip netns unavailable: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// NewTunnel creates the two namespaces and their devices and starts
// moving packets between them. The tunnel's clock, against which
// Impairment.Down windows count, starts now.
func NewTunnel(cfg Config) (*Tunnel, error) {
	if err := TunnelSupported(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := tunnelSeq.Add(1)
	t := &Tunnel{
		cfg:    cfg,
		done:   make(chan struct{}),
		byPort: make(map[int]*path),
		shared: sharedShapers(&cfg),
		maxDgm: orDefault(cfg.MaxDatagram, DefaultMaxDatagram),
	}
	for side, name := range []string{"a", "b"} {
		t.ns[side] = fmt.Sprintf("linkem-%d-%d-%s", os.Getpid(), n, name)
	}
	if err := t.setup(); err != nil {
		t.teardown()
		return nil, err
	}
	t.start = time.Now()
	t.run()
	return t, nil
}

// setup creates the namespaces and their devices.
func (t *Tunnel) setup() error {
	addrs := [2]netip.Addr{TunnelAddrA, TunnelAddrB}
	for side := range 2 {
		if err := ip("netns", "add", t.ns[side]); err != nil {
			t.ns[side] = "" // not ours to delete
			return err
		}
		var fd int
		if err := inNetns(t.ns[side], func() (err error) {
			if fd, err = openTun(tunDevice); err != nil {
				return err
			}
			// IPv4 only: no router solicitations and such crossing over.
			_ = os.WriteFile("/proc/sys/net/ipv6/conf/"+tunDevice+"/disable_ipv6", []byte("1"), 0)
			return nil
		}); err != nil {
			return fmt.Errorf("linkem: tun device in %s: %w", t.ns[side], err)
		}
		t.tun[side] = os.NewFile(uintptr(fd), "/dev/net/tun")
		for _, args := range [][]string{
			{"-n", t.ns[side], "link", "set", "lo", "up"},
			{"-n", t.ns[side], "addr", "add", addrs[side].String() + "/30", "dev", tunDevice},
			{"-n", t.ns[side], "link", "set", tunDevice, "mtu", fmt.Sprint(TunnelMTU), "up"},
		} {
			if err := ip(args...); err != nil {
				return err
			}
		}
	}
	return nil
}

// run starts the engines and readers.
func (t *Tunnel) run() {
	maxInFlight := orDefault(t.cfg.MaxInFlight, DefaultMaxInFlight)
	grid := int64(orDefault(t.cfg.TimerGranularity, DefaultTimerGranularity))
	t.fwd = engine{
		start: t.start, in: make(chan *batch, engineQueue), done: t.done,
		maxDatagram: t.maxDgm, maxInFlight: maxInFlight, grid: grid,
		classify: func(b *batch, i int) *link { return t.classify(b, i, forward) },
		write:    func(due []pending) { t.write(SideB, due) },
		newWaker: newWaker,
	}
	t.rev = engine{
		start: t.start, in: make(chan *batch, engineQueue), done: t.done,
		maxDatagram: t.maxDgm, maxInFlight: maxInFlight, grid: grid,
		classify: func(b *batch, i int) *link { return t.classify(b, i, reverse) },
		write:    func(due []pending) { t.write(SideA, due) },
		newWaker: newWaker,
	}
	t.wg.Add(4)
	go func() { defer t.wg.Done(); t.fwd.run() }()
	go func() { defer t.wg.Done(); t.rev.run() }()
	go t.read(SideA, &t.fwd)
	go t.read(SideB, &t.rev)
}

// ip runs the ip command, returning its output in the error.
func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("linkem: ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// openTun creates a TUN device (IP packets, no packet information header)
// in the calling thread's namespace and returns its non-blocking fd.
func openTun(name string) (int, error) {
	fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	ifr, err := unix.NewIfreq(name)
	if err == nil {
		ifr.SetUint16(unix.IFF_TUN | unix.IFF_NO_PI)
		err = unix.IoctlIfreq(fd, unix.TUNSETIFF, ifr)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// inNetns runs f on an OS thread moved into the named namespace. Sockets
// and devices f creates belong to that namespace for good; goroutines f
// starts do not run in it.
func inNetns(name string, f func() error) error {
	target, err := os.Open("/run/netns/" + name)
	if err != nil {
		return err
	}
	defer target.Close()
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer orig.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("setns %s: %w", name, err)
	}
	ferr := f()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// Leave the thread locked: it ends with this goroutine rather
		// than run others in the wrong namespace.
		return fmt.Errorf("setns back from %s: %w", name, err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// Do runs f in namespace side, on a thread of its own, so sockets f
// creates (net.Listen, net.Dial) live in that namespace.
func (t *Tunnel) Do(side Side, f func() error) error {
	errc := make(chan error, 1)
	go func() { errc <- inNetns(t.ns[side], f) }()
	return <-errc
}

// SetMTU sets the MTU of side's tunnel device (TunnelMTU until then):
// the largest IP packet the kernel sends through it unfragmented.
func (t *Tunnel) SetMTU(side Side, mtu int) error {
	return ip("-n", t.ns[side], "link", "set", tunDevice, "mtu", fmt.Sprint(mtu))
}

// Namespace returns the name of side's namespace, for ip netns exec.
func (t *Tunnel) Namespace(side Side) string { return t.ns[side] }

// Addr returns side's address.
func (t *Tunnel) Addr(side Side) netip.Addr {
	if side == SideA {
		return TunnelAddrA
	}
	return TunnelAddrB
}

// Started returns the tunnel's time origin.
func (t *Tunnel) Started() time.Time { return t.start }

// Stats returns the counters so far; Client is the A side's address and
// port of each path.
func (t *Tunnel) Stats() Stats {
	t.mu.Lock()
	paths := append([]*path(nil), t.paths...)
	t.mu.Unlock()
	return collectStats(paths, t.rejected.Load(), &t.fwd, &t.rev)
}

// Close stops the tunnel and deletes its namespaces (and so its devices
// and any sockets still in them stop working).
func (t *Tunnel) Close() error {
	t.once.Do(func() {
		t.mu.Lock()
		t.closed = true
		close(t.done)
		t.mu.Unlock()
		t.closeErr = t.teardown()
		t.wg.Wait()
	})
	return t.closeErr
}

// teardown closes the devices and deletes the namespaces.
func (t *Tunnel) teardown() error {
	var errs []error
	for side := range 2 {
		if t.tun[side] != nil {
			errs = append(errs, t.tun[side].Close())
		}
		if t.ns[side] != "" {
			errs = append(errs, ip("netns", "del", t.ns[side]))
		}
	}
	return errors.Join(errs...)
}

// read feeds an engine with the packets side's device sends.
func (t *Tunnel) read(side Side, e *engine) {
	defer t.wg.Done()
	rc, err := t.tun[side].SyscallConn()
	if err != nil {
		return
	}
	home := make(chan *batch, frontBatches)
	for range frontBatches {
		home <- newBatch(frontBatchLen, t.maxDgm+1, 0, home)
	}
	for {
		var b *batch
		select {
		case b = <-home:
		case <-t.done:
			return
		}
		n := 0
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			for n < len(b.msgs) {
				m, err := unix.Read(int(fd), b.msgs[n].Buffers[0])
				switch {
				case err == unix.EINTR:
					continue
				case err == unix.EAGAIN:
					return n > 0 // wait for more unless some came
				case err != nil:
					rerr = err
					return true
				}
				b.msgs[n].N = m
				n++
			}
			return true
		})
		if err != nil || (rerr != nil && n == 0) {
			home <- b
			if err != nil {
				return // closed
			}
			time.Sleep(time.Millisecond)
			continue
		}
		b.n = n
		stampArrivals(b, e.start, false)
		select {
		case e.in <- b:
		case <-t.done:
			return
		}
	}
}

// classify finds, or creates, the path of an IP packet.
func (t *Tunnel) classify(b *batch, i, dir int) *link {
	port := aSidePort(b.msgs[i].Buffers[0][:b.msgs[i].N], dir == forward)
	t.mu.Lock()
	defer t.mu.Unlock()
	pa := t.byPort[port]
	if pa == nil {
		if t.closed || len(t.paths) >= orDefault(t.cfg.MaxPaths, DefaultMaxPaths) {
			t.rejected.Add(1)
			return nil
		}
		pa = newPath(&t.cfg, len(t.paths), netip.AddrPortFrom(TunnelAddrA, uint16(port)), t.shared)
		t.paths = append(t.paths, pa)
		t.byPort[port] = pa
	}
	return pa.links[dir]
}

// aSidePort returns the TCP or UDP port of an IP packet on the A side: the
// source port of a packet from A, the destination port of one to A; 0 for
// packets without ports.
func aSidePort(pkt []byte, fromA bool) int {
	if len(pkt) < 1 {
		return 0
	}
	var proto byte
	var l4 []byte
	switch pkt[0] >> 4 {
	case 4:
		ihl := int(pkt[0]&0x0f) * 4
		if len(pkt) < 20 || ihl < 20 || len(pkt) < ihl || binary.BigEndian.Uint16(pkt[6:])&0x1fff != 0 {
			return 0 // short, or a fragment after the first
		}
		proto, l4 = pkt[9], pkt[ihl:]
	case 6:
		if len(pkt) < 40 {
			return 0
		}
		proto, l4 = pkt[6], pkt[40:] // extension headers: no ports
	default:
		return 0
	}
	if (proto != syscall.IPPROTO_TCP && proto != syscall.IPPROTO_UDP) || len(l4) < 4 {
		return 0
	}
	if fromA {
		return int(binary.BigEndian.Uint16(l4))
	}
	return int(binary.BigEndian.Uint16(l4[2:]))
}

// write sends due packets into side's device.
func (t *Tunnel) write(side Side, due []pending) {
	rc, err := t.tun[side].SyscallConn()
	if err != nil {
		return
	}
	i := 0
	_ = rc.Write(func(fd uintptr) bool {
		for i < len(due) {
			st := &due[i].link.stats
			_, err := unix.Write(int(fd), due[i].buf)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return false // wait until writable
			case err != nil:
				st.writeErrors.Add(1)
			default:
				st.forwarded.Add(1)
				st.forwardedBytes.Add(uint64(len(due[i].buf)))
			}
			i++
		}
		return true
	})
}
