package network

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/engine"
)

// PFC is priority flow control (IEEE 802.1Qbb) on a switch's ingress
// ports, for one lossless class: data. Control packets (ACK, NACK, CTS)
// travel in a class PFC leaves alone, as RoCE deployments put CNPs and
// acknowledgements in their own priority.
//
// An ingress counts the bytes that came in through it and still wait in
// the switch; above XOff it sends PAUSE to the port feeding it, and at or
// below XOn it sends RESUME. Each frame takes the cable's delay to land.
// What arrives meanwhile (a round trip of the cable, and the frame being
// serialized at either end) goes into the ingress's headroom; data that
// overflows the headroom is dropped and counted, and lossless output ports
// never drop data themselves.
type PFC struct {
	XOff, XOn int // bytes per ingress
	// Headroom per ingress, bytes; zero: sized for its cable (a round
	// trip at the cable's rate plus two jumbo frames).
	Headroom int
	// Watchdog: a port kept paused this long is in a pause storm; the
	// watchdog counts it and lets the port send until the next PAUSE
	// (a switch's "forward" action). Zero: no watchdog.
	Watchdog monotime.Duration
}

// HeadroomFor returns the headroom an ingress on a cable of the given rate
// and one-way delay needs so PFC loses nothing: the bytes the far end may
// still send in a round trip, plus a jumbo frame being sent at each end.
func HeadroomFor(rate float64, delay monotime.Duration) int {
	const jumbo = 9216
	return int(rate/8*(2*delay).Seconds()) + 2*jumbo
}

// PauseStats counts how PFC held one output port back.
type PauseStats struct {
	Pauses        uint64            // PAUSE frames that stopped it
	Paused        monotime.Duration // time spent paused
	WatchdogTrips uint64
}

// Pausable is a port PFC can stop: a switch's Egress or a host's NIC.
type Pausable interface {
	setPaused(on bool)
	pauses() *pauseState
	// PauseStats returns how PFC held the port back, with its paused
	// time up to now.
	PauseStats(now monotime.Time) PauseStats
	// SetWatchdog lets a pause last at most d (zero: for ever).
	SetWatchdog(d monotime.Duration)
}

// Event arguments of ports that can be paused, and of an ingress's frames.
const (
	portEvent     = 0 // a Queue's departure, an Egress's arrival
	watchdogEvent = 1
	resumeFrame   = 0
	pauseFrame    = 1
)

// pauseState is a port's side of PFC.
type pauseState struct {
	paused   bool
	since    monotime.Time
	watch    engine.EventID
	Watchdog monotime.Duration
	Pause    PauseStats
}

// set records a pause or a resume and reports whether the state changed;
// h is the port, which gets watchdogEvent if the pause lasts too long.
func (s *pauseState) set(on bool, eng *engine.Engine, h engine.Handler) bool {
	if on == s.paused {
		return false
	}
	s.paused = on
	now := eng.Now()
	if on {
		s.Pause.Pauses++
		s.since = now
		if s.Watchdog > 0 {
			s.watch = eng.At(now.Add(s.Watchdog), h, watchdogEvent)
		}
		return true
	}
	s.Pause.Paused += now.Sub(s.since)
	eng.Cancel(s.watch)
	return true
}

// pauses gives the port's pause state; it makes Egress and Queue, which
// embed it, Pausable.
func (s *pauseState) pauses() *pauseState { return s }

// PauseStats returns the counters with the time paused up to now.
func (s *pauseState) PauseStats(now monotime.Time) PauseStats {
	st := s.Pause
	if s.paused {
		st.Paused += now.Sub(s.since)
	}
	return st
}

// Paused reports whether PFC holds the port now.
func (s *pauseState) Paused() bool { return s.paused }

// SetWatchdog lets a pause last at most d (zero: for ever).
func (s *pauseState) SetWatchdog(d monotime.Duration) { s.Watchdog = d }

// tripWatchdog counts a pause storm and lets the port send.
func tripWatchdog(p Pausable) {
	p.pauses().Pause.WatchdogTrips++
	p.setPaused(false)
}

// pfcState is a switch's PFC: its ingresses and, while any of them is
// pausing its upstream, an event at each departure from the switch, so
// the bytes an ingress holds fall (and RESUME goes out) exactly when
// they leave, although ports account departures lazily.
type pfcState struct {
	cfg      PFC
	pausing  int // ingresses whose upstream is paused
	check    engine.EventID
	checkAt  monotime.Time
	checking bool
}

// EnablePFC turns PFC on for the switch's memory.
func (m *SwitchMemory) EnablePFC(cfg PFC) { m.pfc = &pfcState{cfg: cfg} }

// armCheck makes sure the switch looks at its ingresses no later than t.
func (m *SwitchMemory) armCheck(t monotime.Time) {
	s := m.pfc
	if s.pausing == 0 || t == monotime.Never || (s.checking && s.checkAt <= t) {
		return
	}
	m.net.Eng.Cancel(s.check)
	s.check, s.checkAt, s.checking = m.net.Eng.At(t, m, 0), t, true
}

// OnEvent accounts the departures due now, which may resume upstreams,
// and waits for the next one while any ingress is still pausing.
func (m *SwitchMemory) OnEvent(eng *engine.Engine, _ uint64) {
	m.pfc.checking = false
	m.catchUp()
	m.armCheck(m.nextDeparture())
}

// Ingress is the receiving end of a cable at a switch under PFC.
type Ingress struct {
	mem      *SwitchMemory
	inLine   bool     // control packets are in the data class
	next     Node     // the switch
	up       Pausable // the port feeding this ingress
	upPart   int      // the part up runs in, in a model run in parts
	delay    monotime.Duration
	headroom int
	bytes    int // data that came in here and is still in the switch
	pausing  bool
	// Drops counts data lost to a full headroom.
	Drops uint64
}

// NewIngress is the ingress of a cable into a switch whose ports share
// mem: it hands packets to next (the switch), and pauses the port
// feeding it, delay away, once its data passes the PFC threshold, with
// headroom bytes for what is on the wire; inLine puts control packets
// in the data class.
func NewIngress(mem *SwitchMemory, next Node, delay monotime.Duration, headroom int, inLine bool) *Ingress {
	return &Ingress{mem: mem, next: next, delay: delay, headroom: headroom, inLine: inLine}
}

// Held is the data that came in here and is still in the switch, bytes.
func (in *Ingress) Held() int { return in.bytes }

// SetUpstream names the port feeding the ingress, which its PAUSE
// frames stop.
func (in *Ingress) SetUpstream(p Pausable) { in.up = p }

// Receive accounts p to the ingress and hands it to the switch.
func (in *Ingress) Receive(p *Packet) {
	if p.Control && !in.inLine {
		in.next.Receive(p)
		return
	}
	cfg := &in.mem.pfc.cfg
	if !in.pausing && in.bytes+p.Wire > cfg.XOff {
		in.pausing = true
		in.mem.pfc.pausing++
		in.frame(pauseFrame)
	}
	if in.bytes+p.Wire > cfg.XOff+in.headroom {
		in.Drops++
		in.mem.net.Free(p)
	} else {
		in.bytes += p.Wire
		p.ingress = in
		in.next.Receive(p)
	}
	if in.pausing {
		in.mem.armCheck(in.mem.nextDeparture())
	}
}

// release gives back the bytes of a packet that left the switch.
func (in *Ingress) release(wire int) {
	in.bytes -= wire
	if in.pausing && in.bytes <= in.mem.pfc.cfg.XOn {
		in.pausing = false
		in.mem.pfc.pausing--
		in.frame(resumeFrame)
	}
}

// frame sends a PAUSE or RESUME frame up the cable: it lands a cable's
// delay later, in the upstream port's part.
func (in *Ingress) frame(f uint64) {
	eng := in.mem.net.Eng
	eng.SendTo(in.upPart, eng.Now().Add(in.delay), in, f)
}

// OnEvent lands a PAUSE or RESUME frame at the upstream port (in its part:
// it touches nothing of the ingress's).
func (in *Ingress) OnEvent(_ *engine.Engine, frame uint64) { in.up.setPaused(frame == pauseFrame) }
