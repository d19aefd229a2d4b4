package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/sdrnet/sdrnet/internal/units"
	"github.com/sdrnet/sdrnet/sdr"
	"github.com/sdrnet/sdrnet/sdr/transfer"
)

// transferBar draws a transfer's progress line on a terminal, and nothing
// otherwise: bytes, rate, time left, what was resent, and the paths up.
// Our own few lines rather than a progress-bar library: the line's fields
// come from the transport's counters at our cadence, and a library would
// add a dependency to draw one line with \r.
type transferBar struct {
	w      io.Writer
	verb   string
	stats  func() sdr.Stats
	tty    bool
	res    transfer.Result
	start  time.Time
	last   time.Time // of the last draw
	moved  int64     // at the last draw
	rate   float64   // bits per second, smoothed over draws
	drawn  bool
	redraw time.Duration
}

func newProgress(w io.Writer, verb string, start time.Time, stats func() sdr.Stats) *transferBar {
	f, ok := w.(*os.File)
	return &transferBar{w: w, verb: verb, stats: stats, start: start, last: start, redraw: 200 * time.Millisecond,
		tty: ok && term.IsTerminal(int(f.Fd()))}
}

// set records how far the transfer is.
func (p *transferBar) set(r transfer.Result) {
	p.res = r
	if now := time.Now(); p.tty && now.Sub(p.last) >= p.redraw {
		fmt.Fprint(p.w, "\r"+p.line(now)+"\x1b[K") // erase what a longer line left
		p.drawn = true
	}
}

// line is the progress line at now; it advances the rate.
func (p *transferBar) line(now time.Time) string {
	if dt := now.Sub(p.last).Seconds(); dt > 0 {
		r := float64(p.res.Moved-p.moved) * 8 / dt
		if p.rate == 0 {
			p.rate = r
		} else {
			p.rate = 0.7*p.rate + 0.3*r
		}
	}
	p.last, p.moved = now, p.res.Moved
	done := p.res.Moved + p.res.Resumed
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", p.verb, units.FormatSize(done))
	if p.res.Size > 0 {
		fmt.Fprintf(&b, " / %s (%d%%)", units.FormatSize(p.res.Size), 100*done/p.res.Size)
	}
	fmt.Fprintf(&b, "  %s", units.FormatRate(p.rate))
	if p.res.Size > 0 && p.rate > 0 {
		eta := time.Duration(float64(p.res.Size-done) * 8 / p.rate * float64(time.Second))
		fmt.Fprintf(&b, "  ETA %v", eta.Round(100*time.Millisecond))
	}
	if p.res.Resumed > 0 {
		fmt.Fprintf(&b, "  resumed %s", units.FormatSize(p.res.Resumed))
	}
	if p.stats != nil {
		st := p.stats()
		if st.RetxBytes > 0 {
			fmt.Fprintf(&b, "  resent %s", units.FormatSize(int64(st.RetxBytes)))
		}
		if n := len(st.Paths); n > 1 {
			up := 0
			for _, path := range st.Paths {
				if path.State == "up" {
					up++
				}
			}
			fmt.Fprintf(&b, "  paths %d/%d up", up, n)
		}
	}
	return b.String()
}

// done ends the line.
func (p *transferBar) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
