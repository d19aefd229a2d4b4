package wire

// A byte stream (sdr.Conn.SendStream) is a sequence of messages, each
// opening with a stream frame: DATA frames carry the stream's bytes in
// order, an END frame declares the total length and its SHA-256, and the
// receiver answers with a VERDICT once it has checked them. A stream is
// complete only when the receiver has every byte the END declared and the
// digest matches; a connection that ends any other way ends an incomplete
// stream.
//
//	0..3   magic "SDRS"
//	4      kind (DATA, END, VERDICT)
//	5..7   reserved (0)
//	8..15  offset: stream bytes before this frame's payload
//	       (END: the total length)
//	16..23 declared length of the whole stream, 0 when not declared
//	24..   DATA: payload; END: 32-byte SHA-256 of the stream;
//	       VERDICT: 1-byte status

// StreamKind is a stream frame's kind.
type StreamKind uint8

// Stream frame kinds.
const (
	StreamData    StreamKind = 1
	StreamEnd     StreamKind = 2
	StreamVerdict StreamKind = 3
)

// Verdict is the receiver's judgement of a stream's END.
type Verdict uint8

// Verdicts.
const (
	VerdictOK          Verdict = 0 // every declared byte arrived and the digest matches
	VerdictShort       Verdict = 1 // the END declares more bytes than arrived
	VerdictDigest      Verdict = 2 // the digest differs
	VerdictDeclaration Verdict = 3 // the END contradicts the declared length
)

var verdictText = [...]string{"verified", "length differs", "digest differs", "length differs from the declared one"}

func (v Verdict) String() string {
	if int(v) < len(verdictText) {
		return verdictText[v]
	}
	return "unknown verdict"
}

// Stream frame lengths.
const (
	StreamHeaderLen  = 24
	StreamEndLen     = StreamHeaderLen + 32
	StreamVerdictLen = StreamHeaderLen + 1
)

var streamMagic = [4]byte{'S', 'D', 'R', 'S'}

// StreamFrame is the head of a stream message.
type StreamFrame struct {
	Kind     StreamKind
	Offset   uint64
	Declared uint64
	Digest   [32]byte // END
	Verdict  Verdict  // VERDICT
}

// EncodeHeader writes f's 24-byte header into b; a DATA frame's payload
// follows it. It returns the frame's length without payload.
func (f *StreamFrame) EncodeHeader(b []byte) (int, error) {
	n := StreamHeaderLen
	switch f.Kind {
	case StreamEnd:
		n = StreamEndLen
	case StreamVerdict:
		n = StreamVerdictLen
	case StreamData:
	default:
		return 0, ErrType
	}
	if len(b) < n {
		return 0, ErrBufferSmall
	}
	copy(b, streamMagic[:])
	b[4], b[5], b[6], b[7] = byte(f.Kind), 0, 0, 0
	be.PutUint64(b[8:], f.Offset)
	be.PutUint64(b[16:], f.Declared)
	switch f.Kind {
	case StreamEnd:
		copy(b[StreamHeaderLen:], f.Digest[:])
	case StreamVerdict:
		b[StreamHeaderLen] = byte(f.Verdict)
	}
	return n, nil
}

// ParseStreamFrame decodes a stream message and returns its frame and, for
// DATA, the payload (aliasing b).
func ParseStreamFrame(b []byte) (StreamFrame, []byte, error) {
	if len(b) < StreamHeaderLen {
		return StreamFrame{}, nil, ErrTruncated
	}
	if [4]byte(b[:4]) != streamMagic || b[5] != 0 || b[6] != 0 || b[7] != 0 {
		return StreamFrame{}, nil, ErrInconsistent
	}
	f := StreamFrame{Kind: StreamKind(b[4]), Offset: be.Uint64(b[8:]), Declared: be.Uint64(b[16:])}
	want := StreamHeaderLen
	switch f.Kind {
	case StreamData:
		return f, b[StreamHeaderLen:], nil
	case StreamEnd:
		want = StreamEndLen
	case StreamVerdict:
		want = StreamVerdictLen
	default:
		return StreamFrame{}, nil, ErrType
	}
	if len(b) != want {
		if len(b) < want {
			return StreamFrame{}, nil, ErrTruncated
		}
		return StreamFrame{}, nil, ErrInconsistent
	}
	switch f.Kind {
	case StreamEnd:
		f.Digest = [32]byte(b[StreamHeaderLen:])
	case StreamVerdict:
		f.Verdict = Verdict(b[StreamHeaderLen])
		if int(f.Verdict) >= len(verdictText) {
			return StreamFrame{}, nil, ErrInconsistent
		}
	}
	return f, nil, nil
}
