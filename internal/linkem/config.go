package linkem

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/sdrnet/sdrnet/internal/lossmodel"
)

// Defaults for the zero values of [Config] and [Impairment].
const (
	// DefaultQueue is the drop-tail queue in front of a token bucket when
	// Impairment.Queue is zero.
	DefaultQueue = 4 << 20
	// DefaultMaxDatagram is the largest datagram forwarded when
	// Config.MaxDatagram is zero; longer ones are dropped.
	DefaultMaxDatagram = 65535
	// DefaultMaxPaths bounds the client source addresses (and so the
	// sockets) when Config.MaxPaths is zero.
	DefaultMaxPaths = 4096
	// DefaultMaxInFlight bounds the bytes one direction holds (delayed or
	// queued) when Config.MaxInFlight is zero.
	DefaultMaxInFlight = 256 << 20
	// DefaultSocketBuffer is the kernel buffer asked for on every socket
	// when Config.SocketBuffer is zero.
	DefaultSocketBuffer = 4 << 20
	// DefaultTimerGranularity is the wake-up grid when
	// Config.TimerGranularity is zero.
	DefaultTimerGranularity = 100 * time.Microsecond
)

// Config describes a proxy's impairments. The zero value forwards every
// datagram at once, untouched, in both directions.
type Config struct {
	// Default applies to every path not listed in Paths or Ports.
	Default Path
	// Paths overrides Default for the paths with these indexes (paths are
	// numbered from 0 in the order their first datagram arrives).
	Paths map[int]Path
	// Ports overrides Default and Paths for the clients with these source
	// ports.
	Ports map[int]Path

	// Seed seeds every random decision. Zero is a seed like any other.
	Seed uint64

	// Shared makes one bottleneck of all paths: every path's datagrams of
	// a direction cross one token bucket and one drop-tail queue, with
	// Default's Rate, Burst and Queue for that direction, so several
	// connections (each path is a client source port) compete for it as
	// flows do for a router's port. Delay, jitter, loss and the rest stay
	// per path. Paths and Ports may not set another Rate, Burst or Queue.
	// Without it each path has a bottleneck of its own.
	Shared bool

	// MaxDatagram is the longest datagram forwarded; zero means
	// DefaultMaxDatagram.
	MaxDatagram int
	// MaxPaths bounds the number of client source addresses; datagrams
	// from further clients are dropped and counted in Stats.Rejected. Zero
	// means DefaultMaxPaths.
	MaxPaths int
	// MaxInFlight bounds the bytes each direction holds; datagrams beyond
	// it are dropped as queue drops. Zero means DefaultMaxInFlight.
	MaxInFlight int64
	// SocketBuffer is the receive and send buffer asked for on every socket
	// (the kernel may cap it). Zero means DefaultSocketBuffer.
	SocketBuffer int
	// TimerGranularity is the grid on which the proxy wakes to send
	// delayed datagrams: a datagram leaves up to this much after its time
	// (never before), and datagrams due in the same step leave together.
	// Finer costs more CPU at high packet rates. Zero means
	// DefaultTimerGranularity; use 1ns for as exact as the OS allows.
	TimerGranularity time.Duration
}

// Path is the impairment of one path, one per direction.
type Path struct {
	Forward Impairment // client to target
	Reverse Impairment // target to client
}

// Both returns a Path that impairs both directions alike.
func Both(im Impairment) Path { return Path{Forward: im, Reverse: im.clone()} }

// Impairment says what happens to the datagrams of one direction of one
// path. The zero value forwards them at once, untouched.
type Impairment struct {
	// Delay is the one-way delay added to every datagram.
	Delay time.Duration
	// Jitter adds a uniformly distributed offset in [-Jitter, +Jitter] to
	// Delay (never going below zero delay). Jitter never reorders: a
	// datagram leaves no earlier than the one before it on the same path
	// and direction, so when datagrams are closer together than the jitter,
	// the spread narrows toward +Jitter. Use Reorder to reorder.
	Jitter time.Duration

	// Rate is the bottleneck in bits per second, a token bucket; zero
	// means unlimited.
	Rate float64
	// Burst is the bucket's depth in bytes; zero means one datagram, so
	// datagrams leave evenly paced. A datagram longer than Burst may leave
	// once the bucket is full.
	Burst int64
	// Queue is how many bytes may wait for the bucket; a datagram that
	// does not fit is dropped (drop tail). Zero means DefaultQueue. Only
	// used with Rate.
	Queue int64

	// Loss is the probability that a datagram is lost, each independently.
	Loss float64
	// LossAt changes Loss for spans of time: a datagram arriving in one of
	// its windows is lost with that window's probability instead (the
	// first window that holds it wins), so a test can make a path lossy
	// for a while and clean again.
	LossAt []LossWindow
	// GE, when GE.P > 0, replaces Loss with a Gilbert-Elliott burst-loss
	// model.
	GE GilbertElliott

	// Reorder is the probability that a datagram is held back a further
	// ReorderDelay, letting later datagrams overtake it.
	Reorder      float64
	ReorderDelay time.Duration

	// Duplicate is the probability that a datagram is delivered twice; the
	// copy leaves right after the original.
	Duplicate float64

	// Down lists the windows, measured from the proxy's start, in which
	// the path is down: a datagram that arrives or would be delivered in a
	// window is dropped.
	Down []Window
}

// GilbertElliott is the burst-loss model of every sdrnet link, applied
// per datagram.
type GilbertElliott = lossmodel.GilbertElliott

// LossWindow is a span of time with its own loss probability.
type LossWindow struct {
	Window
	Loss float64
}

// lossAt is the loss probability at t (time since the proxy started).
func (im *Impairment) lossAt(t time.Duration) float64 {
	for _, w := range im.LossAt {
		if w.contains(t) {
			return w.Loss
		}
	}
	return im.Loss
}

// Window is a span of time since the proxy started, [From, To). A zero To
// means the window never ends.
type Window struct {
	From, To time.Duration
}

// String writes the window as a spec reads it: FROM[-TO].
func (w Window) String() string {
	if w.To == 0 {
		return w.From.String()
	}
	return w.From.String() + "-" + w.To.String()
}

// contains reports whether t is in the window.
func (w Window) contains(t time.Duration) bool {
	return t >= w.From && (w.To == 0 || t < w.To)
}

func (im Impairment) clone() Impairment {
	im.Down = append([]Window(nil), im.Down...)
	im.LossAt = append([]LossWindow(nil), im.LossAt...)
	return im
}

// down reports whether the path is down at t.
func (im *Impairment) down(t time.Duration) bool {
	for _, w := range im.Down {
		if w.contains(t) {
			return true
		}
	}
	return false
}

// path returns the impairments of the path with this index and client port.
func (c *Config) path(index, port int) Path {
	if p, ok := c.Ports[port]; ok {
		return p
	}
	if p, ok := c.Paths[index]; ok {
		return p
	}
	return c.Default
}

func orDefault[T int | int64 | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Validate reports the first value out of range, naming where it is.
func (c *Config) Validate() error {
	if err := c.Default.validate(); err != nil {
		return fmt.Errorf("linkem: default: %w", err)
	}
	if c.Shared {
		for _, sel := range []struct {
			name string
			m    map[int]Path
		}{{"path", c.Paths}, {"port", c.Ports}} {
			for i, p := range sel.m {
				for dir, pair := range [][2]*Impairment{{&p.Forward, &c.Default.Forward}, {&p.Reverse, &c.Default.Reverse}} {
					a, d := pair[0], pair[1]
					if a.Rate != d.Rate || a.Burst != d.Burst || a.Queue != d.Queue {
						return fmt.Errorf("linkem: %s[%d]: %s rate, burst and queue belong to the shared bottleneck (shared=1): set them in the default clause",
							sel.name, i, [...]string{"forward", "reverse"}[dir])
					}
				}
			}
		}
	}
	for i, p := range c.Paths {
		if i < 0 {
			return fmt.Errorf("linkem: path[%d]: negative path index", i)
		}
		if err := p.validate(); err != nil {
			return fmt.Errorf("linkem: path[%d]: %w", i, err)
		}
	}
	for port, p := range c.Ports {
		if port < 0 || port > 65535 {
			return fmt.Errorf("linkem: port[%d]: not a port (0-65535)", port)
		}
		if err := p.validate(); err != nil {
			return fmt.Errorf("linkem: port[%d]: %w", port, err)
		}
	}
	switch {
	case c.MaxDatagram < 0 || c.MaxDatagram > 1<<16:
		return fmt.Errorf("linkem: MaxDatagram %d out of range [0, 65536]", c.MaxDatagram)
	case c.MaxPaths < 0:
		return errors.New("linkem: negative MaxPaths")
	case c.MaxInFlight < 0:
		return errors.New("linkem: negative MaxInFlight")
	case c.SocketBuffer < 0:
		return errors.New("linkem: negative SocketBuffer")
	case c.TimerGranularity < 0:
		return errors.New("linkem: negative TimerGranularity")
	}
	return nil
}

func (p *Path) validate() error {
	if err := p.Forward.validate(); err != nil {
		return fmt.Errorf("forward: %w", err)
	}
	if err := p.Reverse.validate(); err != nil {
		return fmt.Errorf("reverse: %w", err)
	}
	return nil
}

func (im *Impairment) validate() error {
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"delay", im.Delay}, {"jitter", im.Jitter}, {"reorder delay", im.ReorderDelay}} {
		if d.v < 0 {
			return fmt.Errorf("%s %v is negative", d.name, d.v)
		}
	}
	for _, p := range []struct {
		name string
		v    float64
	}{
		{"loss", im.Loss}, {"reorder", im.Reorder}, {"duplicate", im.Duplicate},
		{"GE p", im.GE.P}, {"GE r", im.GE.R}, {"GE loss in bad", im.GE.LossBad}, {"GE loss in good", im.GE.LossGood},
	} {
		if !(p.v >= 0 && p.v <= 1) {
			return fmt.Errorf("%s %v is not a probability in [0, 1]", p.name, p.v)
		}
	}
	switch {
	case !(im.Rate >= 0) || math.IsInf(im.Rate, 0):
		return fmt.Errorf("rate %v is not a finite non-negative number of bits/s", im.Rate)
	case im.Burst < 0:
		return fmt.Errorf("burst %d is negative", im.Burst)
	case im.Queue < 0:
		return fmt.Errorf("queue %d is negative", im.Queue)
	}
	for _, w := range im.Down {
		if w.From < 0 || w.To < 0 || (w.To != 0 && w.To <= w.From) {
			return fmt.Errorf("down window %v-%v: want 0 <= from < to (to 0: forever)", w.From, w.To)
		}
	}
	for _, w := range im.LossAt {
		if w.From < 0 || w.To < 0 || (w.To != 0 && w.To <= w.From) {
			return fmt.Errorf("loss window %v-%v: want 0 <= from < to (to 0: forever)", w.From, w.To)
		}
		if !(w.Loss >= 0 && w.Loss <= 1) {
			return fmt.Errorf("loss window %v-%v: loss %v is not a probability in [0, 1]", w.From, w.To, w.Loss)
		}
	}
	return nil
}
