package chakra

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// allReduce is ASTRA-sim's 4-NPU, 1 MB all-reduce microbenchmark, rank
// 0 (examples/workload/microbenchmarks/all_reduce/4npus_1MB): version
// 0.0.4, one COMM_COLL node with is_cpu_op false, comm_type 0 and
// comm_size 1 MiB, each as the generator wrote it.
const allReduce = "070a05302e302e34481214616c6c5f7265647563655f346e7075735f314d421807520e0a0969735f6370755f6f70d80100520d0a09636f6d6d5f747970654800520f0a09636f6d6d5f73697a6548808040"

func TestReadASTRASimAllReduce(t *testing.T) {
	b, err := hex.DecodeString(allReduce)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Version != "0.0.4" || len(tr.Nodes) != 1 {
		t.Fatalf("version %q, %d nodes; want 0.0.4 and 1", tr.Version, len(tr.Nodes))
	}
	n := tr.Nodes[0]
	if n.ID != 0 || n.Name != "all_reduce_4npus_1MB" || n.Type != CommCollNode {
		t.Errorf("node %d %q %v, want 0 all_reduce_4npus_1MB COMM_COLL_NODE", n.ID, n.Name, n.Type)
	}
	cpu, _ := n.Attr("is_cpu_op")
	if v, ok := cpu.Bool(); !ok || v {
		t.Errorf("is_cpu_op %v (a bool: %v), want false", v, ok)
	}
	typ, _ := n.Attr("comm_type")
	if v, ok := typ.Int(); !ok || CollectiveType(v) != AllReduce {
		t.Errorf("comm_type %v, want ALL_REDUCE", CollectiveType(v))
	}
	size, _ := n.Attr("comm_size")
	if v, ok := size.Int(); !ok || v != 1<<20 {
		t.Errorf("comm_size %d, want 1 MiB", v)
	}
}

// enc builds traces for the tests, with protowire's appenders.
type enc struct{ b []byte }

func (e *enc) msg(m []byte) *enc {
	e.b = protowire.AppendVarint(e.b, uint64(len(m)))
	e.b = append(e.b, m...)
	return e
}

func str(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func varint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func sub(b []byte, num protowire.Number, m []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}

func packed(b []byte, num protowire.Number, vs ...uint64) []byte {
	var p []byte
	for _, v := range vs {
		p = protowire.AppendVarint(p, v)
	}
	return sub(b, num, p)
}

// TestReadGraph: a send, a receive and a compute node with every field
// this package reads, dependencies packed and not, and attribute values
// of several kinds.
func TestReadGraph(t *testing.T) {
	meta := str(nil, 1, "1.0.0")
	meta = sub(meta, 2, str(varint(nil, 7, 8), 1, "npus")) // int32_val before the name
	send := varint(str(varint(nil, 1, 10), 2, "send"), 3, uint64(CommSendNode))
	send = sub(send, 10, varint(str(nil, 1, "comm_dst"), 7, 3))
	send = sub(send, 10, varint(str(nil, 1, "comm_size"), 13, 65536))                     // uint64_val
	send = sub(send, 10, varint(str(nil, 1, "comm_tag"), 17, protowire.EncodeZigZag(-2))) // sint64_val
	comp := varint(str(varint(nil, 1, 11), 2, "gemm"), 3, uint64(CompNode))
	comp = packed(comp, 5, 10)  // data_deps, packed
	comp = varint(comp, 4, 9)   // ctrl_deps, one by one
	comp = varint(comp, 4, 8)   // and another
	comp = varint(comp, 7, 250) // duration_micros
	comp = sub(comp, 8, str(nil, 2, "[[4096, 4096]]"))
	comp = sub(comp, 10, sub(str(nil, 1, "involved_dim"), 28, packed(nil, 1, 1, 0, 1)))
	dbl := str(nil, 1, "flops")
	dbl = protowire.AppendTag(dbl, 3, protowire.Fixed64Type)
	dbl = protowire.AppendFixed64(dbl, math.Float64bits(2.5e12))
	comp = sub(comp, 10, dbl)
	comp = varint(comp, 99, 7) // a field this schema does not have
	var e enc
	e.msg(meta).msg(send).msg(comp)

	tr, err := Read(bytes.NewReader(e.b))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Version != "1.0.0" || len(tr.Meta) != 1 || tr.Meta[0].Name != "npus" {
		t.Errorf("metadata %q %+v", tr.Version, tr.Meta)
	}
	if len(tr.Nodes) != 2 {
		t.Fatalf("%d nodes, want 2", len(tr.Nodes))
	}
	s, c := tr.Nodes[0], tr.Nodes[1]
	for _, tt := range []struct {
		name string
		want int64
	}{{"comm_dst", 3}, {"comm_size", 65536}, {"comm_tag", -2}} {
		a, ok := s.Attr(tt.name)
		if v, isInt := a.Int(); !ok || !isInt || v != tt.want {
			t.Errorf("send's %s: %d (present %v, an integer %v), want %d", tt.name, v, ok, isInt, tt.want)
		}
	}
	if c.Type != CompNode || c.DurationMicros != 250 || !slices.Equal(c.DataDeps, []uint64{10}) ||
		!slices.Equal(c.CtrlDeps, []uint64{9, 8}) || c.Inputs.Shapes != "[[4096, 4096]]" {
		t.Errorf("compute node %+v", c)
	}
	dims, _ := c.Attr("involved_dim")
	if v, ok := dims.Bools(); !ok || !slices.Equal(v, []bool{true, false, true}) {
		t.Errorf("involved_dim %v (%v), want [true false true]", v, ok)
	}
	flops, _ := c.Attr("flops")
	if v, ok := flops.Float(); !ok || v != 2.5e12 {
		t.Errorf("flops %g (%v), want 2.5e12", v, ok)
	}
}

// TestReadErrors: a damaged trace is an error that says where and what.
func TestReadErrors(t *testing.T) {
	good, _ := hex.DecodeString(allReduce)
	node := varint(str(varint(nil, 1, 42), 2, "ring"), 3, uint64(CommCollNode))
	badType := append(slices.Clone(node), sub(nil, 7, []byte("x"))...) // duration_micros as bytes
	for _, tt := range []struct {
		name string
		in   []byte
		want []string
	}{
		{"empty", nil, []string{"empty trace"}},
		{"a length with no message", []byte{0x05, 'a'}, []string{"GlobalMetadata", "ends 1 bytes into a 5-byte message"}},
		{"a cut node", good[:len(good)-3], []string{"message 1", "ends"}},
		{"a huge length", []byte{0xff, 0xff, 0xff, 0xff, 0x7f}, []string{"over"}},
		{"a field of the wrong wire type", new(enc).msg(nil).msg(badType).b, []string{"message 1", "node 42", "duration_micros", "wire type"}},
		{"a truncated field", new(enc).msg(nil).msg(node[:len(node)-1]).b, []string{"message 1", "node 42", "field 3"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tt.in))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if _, err := Read(bytes.NewReader(good[:len(good)-3])); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a cut file: %v, want io.ErrUnexpectedEOF", err)
	}
}

func TestNames(t *testing.T) {
	if CommRecvNode.String() != "COMM_RECV_NODE" || NodeType(42).String() != "NodeType(42)" ||
		ReduceScatter.String() != "REDUCE_SCATTER" || CollectiveType(99).String() != "CollectiveType(99)" {
		t.Error("names of node types or collectives")
	}
}

// TestWriteASTRASimAllReduce: what Write makes of the trace Read made of
// ASTRA-sim's file is that file, byte for byte.
func TestWriteASTRASimAllReduce(t *testing.T) {
	good, _ := hex.DecodeString(allReduce)
	tr, err := Read(bytes.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Write(&out, tr); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), good) {
		t.Errorf("wrote %x\nwant  %x", out.Bytes(), good)
	}
}

// FuzzRead: no input makes Read panic, and a trace it accepts reads the
// same after Write.
func FuzzRead(f *testing.F) {
	good, _ := hex.DecodeString(allReduce)
	f.Add(good)
	f.Add([]byte{})
	f.Add(good[:20])
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := Write(&out, tr); err != nil {
			t.Fatal(err)
		}
		again, err := Read(&out)
		if err != nil {
			t.Fatalf("the trace Write made does not read: %v", err)
		}
		if !reflect.DeepEqual(tr, again) {
			t.Fatalf("read %+v\nwritten and read again %+v", tr, again)
		}
	})
}
