package sim

import (
	"cmp"
	"slices"

	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/sim/engine"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// stepTracker plays a collective library's part for flows that name a
// step: it declares each step to the receivers' endpoints (how many of the
// step's flows each receives) and, once every flow of a step still missing
// goes to one receiver, tells that receiver the step waits on it.
//
// On a topology in parts the receivers are in several, so each part
// records its arrivals and the tracker takes them between windows, in
// order of time and flow; a receiver hears a lookahead after the arrival
// that leaves it alone, as over the network.
type stepTracker struct {
	// per step: flows not yet arrived, per receiving host
	left map[int]map[int]int
	// per step and host: the flows it receives, for BeginStep
	receives map[int]map[int]int
	// in parts: each part's arrivals in the current window
	parts [][]stepArrival
}

// stepArrival is a flow of a step that arrived at t, in a part.
type stepArrival struct {
	t    monotime.Time
	flow int
}

func newStepTracker(flows []Flow) *stepTracker {
	st := &stepTracker{left: map[int]map[int]int{}, receives: map[int]map[int]int{}}
	for _, f := range flows {
		if f.Step <= 0 {
			continue
		}
		if st.left[f.Step] == nil {
			st.left[f.Step], st.receives[f.Step] = map[int]int{}, map[int]int{}
		}
		st.left[f.Step][f.Dst]++
		st.receives[f.Step][f.Dst]++
	}
	return st
}

// tag declares f's step at its receiver, when the endpoint does not know
// it yet, and tags receive h with it.
func (st *stepTracker) tag(ep *core.Endpoint, rx *core.Conn, h core.RecvHandle, f Flow) error {
	id := uint32(f.Step)
	if _, ok := ep.StepProgress(id); !ok {
		ep.BeginStep(id, st.receives[f.Step][f.Dst])
	}
	return rx.StepRecv(h, id)
}

// arrived counts f arrived; when the rest of its step goes to a single
// receiver, that receiver is told the step waits on it. In parts it only
// records the arrival, in the receiver's part, for between.
func (st *stepTracker) arrived(t *topology.Topology, f Flow, i int) {
	if f.Step <= 0 {
		return
	}
	if t.Group != nil {
		eng := t.Hosts[f.Dst].Engine()
		st.parts[eng.Part()] = append(st.parts[eng.Part()], stepArrival{t: eng.Now(), flow: i})
		return
	}
	if host, ok := st.count(f); ok {
		t.Hosts[host].EP.StepWaiting(uint32(f.Step))
	}
}

// inParts readies the tracker for topology t in parts: between windows it
// counts the arrivals the parts recorded.
func (st *stepTracker) inParts(t *topology.Topology, flows []Flow) {
	g := t.Group
	st.parts = make([][]stepArrival, g.Parts())
	var window []stepArrival
	g.Between(func(monotime.Time) {
		window = window[:0]
		for i, p := range st.parts {
			window = append(window, p...)
			st.parts[i] = p[:0]
		}
		slices.SortFunc(window, func(a, b stepArrival) int {
			return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.flow, b.flow))
		})
		for _, a := range window {
			f := flows[a.flow]
			if host, ok := st.count(f); ok {
				g.Part(t.Hosts[host].Engine().Part()).At(a.t.Add(g.Lookahead()), stepWaiting{t.Hosts[host].EP}, uint64(f.Step))
			}
		}
	})
}

// stepWaiting tells a receiver's endpoint that step arg waits on it.
type stepWaiting struct{ ep *core.Endpoint }

func (s stepWaiting) OnEvent(_ *engine.Engine, step uint64) { s.ep.StepWaiting(uint32(step)) }

// count counts f arrived and returns the receiver the rest of its step
// goes to, if it now goes to one.
func (st *stepTracker) count(f Flow) (int, bool) {
	left := st.left[f.Step]
	if left[f.Dst]--; left[f.Dst] == 0 {
		delete(left, f.Dst)
	}
	if len(left) != 1 {
		return 0, false
	}
	for host := range left { // the only one
		return host, true
	}
	return 0, false
}
