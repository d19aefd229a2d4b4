// Package chakra reads MLCommons Chakra execution traces (ET), the
// per-rank graphs of compute and communication nodes that ASTRA-sim
// replays: a file is a GlobalMetadata message and then Node messages,
// each serialized protobuf (schema/protobuf/et_def.proto in the chakra
// repository) behind a varint length. Messages are decoded with
// protowire, field by field, so no generated code is needed; fields this
// package does not know are skipped, as protobuf requires.
package chakra

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Trace is one rank's execution trace.
type Trace struct {
	Version string // GlobalMetadata.version
	Meta    []Attr // GlobalMetadata.attr
	Nodes   []Node // in file order, which need not be dependency order
}

// NodeType is et_def.proto's NodeType.
type NodeType uint32

// The node types.
const (
	InvalidNode NodeType = iota
	MetadataNode
	MemLoadNode
	MemStoreNode
	CompNode
	CommSendNode
	CommRecvNode
	CommCollNode
)

var nodeTypeNames = [...]string{"INVALID_NODE", "METADATA_NODE", "MEM_LOAD_NODE", "MEM_STORE_NODE",
	"COMP_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE", "COMM_COLL_NODE"}

func (t NodeType) String() string {
	if int(t) < len(nodeTypeNames) {
		return nodeTypeNames[t]
	}
	return fmt.Sprintf("NodeType(%d)", uint32(t))
}

// CollectiveType is et_def.proto's CollectiveCommType, a COMM_COLL node's
// comm_type attribute.
type CollectiveType uint32

// The collectives.
const (
	AllReduce CollectiveType = iota
	Reduce
	AllGather
	Gather
	Scatter
	Broadcast
	AllToAll
	ReduceScatter
	ReduceScatterBlock
	Barrier
)

var collectiveNames = [...]string{"ALL_REDUCE", "REDUCE", "ALL_GATHER", "GATHER", "SCATTER",
	"BROADCAST", "ALL_TO_ALL", "REDUCE_SCATTER", "REDUCE_SCATTER_BLOCK", "BARRIER"}

func (c CollectiveType) String() string {
	if int(c) < len(collectiveNames) {
		return collectiveNames[c]
	}
	return fmt.Sprintf("CollectiveType(%d)", uint32(c))
}

// Node is one node of the graph.
type Node struct {
	ID             uint64
	Name           string
	Type           NodeType
	CtrlDeps       []uint64 // nodes that must finish first, by order only
	DataDeps       []uint64 // nodes whose results this one reads
	StartMicros    uint64   // when it started in the traced run
	DurationMicros uint64   // how long it ran there (a compute node's cost)
	Inputs         IOInfo
	Outputs        IOInfo
	Attrs          []Attr
}

// IOInfo is a node's inputs or outputs as the tracer wrote them: strings
// in Python's notation.
type IOInfo struct {
	Values, Shapes, Types string
}

// Attr returns the node's attribute name, if it has one.
func (n *Node) Attr(name string) (Attr, bool) {
	for _, a := range n.Attrs {
		if a.Name == name {
			return a, true
		}
	}
	return Attr{}, false
}

// Attr is an AttributeProto: a name and one value of the kind its
// writer chose. Readers coerce between integer kinds, as ASTRA-sim does:
// comm_size is written as int64 by one generator and uint64 by another.
type Attr struct {
	Name string
	// Kind is the value's field number in AttributeProto's oneof (3
	// double_val .. 32 bytes_list); 0: no value.
	Kind  protowire.Number
	bits  uint64 // an integer, bool or float scalar's bits
	str   string // string_val, bytes_val
	list  []uint64
	slist []string
}

// Value kinds this package reads (AttributeProto's oneof field numbers).
const (
	kindDouble, kindDoubleList = 3, 4
	kindFloat, kindFloatList   = 5, 6
	kindInt32, kindInt64       = 7, 9
	kindUint32, kindUint64     = 11, 13
	kindSint32, kindSint64     = 15, 17
	kindFixed32, kindFixed64   = 19, 21
	kindSfixed32, kindSfixed64 = 23, 25
	kindBool, kindBoolList     = 27, 28
	kindString, kindStringList = 29, 30
	kindBytes, kindBytesList   = 31, 32
	kindLast                   = 32
)

// IntAttr is an int64_val attribute, as Chakra's generators write
// comm_type and comm_size.
func IntAttr(name string, v int64) Attr { return Attr{Name: name, Kind: kindInt64, bits: uint64(v)} }

// BoolAttr is a bool_val attribute (is_cpu_op).
func BoolAttr(name string, v bool) Attr {
	a := Attr{Name: name, Kind: kindBool}
	if v {
		a.bits = 1
	}
	return a
}

// TextAttr is a string_val attribute (pg_name).
func TextAttr(name, v string) Attr { return Attr{Name: name, Kind: kindString, str: v} }

// BoolsAttr is a bool_list attribute (involved_dim).
func BoolsAttr(name string, vs ...bool) Attr {
	a := Attr{Name: name, Kind: kindBoolList, list: make([]uint64, len(vs))}
	for i, v := range vs {
		if v {
			a.list[i] = 1
		}
	}
	return a
}

// Int returns an integer or bool scalar as an int64; false for other
// kinds.
func (a Attr) Int() (int64, bool) {
	switch a.Kind {
	case kindInt32, kindSint32, kindSfixed32:
		return int64(int32(a.bits)), true
	case kindInt64, kindSint64, kindSfixed64, kindUint32, kindUint64, kindFixed32, kindFixed64, kindBool:
		return int64(a.bits), true
	}
	return 0, false
}

// Float returns a floating-point or integer scalar as a float64.
func (a Attr) Float() (float64, bool) {
	switch a.Kind {
	case kindDouble:
		return math.Float64frombits(a.bits), true
	case kindFloat:
		return float64(math.Float32frombits(uint32(a.bits))), true
	}
	v, ok := a.Int()
	return float64(v), ok
}

// Bool returns a bool scalar.
func (a Attr) Bool() (bool, bool) { return a.bits != 0, a.Kind == kindBool }

// Text returns a string or bytes scalar.
func (a Attr) Text() (string, bool) { return a.str, a.Kind == kindString || a.Kind == kindBytes }

// Bools returns a bool list (involved_dim).
func (a Attr) Bools() ([]bool, bool) {
	if a.Kind != kindBoolList {
		return nil, false
	}
	out := make([]bool, len(a.list))
	for i, v := range a.list {
		out[i] = v != 0
	}
	return out, true
}

// Read reads a trace. A malformed one is an error that names the
// message (and the node, once its id is known) and the problem.
func Read(r io.Reader) (*Trace, error) {
	br := bufio.NewReader(r)
	msg, err := readFrame(br)
	if err == io.EOF {
		return nil, errors.New("chakra: empty trace: want a GlobalMetadata message first")
	}
	if err != nil {
		return nil, fmt.Errorf("chakra: the GlobalMetadata message: %w", err)
	}
	t := &Trace{}
	if err := t.parseMeta(msg); err != nil {
		return nil, fmt.Errorf("chakra: the GlobalMetadata message: %w", err)
	}
	for i := 1; ; i++ {
		msg, err := readFrame(br)
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, fmt.Errorf("chakra: message %d (after node %s): %w", i, lastID(t), err)
		}
		var n Node
		if err := n.parse(msg); err != nil {
			return nil, fmt.Errorf("chakra: message %d, node %s: %w", i, idOf(&n), err)
		}
		t.Nodes = append(t.Nodes, n)
	}
}

// maxMessage bounds one message: a length beyond it is a damaged file,
// not a node to allocate for.
const maxMessage = 64 << 20

// readFrame reads one length-delimited message; io.EOF only at a clean
// boundary.
func readFrame(r *bufio.Reader) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	switch {
	case err == io.EOF:
		return nil, io.EOF
	case err != nil:
		return nil, fmt.Errorf("length: %w", err)
	case n > maxMessage:
		return nil, fmt.Errorf("length %d is over %d bytes", n, maxMessage)
	}
	b := make([]byte, n)
	if got, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("the file ends %d bytes into a %d-byte message: %w", got, n, io.ErrUnexpectedEOF)
	}
	return b, nil
}

func lastID(t *Trace) string {
	if len(t.Nodes) == 0 {
		return "none"
	}
	return fmt.Sprint(t.Nodes[len(t.Nodes)-1].ID)
}

func idOf(n *Node) string {
	if n.ID == 0 && n.Name == "" {
		return "(id not yet read)"
	}
	return fmt.Sprintf("%d (%q)", n.ID, n.Name)
}

// field is one decoded field: its number, wire type and raw value.
type field struct {
	num protowire.Number
	typ protowire.Type
	val []byte
}

// fields walks a message's fields, calling fn with each.
func fields(b []byte, fn func(f field) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("a field's tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
		}
		if err := fn(field{num, typ, b[:m]}); err != nil {
			return err
		}
		b = b[m:]
	}
	return nil
}

// want checks f's wire type.
func (f field) want(typ protowire.Type, name string) error {
	if f.typ != typ {
		return fmt.Errorf("field %d (%s) has wire type %d, want %d", f.num, name, f.typ, typ)
	}
	return nil
}

func (f field) varint(name string) (uint64, error) {
	if err := f.want(protowire.VarintType, name); err != nil {
		return 0, err
	}
	v, _ := protowire.ConsumeVarint(f.val)
	return v, nil
}

func (f field) bytes(name string) ([]byte, error) {
	if err := f.want(protowire.BytesType, name); err != nil {
		return nil, err
	}
	v, _ := protowire.ConsumeBytes(f.val)
	return v, nil
}

// varints appends a repeated varint field, packed or not.
func (f field) varints(name string, dst []uint64) ([]uint64, error) {
	if f.typ == protowire.VarintType {
		v, _ := protowire.ConsumeVarint(f.val)
		return append(dst, v), nil
	}
	p, err := f.bytes(name)
	if err != nil {
		return dst, err
	}
	for len(p) > 0 {
		v, n := protowire.ConsumeVarint(p)
		if n < 0 {
			return dst, fmt.Errorf("field %d (%s): %w", f.num, name, protowire.ParseError(n))
		}
		dst, p = append(dst, v), p[n:]
	}
	return dst, nil
}

func (t *Trace) parseMeta(b []byte) error {
	return fields(b, func(f field) error {
		switch f.num {
		case 1:
			v, err := f.bytes("version")
			t.Version = string(v)
			return err
		case 2:
			v, err := f.bytes("attr")
			if err != nil {
				return err
			}
			a, err := parseAttr(v)
			t.Meta = append(t.Meta, a)
			return err
		}
		return nil
	})
}

func (n *Node) parse(b []byte) error {
	return fields(b, func(f field) error {
		var err error
		var v uint64
		var s []byte
		switch f.num {
		case 1:
			n.ID, err = f.varint("id")
		case 2:
			s, err = f.bytes("name")
			n.Name = string(s)
		case 3:
			v, err = f.varint("type")
			n.Type = NodeType(v)
		case 4:
			n.CtrlDeps, err = f.varints("ctrl_deps", n.CtrlDeps)
		case 5:
			n.DataDeps, err = f.varints("data_deps", n.DataDeps)
		case 6:
			n.StartMicros, err = f.varint("start_time_micros")
		case 7:
			n.DurationMicros, err = f.varint("duration_micros")
		case 8, 9:
			name := map[protowire.Number]string{8: "inputs", 9: "outputs"}[f.num]
			if s, err = f.bytes(name); err == nil {
				info := &n.Inputs
				if f.num == 9 {
					info = &n.Outputs
				}
				err = info.parse(s)
			}
		case 10:
			if s, err = f.bytes("attr"); err == nil {
				var a Attr
				a, err = parseAttr(s)
				n.Attrs = append(n.Attrs, a)
			}
		}
		return err
	})
}

func (info *IOInfo) parse(b []byte) error {
	return fields(b, func(f field) error {
		dst := map[protowire.Number]*string{1: &info.Values, 2: &info.Shapes, 3: &info.Types}[f.num]
		if dst == nil {
			return nil
		}
		v, err := f.bytes("values, shapes or types")
		*dst = string(v)
		return err
	})
}

func parseAttr(b []byte) (Attr, error) {
	var a Attr
	err := fields(b, func(f field) error {
		switch {
		case f.num == 1:
			v, err := f.bytes("name")
			a.Name = string(v)
			return err
		case f.num < kindDouble || f.num > kindLast:
			return nil // doc_string, or a field this schema does not have
		}
		// A oneof: the last value wins.
		a.Kind, a.bits, a.str, a.list, a.slist = f.num, 0, "", nil, nil
		if f.num%2 == 0 { // the lists: a message with one repeated field
			v, err := f.bytes("a list")
			if err != nil {
				return err
			}
			return a.parseList(v)
		}
		return a.parseScalar(f)
	})
	if err != nil && a.Name != "" {
		err = fmt.Errorf("attribute %q: %w", a.Name, err)
	}
	return a, err
}

func (a *Attr) parseScalar(f field) error {
	var err error
	switch a.Kind {
	case kindDouble, kindFixed64, kindSfixed64:
		if err = f.want(protowire.Fixed64Type, "a 64-bit fixed value"); err == nil {
			a.bits, _ = protowire.ConsumeFixed64(f.val)
		}
	case kindFloat, kindFixed32, kindSfixed32:
		if err = f.want(protowire.Fixed32Type, "a 32-bit fixed value"); err == nil {
			v, _ := protowire.ConsumeFixed32(f.val)
			a.bits = uint64(v)
		}
	case kindString, kindBytes:
		var v []byte
		v, err = f.bytes("a string")
		a.str = string(v)
	default: // the varints
		a.bits, err = f.varint("an integer")
		if a.Kind == kindSint32 || a.Kind == kindSint64 {
			a.bits = uint64(protowire.DecodeZigZag(a.bits))
		}
	}
	return err
}

// parseList reads an XxxList message, its values in field 1.
func (a *Attr) parseList(b []byte) error {
	return fields(b, func(f field) error {
		if f.num != 1 {
			return nil
		}
		var err error
		switch a.Kind {
		case kindStringList, kindBytesList:
			var v []byte
			v, err = f.bytes("a list's string")
			a.slist = append(a.slist, string(v))
		case kindDoubleList:
			a.list, err = fixeds(f, 8, a.list)
		case kindFloatList, kindFixed32 + 1, kindSfixed32 + 1:
			a.list, err = fixeds(f, 4, a.list)
		case kindFixed64 + 1, kindSfixed64 + 1:
			a.list, err = fixeds(f, 8, a.list)
		default:
			a.list, err = f.varints("a list", a.list)
		}
		return err
	})
}

// fixeds appends a repeated fixed-width field of size bytes, packed or
// not.
func fixeds(f field, size int, dst []uint64) ([]uint64, error) {
	one := protowire.Fixed32Type
	if size == 8 {
		one = protowire.Fixed64Type
	}
	p := f.val
	if f.typ == protowire.BytesType {
		p, _ = protowire.ConsumeBytes(f.val)
		if len(p)%size != 0 {
			return dst, fmt.Errorf("a packed list of %d bytes is not a whole number of %d-byte values", len(p), size)
		}
	} else if err := f.want(one, "a fixed-width list value"); err != nil {
		return dst, err
	}
	for ; len(p) >= size; p = p[size:] {
		if size == 8 {
			dst = append(dst, binary.LittleEndian.Uint64(p))
		} else {
			dst = append(dst, uint64(binary.LittleEndian.Uint32(p)))
		}
	}
	return dst, nil
}

// Write writes t in the trace format Read reads: GlobalMetadata, then
// each node, each behind its varint length. Repeated integers are
// packed, as proto3 writers do.
func Write(w io.Writer, t *Trace) error {
	bw := bufio.NewWriter(w)
	var b, m []byte
	frame := func(msg []byte) {
		b = protowire.AppendVarint(b[:0], uint64(len(msg)))
		bw.Write(b)
		bw.Write(msg)
	}
	m = appendString(m[:0], 1, t.Version)
	for i := range t.Meta {
		m = appendMessage(m, 2, t.Meta[i].append(nil))
	}
	frame(m)
	for i := range t.Nodes {
		frame(t.Nodes[i].append(m[:0]))
	}
	return bw.Flush()
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

func appendVarint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

func appendMessage(b []byte, num protowire.Number, m []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), m)
}

func appendPacked(b []byte, num protowire.Number, vs []uint64) []byte {
	if len(vs) == 0 {
		return b
	}
	var p []byte
	for _, v := range vs {
		p = protowire.AppendVarint(p, v)
	}
	return appendMessage(b, num, p)
}

func (n *Node) append(b []byte) []byte {
	b = appendVarint(b, 1, n.ID)
	b = appendString(b, 2, n.Name)
	b = appendVarint(b, 3, uint64(n.Type))
	b = appendPacked(b, 4, n.CtrlDeps)
	b = appendPacked(b, 5, n.DataDeps)
	b = appendVarint(b, 6, n.StartMicros)
	b = appendVarint(b, 7, n.DurationMicros)
	for num, info := range []IOInfo{8: n.Inputs, 9: n.Outputs} {
		if num >= 8 && info != (IOInfo{}) {
			b = appendMessage(b, protowire.Number(num), appendString(appendString(appendString(nil, 1, info.Values), 2, info.Shapes), 3, info.Types))
		}
	}
	for i := range n.Attrs {
		b = appendMessage(b, 10, n.Attrs[i].append(nil))
	}
	return b
}

// append encodes the attribute; its value is written even where it is
// the kind's zero, so the kind survives (as Chakra's writers do).
func (a *Attr) append(b []byte) []byte {
	b = appendString(b, 1, a.Name)
	switch k := a.Kind; {
	case k == 0:
	case k%2 == 0: // a list
		var p []byte
		for _, s := range a.slist {
			p = protowire.AppendString(protowire.AppendTag(p, 1, protowire.BytesType), s)
		}
		if len(a.list) > 0 {
			var vals []byte
			for _, v := range a.list {
				switch k {
				case kindDoubleList, kindFixed64 + 1, kindSfixed64 + 1:
					vals = protowire.AppendFixed64(vals, v)
				case kindFloatList, kindFixed32 + 1, kindSfixed32 + 1:
					vals = protowire.AppendFixed32(vals, uint32(v))
				default:
					vals = protowire.AppendVarint(vals, v)
				}
			}
			p = appendMessage(p, 1, vals)
		}
		b = appendMessage(b, k, p)
	case k == kindString || k == kindBytes:
		b = protowire.AppendString(protowire.AppendTag(b, k, protowire.BytesType), a.str)
	case k == kindDouble || k == kindFixed64 || k == kindSfixed64:
		b = protowire.AppendFixed64(protowire.AppendTag(b, k, protowire.Fixed64Type), a.bits)
	case k == kindFloat || k == kindFixed32 || k == kindSfixed32:
		b = protowire.AppendFixed32(protowire.AppendTag(b, k, protowire.Fixed32Type), uint32(a.bits))
	case k == kindSint32 || k == kindSint64:
		b = protowire.AppendVarint(protowire.AppendTag(b, k, protowire.VarintType), protowire.EncodeZigZag(int64(a.bits)))
	default:
		b = protowire.AppendVarint(protowire.AppendTag(b, k, protowire.VarintType), a.bits)
	}
	return b
}
