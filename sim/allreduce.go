package sim

import (
	"bytes"
	"fmt"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/sim/hostmodel"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// AllReduceConfig is a ring AllReduce among the first Hosts hosts of a
// topology, in index order: each of 2(N-1) steps sends one segment of
// Size/N bytes to the next host, and a host starts a step once it has the
// previous step's segment. Count collectives run one after another.
type AllReduceConfig struct {
	Hosts   int
	Size    int // bytes per host
	Count   int
	Scheme  reliability.Scheme
	Core    core.Config
	Limit   monotime.Duration
	Virtual bool
}

// AllReduceResult is what an AllReduce run measured.
type AllReduceResult struct {
	Completions []monotime.Duration // per collective
	// BusBandwidth is NCCL's bus bandwidth of the mean collective, bits/s:
	// size/time * 2(N-1)/N.
	BusBandwidth float64
	Stats        TransferStats
}

type ringMember struct {
	host       *hostmodel.Host
	next, prev *core.Conn
	base       uint32 // receive handle of step 0 in this collective
	got        []bool // steps received in this collective
	step       int    // how many
	sent       int    // steps sent in this collective
	bufs       [][]byte
}

// RunAllReduce runs the collective on t and checks every segment that
// carries bytes.
func RunAllReduce(t *topology.Topology, cfg AllReduceConfig) (AllReduceResult, error) {
	n := cfg.Hosts
	if n < 2 || n > len(t.Hosts) {
		return AllReduceResult{}, fmt.Errorf("allreduce over %d hosts: the topology has %d", n, len(t.Hosts))
	}
	steps := 2 * (n - 1)
	if steps > cfg.Core.MaxMsgs && cfg.Core.MaxMsgs != 0 || steps > core.DefaultMaxMsgs && cfg.Core.MaxMsgs == 0 {
		return AllReduceResult{}, fmt.Errorf("allreduce over %d hosts needs %d receives in flight, more than MaxMsgs", n, steps)
	}
	eng := t.Net.Eng
	seg := (cfg.Size + n - 1) / n
	ccfg := cfg.Core
	ccfg.Scheme = cfg.Scheme
	ring := make([]*ringMember, n)
	for i := range n {
		ring[i] = &ringMember{host: t.Hosts[i]}
	}
	for i := range n {
		j := (i + 1) % n
		a, b, err := hostmodel.Connect(ring[i].host, ring[j].host, uint64(j+1), ccfg)
		if err != nil {
			return AllReduceResult{}, err
		}
		ring[i].next, ring[j].prev = a, b
	}
	var payload []byte
	if !cfg.Virtual {
		payload = make([]byte, seg)
		fillPattern(payload, eng.Rand().Uint64())
		for _, m := range ring {
			m.bufs = make([][]byte, steps)
			for s := range m.bufs {
				m.bufs[s] = make([]byte, seg)
			}
		}
	}
	res := AllReduceResult{}
	var failure error
	var startAt monotime.Time
	finished, iteration := 0, 0

	post := func() {
		for _, m := range ring {
			m.step, m.sent = 0, 0
			m.got = make([]bool, steps)
			for s := range steps {
				var h core.RecvHandle
				var err error
				if cfg.Virtual {
					h, err = m.prev.PostRecvVirtual(seg)
				} else {
					clear(m.bufs[s])
					h, err = m.prev.PostRecv(m.bufs[s])
				}
				if err != nil && failure == nil {
					failure = fmt.Errorf("host %d: post: %w", m.host.ID, err)
				}
				if s == 0 {
					m.base = uint32(h)
				}
			}
			m.host.Wake()
		}
	}
	send := func(m *ringMember) {
		m.sent++
		var err error
		if cfg.Virtual {
			_, err = m.next.SendVirtual(seg, nil)
		} else {
			_, err = m.next.Send(payload)
		}
		if err != nil && failure == nil {
			failure = fmt.Errorf("host %d: send: %w", m.host.ID, err)
		}
	}
	var start func()
	begin := startFunc(func() { start() })
	start = func() {
		startAt = eng.Now()
		finished = 0
		for _, m := range ring {
			send(m)
			m.host.Wake()
		}
	}
	for _, m := range ring {
		m := m
		m.host.Handle = func(h *hostmodel.Host, ev core.Event) {
			switch ev.Kind {
			case core.EventRecvDone:
				if ev.Conn != m.prev {
					return
				}
				step := int(ev.Msg - m.base)
				if step < 0 || step >= steps || m.got[step] {
					return
				}
				m.got[step] = true
				m.step++
				if !cfg.Virtual && !bytes.Equal(m.bufs[step], payload) && failure == nil {
					failure = fmt.Errorf("host %d step %d: segment corrupted", m.host.ID, step)
				}
				if err := m.prev.Complete(core.RecvHandle(ev.Msg)); err != nil && failure == nil {
					failure = err
				}
				// A host forwards step k once it holds step k-1.
				for m.sent < steps && m.got[m.sent-1] {
					send(m)
				}
				if m.step < steps {
					break
				}
				if finished++; finished == n {
					res.Completions = append(res.Completions, eng.Now().Sub(startAt))
					if iteration++; iteration < cfg.Count {
						post()
						eng.After(t.OneWay+4*monotime.Microsecond, begin, 0)
					} else {
						eng.Stop()
					}
				}
			case core.EventRecvFailed, core.EventSendFailed:
				failure = fmt.Errorf("host %d: %v: %w", m.host.ID, ev.Kind, ev.Err)
			}
			if failure != nil {
				eng.Stop()
			}
		}
	}
	post()
	eng.After(t.OneWay+4*monotime.Microsecond, begin, 0)
	limit := cfg.Limit
	if limit == 0 {
		limit = 3600 * monotime.Second
	}
	eng.RunUntil(eng.Now().Add(limit))
	for _, m := range ring {
		res.Stats.add(m.next.Stats(), m.prev.Stats())
	}
	if failure != nil {
		return res, failure
	}
	if len(res.Completions) < cfg.Count {
		return res, fmt.Errorf("only %d of %d collectives completed within %v", len(res.Completions), cfg.Count, limit)
	}
	var sum monotime.Duration
	for _, c := range res.Completions {
		sum += c
	}
	if mean := sum / monotime.Duration(len(res.Completions)); mean > 0 {
		res.BusBandwidth = float64(cfg.Size) * 8 / mean.Seconds() * float64(2*(n-1)) / float64(n)
	}
	return res, nil
}
