package sim

import (
	"fmt"
	"slices"

	"github.com/sdrnet/sdrnet/sim/engine"
)

// Dependencies between flows. A flow waits for the flows its After names,
// with a count of its own. Flows that share one After slice (the same
// array and length) wait for it as a group instead: the run counts each
// part's arrivals of the flows it names once, and each part's waiting
// flows once, so an iteration that waits for the whole previous one costs
// a count per part rather than one per pair of flows (an all-to-all of a
// thousand hosts is a million flows after a million others).

// sharedWait is an After slice that several flows share.
type sharedWait struct {
	// arrivals: per part where flows it names arrive, how many are
	// still to come. A part whose arrivals are all in tells each group.
	arrivals []waitCount
	// groups: the flows that wait for it, per part their senders run in.
	groups []waitGroup
}

// waitCount is what a part has still to see.
type waitCount struct {
	part, left int
}

// waitGroup is the flows of one part that wait for a shared After slice,
// and how many parts have still to say that all their arrivals are in.
type waitGroup struct {
	waitCount
	flows []int // ascending
}

// waitRef is a flow's place in a shared wait: which one, and which of its
// arrival counts the flow's arrival takes from.
type waitRef struct {
	shared, arrival int32
}

// afterKey is an After slice's identity: flows share it when their After
// is the same array with the same length.
type afterKey struct {
	first *int
	n     int
}

func keyOf(after []int) afterKey { return afterKey{&after[0], len(after)} }

// addDependencies fills r's waiting counts, dependents and shared waits
// from the flows' After. Only slices of two flows or more are looked up
// to be shared: a one-flow slice costs a flow one entry either way, and a
// ring's every flow has one.
func (r *flowRun) addDependencies() error {
	flows := r.flows
	users := map[afterKey]int{} // how many flows wait for each slice
	for _, f := range flows {
		if len(f.After) > 1 {
			users[keyOf(f.After)]++
		}
	}
	members := map[afterKey][]int{} // a shared slice's waiting flows, ascending
	var order []afterKey            // the shared slices, by their first flow
	for i, f := range flows {
		if len(f.After) > 1 && users[keyOf(f.After)] > 1 {
			key := keyOf(f.After)
			if members[key] == nil {
				order = append(order, key)
			}
			members[key] = append(members[key], i)
			r.waiting[i]++ // the group's
			continue
		}
		for _, d := range f.After {
			if d < 0 || d >= len(flows) || d == i {
				return fmt.Errorf("flow %d waits for flow %d, which does not exist", i, d)
			}
			r.waiting[i]++
			r.dependents.add(d, i)
		}
	}
	for _, key := range order {
		if err := r.addShared(members[key]); err != nil {
			return err
		}
	}
	r.dependents.build(len(flows))
	r.waitOn.build(len(flows))
	return nil
}

// addShared adds the shared wait of the flows members (ascending), which
// share one After slice.
func (r *flowRun) addShared(members []int) error {
	after := r.flows[members[0]].After
	s := sharedWait{}
	for _, d := range after {
		if d < 0 || d >= len(r.flows) {
			return fmt.Errorf("flow %d waits for flow %d, which does not exist", members[0], d)
		}
		if _, self := slices.BinarySearch(members, d); self {
			return fmt.Errorf("flow %d waits for flow %d, which does not exist", d, d)
		}
		part := r.eng(r.flows[d].Dst).Part()
		a := slices.IndexFunc(s.arrivals, func(c waitCount) bool { return c.part == part })
		if a < 0 {
			a = len(s.arrivals)
			s.arrivals = append(s.arrivals, waitCount{part: part})
		}
		s.arrivals[a].left++
		r.waitOn.add(d, waitRef{shared: int32(len(r.shared)), arrival: int32(a)})
	}
	for _, i := range members {
		part := r.eng(r.flows[i].Src).Part()
		g := slices.IndexFunc(s.groups, func(g waitGroup) bool { return g.part == part })
		if g < 0 {
			g = len(s.groups)
			s.groups = append(s.groups, waitGroup{waitCount: waitCount{part: part, left: len(s.arrivals)}})
		}
		s.groups[g].flows = append(s.groups[g].flows, i)
	}
	r.shared = append(r.shared, s)
	return nil
}

// arrivedFor counts flow f's arrival, on eng, for the flows that wait for
// it: those that name it alone first, then the shared waits.
func (r *flowRun) arrivedFor(eng *engine.Engine, f int) {
	for _, d := range r.dependents.of(f) {
		if part := r.eng(r.flows[d].Src).Part(); part != eng.Part() {
			// A sender in another part hears a lookahead later,
			// as it would over the network.
			eng.SendTo(part, eng.Now().Add(r.t.Group.Lookahead()), (*dependencyMet)(r), uint64(d))
			continue
		}
		r.dependencyMet(d)
	}
	for _, ref := range r.waitOn.of(f) {
		s := &r.shared[ref.shared]
		a := &s.arrivals[ref.arrival]
		if a.left--; a.left > 0 {
			continue
		}
		for g := range s.groups {
			if part := s.groups[g].part; part != eng.Part() {
				eng.SendTo(part, eng.Now().Add(r.t.Group.Lookahead()), (*groupMet)(r), uint64(ref.shared)<<32|uint64(g))
				continue
			}
			r.groupMet(int(ref.shared), g)
		}
	}
}

// dependencyMet counts, at its sender, that a flow flow d waits for
// arrived, and starts d when none is left.
func (r *flowRun) dependencyMet(d int) {
	if r.waiting[d]--; r.waiting[d] == 0 {
		r.startAt(d)
	}
}

// groupMet counts, in group g's part, that one part has seen every
// arrival shared wait s names, and counts it for the group's flows when
// every part has.
func (r *flowRun) groupMet(s, g int) {
	group := &r.shared[s].groups[g]
	if group.left--; group.left > 0 {
		return
	}
	for _, d := range group.flows {
		r.dependencyMet(d)
	}
}

// dependencyMet is flowRun.dependencyMet as an event (arg: the flow), for
// a sender in another part.
type dependencyMet flowRun

func (m *dependencyMet) OnEvent(_ *engine.Engine, arg uint64) { (*flowRun)(m).dependencyMet(int(arg)) }

// groupMet is flowRun.groupMet as an event (arg: the shared wait, then
// the group, 32 bits each), for a group in another part.
type groupMet flowRun

func (m *groupMet) OnEvent(_ *engine.Engine, arg uint64) {
	(*flowRun)(m).groupMet(int(arg>>32), int(uint32(arg)))
}

// flowLists is a list per flow in one array: a million flows cost an
// offset each rather than a slice header and an array. Items are added
// in any order of flows, each list keeping the order of its own, and
// read once built.
type flowLists[T any] struct {
	start []int // list f is items[start[f]:start[f+1]]
	items []T
	adds  []flowItem[T] // until build
}

type flowItem[T any] struct {
	flow int
	item T
}

func (l *flowLists[T]) add(f int, v T) { l.adds = append(l.adds, flowItem[T]{f, v}) }

// build lays out the lists of n flows.
func (l *flowLists[T]) build(n int) {
	l.start = make([]int, n+1)
	for _, a := range l.adds {
		l.start[a.flow+1]++
	}
	for f := range n {
		l.start[f+1] += l.start[f]
	}
	l.items = make([]T, len(l.adds))
	next := slices.Clone(l.start[:n])
	for _, a := range l.adds {
		l.items[next[a.flow]] = a.item
		next[a.flow]++
	}
	l.adds = nil
}

// of returns flow f's list.
func (l *flowLists[T]) of(f int) []T { return l.items[l.start[f]:l.start[f+1]] }
