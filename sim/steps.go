package sim

import (
	"github.com/sdrnet/sdrnet/internal/core"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// stepTracker plays a collective library's part for flows that name a
// step: it declares each step to the receivers' endpoints (how many of the
// step's flows each receives) and, once every flow of a step still missing
// goes to one receiver, tells that receiver the step waits on it.
type stepTracker struct {
	// per step: flows not yet arrived, per receiving host
	left map[int]map[int]int
	// per step and host: the flows it receives, for BeginStep
	receives map[int]map[int]int
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
// receiver, that receiver is told the step waits on it.
func (st *stepTracker) arrived(t *topology.Topology, f Flow) {
	if f.Step <= 0 {
		return
	}
	left := st.left[f.Step]
	if left[f.Dst]--; left[f.Dst] == 0 {
		delete(left, f.Dst)
	}
	if len(left) != 1 {
		return
	}
	for host := range left { // the only one
		t.Hosts[host].EP.StepWaiting(uint32(f.Step))
	}
}
