package main

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sdrnet/sdrnet/internal/buildinfo"
	"github.com/sdrnet/sdrnet/internal/units"
	"github.com/sdrnet/sdrnet/sdr"
)

// bench's JSON follows iperf3's -J layout (start, intervals, end with
// sum_sent and sum_received) beside sdrnet's own flat fields, so a tool
// that reads iperf3's results reads bench's.

type iperfStart struct {
	Version      string         `json:"version"`
	Timestamp    iperfTimestamp `json:"timestamp"`
	ConnectingTo iperfHost      `json:"connecting_to"`
	TestStart    iperfTestStart `json:"test_start"`
}

type iperfTimestamp struct {
	Time     string `json:"time"`
	Timesecs int64  `json:"timesecs"`
}

type iperfHost struct {
	Host string `json:"host"`
	Port int    `json:"port"`
}

type iperfTestStart struct {
	Protocol   string `json:"protocol"`
	NumStreams int    `json:"num_streams"`
	Blksize    int64  `json:"blksize"` // the message size
	Bytes      int64  `json:"bytes"`
}

// iperfSum is iperf3's sum of an interval or of the whole test. Bytes are
// message bytes the receiver acknowledged (a message counts when its send
// completes).
type iperfSum struct {
	Start         float64 `json:"start"`
	End           float64 `json:"end"`
	Seconds       float64 `json:"seconds"`
	Bytes         int64   `json:"bytes"`
	BitsPerSecond float64 `json:"bits_per_second"`
	Retransmits   uint64  `json:"retransmits"` // packets sent again
	Sender        bool    `json:"sender"`
	Messages      int64   `json:"messages"` // sdrnet's: messages completed
	// An interval's: the congestion controller's state as it ended
	// (iperf3's snd_cwnd, and sdrnet's pacing rate, the queueing delay
	// the controller reads and whether it competes); absent without one.
	SndCwnd     int64   `json:"snd_cwnd,omitempty"`
	CCRate      float64 `json:"cc_rate_bps,omitempty"`
	CCQueueUs   float64 `json:"cc_queue_us,omitempty"`
	CCCompeting bool    `json:"cc_competing,omitempty"`
	// An interval's: the sender's rate on the wire (first passes,
	// resends and parity), and how long in it the congestion window, the
	// receiver's grant and --window held it back (bench's busy_s and
	// the rest, per interval).
	SentBps          float64 `json:"sent_bps,omitempty"`
	BusyS            float64 `json:"busy_s,omitempty"`
	WindowLimitedS   float64 `json:"window_limited_s,omitempty"`
	CreditLimitedS   float64 `json:"credit_limited_s,omitempty"`
	InflightLimitedS float64 `json:"inflight_limited_s,omitempty"`
}

type iperfInterval struct {
	Streams []iperfSum `json:"streams"`
	Sum     iperfSum   `json:"sum"`
}

type iperfEnd struct {
	SumSent     iperfSum `json:"sum_sent"`
	SumReceived iperfSum `json:"sum_received"`
}

func newIperfStart(addr string, msgSize, total int64, now time.Time) iperfStart {
	host, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	return iperfStart{Version: "sdrnet " + buildinfo.Version(),
		Timestamp:    iperfTimestamp{Time: now.UTC().Format(time.RFC1123), Timesecs: now.Unix()},
		ConnectingTo: iperfHost{Host: host, Port: port},
		TestStart:    iperfTestStart{Protocol: "SDR/UDP", NumStreams: 1, Blksize: msgSize, Bytes: total}}
}

// intervalMeter counts completed messages and cuts them into intervals.
type intervalMeter struct {
	bytes, msgs atomic.Int64
	stats       func() sdr.Stats // the connection's counters so far

	mu        sync.Mutex
	intervals []iperfInterval
	last      iperfSum  // totals at the last cut
	lastStats sdr.Stats // the connection's counters then
	start     time.Time
	print     io.Writer // text lines as intervals end, or nil
}

func (m *intervalMeter) done(bytes int64) {
	m.bytes.Add(bytes)
	m.msgs.Add(1)
}

// cut closes the interval that ends at now.
func (m *intervalMeter) cut(now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	end := now.Sub(m.start).Seconds()
	s := iperfSum{Start: m.last.End, End: end, Seconds: end - m.last.End, Sender: true,
		Bytes: m.bytes.Load() - m.last.Bytes, Messages: m.msgs.Load() - m.last.Messages}
	st := m.stats()
	retx := st.RetxPackets
	s.Retransmits = retx - m.last.Retransmits
	if s.Seconds <= 0 {
		return
	}
	s.SndCwnd, s.CCRate, s.CCCompeting = st.CC.Window, st.CC.Rate, st.CC.Detail["competing"] != 0
	s.CCQueueUs = float64(st.CC.Queue) / float64(time.Microsecond)
	p := m.lastStats
	s.SentBps = float64(wireBytes(st)-wireBytes(p)) * 8 / s.Seconds
	s.BusyS = (st.Busy - p.Busy).Seconds()
	s.WindowLimitedS = (st.WindowLimited - p.WindowLimited).Seconds()
	s.CreditLimitedS = (st.CreditLimited - p.CreditLimited).Seconds()
	s.InflightLimitedS = (st.InflightLimited - p.InflightLimited).Seconds()
	m.lastStats = st
	s.BitsPerSecond = float64(s.Bytes) * 8 / s.Seconds
	m.intervals = append(m.intervals, iperfInterval{Streams: []iperfSum{s}, Sum: s})
	m.last = iperfSum{End: end, Bytes: m.last.Bytes + s.Bytes, Messages: m.last.Messages + s.Messages, Retransmits: retx}
	if m.print != nil {
		fmt.Fprintf(m.print, "[%6.2f-%6.2f s] %10s %14s %6d messages %6d resent", s.Start, s.End,
			units.FormatSize(s.Bytes), units.FormatRate(s.BitsPerSecond), s.Messages, s.Retransmits)
		if s.SndCwnd > 0 {
			fmt.Fprintf(m.print, "  cwnd %s", units.FormatSize(s.SndCwnd))
		}
		fmt.Fprintln(m.print)
	}
}

// wireBytes is the payload bytes st's sender put on the wire.
func wireBytes(st sdr.Stats) uint64 { return st.DataBytes + st.RetxBytes + st.ParityBytes }

// run cuts an interval every d until stop is closed.
func (m *intervalMeter) run(d time.Duration, stop <-chan struct{}) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			m.cut(now)
		}
	}
}
