package chakra

import (
	"fmt"
	"math"
	"strconv"
)

// Megatron describes one iteration of a Megatron-LM style transformer
// job: the model (layers, hidden size, sequence length), how it is split
// (tensor, pipeline, data and expert parallel degrees) and how it is fed
// (micro-batches of MicroBatch sequences), from which Traces builds each
// rank's graph. Rank r is tensor rank r mod TP, data rank (r / TP) mod
// DP and pipeline stage r / (TP*DP), Megatron's default order, so a
// tensor-parallel group is TP consecutive ranks (one server's GPUs).
//
// The cost model is the Megatron-LM paper's (Narayanan et al., SC'21):
// a layer's forward pass is 24bsh² + 4bs²h FLOPs for b sequences of s
// tokens at hidden size h, split by TP, backward twice that; attention
// is 8bsh² + 4bs²h of it and the MLP 16bsh². Each runs at GPUFlops.
//
//   - Tensor parallelism all-reduces the activations (bsh x 2 bytes)
//     after attention and after the MLP, twice more in the backward pass.
//   - Pipeline parallelism splits the layers into PP stages run by 1F1B
//     (warm-up forwards, one forward one backward, cool-down backwards):
//     a stage sends its activations (bsh x 2 / TP bytes) forward and
//     receives gradients of the same size back, each receive posted when
//     the stage reaches it.
//   - Data parallelism all-reduces each layer's gradients ((12h² + 13h)
//     / TP parameters of GradBytes each) among the DP ranks of the same
//     tensor rank and stage, when its last micro-batch's backward pass is
//     done (Overlap, as Megatron's gradient buckets) or after the whole
//     backward pass.
//   - With EP > 1 every layer is a mixture of experts: its MLP exchanges
//     tokens (bsh x 2 bytes) by all-to-all among EP consecutive DP ranks
//     before and after the expert computes, in both passes.
//
// Each rank's compute and its tensor- and expert-parallel collectives
// run in schedule order on one stream, as Megatron's do; sends and
// data-parallel all-reduces run beside it.
type Megatron struct {
	Layers, Hidden, SeqLen   int
	MicroBatch, MicroBatches int
	TP, PP, DP, EP           int
	GPUFlops                 float64 // sustained FLOP/s of one GPU
	GradBytes                int     // bytes per gradient; 0: 4 (fp32)
	Overlap                  bool
}

// Ranks is how many ranks the job has: TP x PP x DP.
func (m Megatron) Ranks() int { return m.TP * m.PP * m.DP }

func (m Megatron) check() error {
	switch {
	case m.Layers < 1 || m.Hidden < 1 || m.SeqLen < 1 || m.MicroBatch < 1 || m.MicroBatches < 1:
		return fmt.Errorf("chakra: a Megatron job needs at least one layer, hidden unit, token, sequence and micro-batch (%d, %d, %d, %d, %d)",
			m.Layers, m.Hidden, m.SeqLen, m.MicroBatch, m.MicroBatches)
	case m.TP < 1 || m.PP < 1 || m.DP < 1 || m.EP < 1:
		return fmt.Errorf("chakra: parallel degrees TP %d, PP %d, DP %d, EP %d: each must be at least 1", m.TP, m.PP, m.DP, m.EP)
	case m.Layers%m.PP != 0:
		return fmt.Errorf("chakra: %d layers do not split into %d pipeline stages evenly", m.Layers, m.PP)
	case m.DP%m.EP != 0:
		return fmt.Errorf("chakra: expert parallelism %d does not divide data parallelism %d (experts spread over DP ranks)", m.EP, m.DP)
	case !(m.GPUFlops > 0):
		return fmt.Errorf("chakra: GPU throughput %g FLOP/s, want more than 0", m.GPUFlops)
	}
	return nil
}

// micros is a compute node's duration for flops FLOPs, at least 1 us
// (Chakra counts whole microseconds).
func (m Megatron) micros(flops float64) uint64 {
	return max(uint64(math.Round(flops/m.GPUFlops*1e6)), 1)
}

// Traces returns each rank's graph and the job's process groups.
func (m Megatron) Traces() ([]*Trace, Groups, error) {
	if err := m.check(); err != nil {
		return nil, nil, err
	}
	groups := Groups{}
	tpGroup, dpGroup, epGroup := map[int]string{}, map[int]string{}, map[int]string{}
	rank := func(tp, dp, pp int) int { return tp + m.TP*(dp+m.DP*pp) }
	// group names the next group (ids from 1, in the order made) of the
	// n ranks at(0..n-1), recording it in of; one rank makes none.
	group := func(of map[int]string, n int, at func(i int) int) {
		if n < 2 {
			return
		}
		g := strconv.Itoa(len(groups) + 1)
		for i := range n {
			groups[g] = append(groups[g], at(i))
			of[at(i)] = g
		}
	}
	for pp := range m.PP {
		for dp := range m.DP {
			group(tpGroup, m.TP, func(tp int) int { return rank(tp, dp, pp) })
		}
		for tp := range m.TP {
			group(dpGroup, m.DP, func(dp int) int { return rank(tp, dp, pp) })
			for block := range m.DP / m.EP { // experts spread over EP consecutive DP ranks
				group(epGroup, m.EP, func(i int) int { return rank(tp, block*m.EP+i, pp) })
			}
		}
	}
	out := make([]*Trace, m.Ranks())
	for r := range out {
		out[r] = m.rankTrace(r, tpGroup[r], dpGroup[r], epGroup[r])
	}
	return out, groups, nil
}

// stageBuilder adds one rank's nodes, chaining its stream.
type stageBuilder struct {
	nodes []Node
	last  uint64 // the stream's last node; 0: none yet
}

func (b *stageBuilder) add(n Node, deps ...uint64) uint64 {
	n.ID = uint64(len(b.nodes) + 1)
	n.DataDeps = deps
	b.nodes = append(b.nodes, n)
	return n.ID
}

// stream adds a node to the rank's stream: after the stream's last node
// and deps.
func (b *stageBuilder) stream(n Node, deps ...uint64) uint64 {
	if b.last != 0 {
		deps = append(deps, b.last)
	}
	b.last = b.add(n, deps...)
	return b.last
}

func collective(name string, typ CollectiveType, size int64, group string) Node {
	return Node{Name: name, Type: CommCollNode, Attrs: []Attr{BoolAttr("is_cpu_op", false), IntAttr("comm_type", int64(typ)),
		IntAttr("comm_size", size), TextAttr("pg_name", group)}}
}

func p2p(name string, typ NodeType, peer string, rank int, size int64) Node {
	return Node{Name: name, Type: typ, Attrs: []Attr{BoolAttr("is_cpu_op", false), IntAttr(peer, int64(rank)),
		IntAttr("comm_size", size), IntAttr("comm_tag", 0)}}
}

func (m Megatron) rankTrace(r int, tp, dp, ep string) *Trace {
	b, s, h := float64(m.MicroBatch), float64(m.SeqLen), float64(m.Hidden)
	attn := m.micros((8*b*s*h*h + 4*b*s*s*h) / float64(m.TP))
	mlp := m.micros(16 * b * s * h * h / float64(m.TP))
	act := int64(m.MicroBatch) * int64(m.SeqLen) * int64(m.Hidden) * 2
	gradBytes := m.GradBytes
	if gradBytes == 0 {
		gradBytes = 4
	}
	layerGrads := int64((12*m.Hidden*m.Hidden + 13*m.Hidden) / m.TP * gradBytes)
	stage := r / (m.TP * m.DP)
	perStage := m.Layers / m.PP
	first := stage * perStage
	bd := &stageBuilder{}
	tpReduce := func(what string, mb, l int) {
		if tp != "" {
			bd.stream(collective(fmt.Sprintf("%s tp all-reduce mb%d layer%d", what, mb, l), AllReduce, act, tp))
		}
	}
	moe := func(what string, mb, l int, expert uint64) {
		if ep == "" {
			bd.stream(Node{Name: fmt.Sprintf("%s mlp mb%d layer%d", what, mb, l), Type: CompNode, DurationMicros: expert})
			return
		}
		bd.stream(collective(fmt.Sprintf("%s ep dispatch mb%d layer%d", what, mb, l), AllToAll, act, ep))
		bd.stream(Node{Name: fmt.Sprintf("%s expert mb%d layer%d", what, mb, l), Type: CompNode, DurationMicros: expert})
		bd.stream(collective(fmt.Sprintf("%s ep combine mb%d layer%d", what, mb, l), AllToAll, act, ep))
	}
	prev, next := r-m.TP*m.DP, r+m.TP*m.DP // the same tensor and data rank, a stage before and after
	forward := func(mb int) {
		if stage > 0 {
			bd.stream(p2p(fmt.Sprintf("recv activations mb%d", mb), CommRecvNode, "comm_src", prev, act/int64(m.TP)))
		}
		for l := first; l < first+perStage; l++ {
			bd.stream(Node{Name: fmt.Sprintf("forward attention mb%d layer%d", mb, l), Type: CompNode, DurationMicros: attn})
			tpReduce("forward attention", mb, l)
			moe("forward", mb, l, mlp)
			tpReduce("forward mlp", mb, l)
		}
		if stage < m.PP-1 {
			bd.add(p2p(fmt.Sprintf("send activations mb%d", mb), CommSendNode, "comm_dst", next, act/int64(m.TP)), bd.last)
		}
	}
	lastBackward := map[int]uint64{} // layer -> its backward in the last micro-batch
	backward := func(mb int) {
		if stage < m.PP-1 {
			bd.stream(p2p(fmt.Sprintf("recv gradients mb%d", mb), CommRecvNode, "comm_src", next, act/int64(m.TP)))
		}
		for l := first + perStage - 1; l >= first; l-- {
			tpReduce("backward mlp", mb, l)
			moe("backward", mb, l, 2*mlp)
			tpReduce("backward attention", mb, l)
			lastBackward[l] = bd.stream(Node{Name: fmt.Sprintf("backward attention mb%d layer%d", mb, l), Type: CompNode, DurationMicros: 2 * attn})
		}
		if stage > 0 {
			bd.add(p2p(fmt.Sprintf("send gradients mb%d", mb), CommSendNode, "comm_dst", prev, act/int64(m.TP)), bd.last)
		}
	}
	// 1F1B: warm-up forwards, then one forward and one backward, then
	// the remaining backwards.
	warm := min(m.PP-stage-1, m.MicroBatches)
	for mb := range warm {
		forward(mb)
	}
	for i := range m.MicroBatches - warm {
		forward(warm + i)
		backward(i)
	}
	for mb := m.MicroBatches - warm; mb < m.MicroBatches; mb++ {
		backward(mb)
	}
	if dp != "" {
		end := bd.last
		for l := first + perStage - 1; l >= first; l-- {
			after := end
			if m.Overlap {
				after = lastBackward[l]
			}
			bd.add(collective(fmt.Sprintf("dp all-reduce layer%d", l), AllReduce, layerGrads, dp), after)
		}
	}
	return &Trace{Version: "1.0.0", Nodes: bd.nodes}
}
