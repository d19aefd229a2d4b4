package chakra

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
)

// Groups names a job's process groups (NCCL communicators): pg_name to
// the group's ranks, in ring order. A collective whose pg_name is empty
// or "0" runs among all ranks, as in ASTRA-sim.
type Groups map[string][]int

// AllRanks is the name a collective among all of a job's ranks has in
// Job.Groups.
const AllRanks = ""

// ReadGroups reads ASTRA-sim's communicator-group file: a JSON object
// from group id to its ranks, {"1": [0, 1, 2, 3], "2": [4, 5, 6, 7]}.
func ReadGroups(r io.Reader) (Groups, error) {
	var g Groups
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&g); err != nil {
		return nil, fmt.Errorf("chakra: process groups: %w (want {\"<id>\": [rank, ...], ...})", err)
	}
	return g, nil
}

// Write writes the groups as ReadGroups reads them, in id order.
func (g Groups) Write(w io.Writer) error {
	b, err := json.Marshal(g) // encoding/json sorts map keys
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// groupOf is the name of the group node n's collective runs in.
func groupOf(n *Node) string {
	a, ok := n.Attr("pg_name")
	if !ok {
		return AllRanks
	}
	name, _ := a.Text()
	if name == "0" {
		return AllRanks
	}
	return name
}

// GroupOf is the group a collective node runs in: a key of Job.Groups.
func (j *Job) GroupOf(n *Node) string { return groupOf(n) }

// checkGroups settles the job's groups: the named ones, checked, and
// all ranks under AllRanks. Every collective must name a group its rank
// is in, and every member of a group must run the same collectives in
// it, in the same order (type and size), or the replay would hang as
// NCCL does.
func (j *Job) checkGroups(named Groups) error {
	n := len(j.Ranks)
	j.Groups = Groups{AllRanks: make([]int, n)}
	for r := range n {
		j.Groups[AllRanks][r] = r
	}
	ids := slices.Sorted(maps.Keys(named))
	for _, id := range ids {
		ranks := named[id]
		if id == AllRanks && slices.Equal(ranks, j.Groups[AllRanks]) {
			continue // a Job's own Groups, given again
		}
		if id == AllRanks || id == "0" {
			return fmt.Errorf("chakra: process group %q: the name means all ranks; give the group another id", id)
		}
		if len(ranks) == 0 {
			return fmt.Errorf("chakra: process group %q has no ranks", id)
		}
		for i, r := range ranks {
			if r < 0 || r >= n || slices.Index(ranks, r) != i {
				return fmt.Errorf("chakra: process group %q: rank %d is not a rank of this job (0..%d) or is listed twice", id, r, n-1)
			}
		}
		j.Groups[id] = slices.Clone(ranks)
	}
	// Each member's collectives in each of its groups, in Order.
	type coll struct {
		typ  int64
		size int64
		node *Node
	}
	seqs := map[string]map[int][]coll{}
	for r, tr := range j.Ranks {
		for _, i := range j.Order[r] {
			nd := &tr.Nodes[i]
			if nd.Type != CommCollNode {
				continue
			}
			g := groupOf(nd)
			members, ok := j.Groups[g]
			if !ok {
				return fmt.Errorf("chakra: rank %d: node %d (%q): pg_name %q names no process group (known: %s)", r, nd.ID, nd.Name, g, groupList(j.Groups))
			}
			if !slices.Contains(members, r) {
				return fmt.Errorf("chakra: rank %d: node %d (%q): rank %d is not in process group %q (%v)", r, nd.ID, nd.Name, r, g, members)
			}
			typ, _ := nd.attrInt("comm_type")
			size, _ := nd.attrInt("comm_size")
			if seqs[g] == nil {
				seqs[g] = map[int][]coll{}
			}
			seqs[g][r] = append(seqs[g][r], coll{typ, size, nd})
		}
	}
	for _, g := range slices.Sorted(maps.Keys(seqs)) {
		members := j.Groups[g]
		first := seqs[g][members[0]]
		for _, r := range members[1:] {
			s := seqs[g][r]
			for k := range max(len(first), len(s)) {
				switch {
				case k >= len(s):
					return fmt.Errorf("chakra: process group %s: rank %d runs %d collectives in it, rank %d only %d", groupName(g), members[0], len(first), r, len(s))
				case k >= len(first):
					return fmt.Errorf("chakra: process group %s: rank %d runs %d collectives in it, rank %d only %d", groupName(g), r, len(s), members[0], len(first))
				case s[k].typ != first[k].typ || s[k].size != first[k].size:
					return fmt.Errorf("chakra: process group %s: collective %d is %v of %d bytes on rank %d (node %d, %q) but %v of %d bytes on rank %d (node %d, %q)",
						groupName(g), k, CollectiveType(first[k].typ), first[k].size, members[0], first[k].node.ID, first[k].node.Name,
						CollectiveType(s[k].typ), s[k].size, r, s[k].node.ID, s[k].node.Name)
				}
			}
		}
	}
	return nil
}

func groupName(g string) string {
	if g == AllRanks {
		return "of all ranks"
	}
	return strconv.Quote(g)
}

func groupList(gs Groups) string {
	var names []string
	for _, g := range slices.Sorted(maps.Keys(gs)) {
		if g != AllRanks {
			names = append(names, strconv.Quote(g))
		}
	}
	if len(names) == 0 {
		return "none but all ranks; a job's groups come from a comm-group file"
	}
	return fmt.Sprint(names)
}

// attrInt is integer attribute name of n.
func (n *Node) attrInt(name string) (int64, bool) {
	a, ok := n.Attr(name)
	if !ok {
		return 0, false
	}
	return a.Int()
}
