package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/sdr"
	"github.com/sdrnet/sdrnet/sdr/transfer"
)

func TestProgressLine(t *testing.T) {
	start := time.Unix(1000, 0)
	stats := func() sdr.Stats {
		var st sdr.Stats
		st.RetxBytes = 3 << 20
		st.Paths = []sdr.PathStats{{State: "up"}, {State: "failed"}, {State: "up"}}
		return st
	}
	p := newProgress(&bytes.Buffer{}, "send", start, stats)
	p.res = transfer.Result{Size: 200 << 20, Moved: 50 << 20, Resumed: 50 << 20}
	// 50 MiB in 2 s is 209.7 Mbit/s; 100 MiB left take 4 s.
	want := "send 100MiB / 200MiB (50%)  209.7Mbit/s  ETA 4s  resumed 50MiB  resent 3MiB  paths 2/3 up"
	if got := p.line(start.Add(2 * time.Second)); got != want {
		t.Errorf("line\n got %q\nwant %q", got, want)
	}
	// Not a terminal: nothing is drawn.
	var out bytes.Buffer
	q := newProgress(&out, "recv", start, nil)
	q.set(transfer.Result{Moved: 1})
	q.done()
	if out.Len() != 0 {
		t.Errorf("drew %q on a non-terminal", out.String())
	}
}
