package core

import (
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/wire"
)

// Erasure coding in the core. A message is cut into sub-messages of K data
// chunks; each gets M parity chunks. Packet j of every parity chunk is
// coded over packet j of the K data chunks, so each packet position
// ("stripe") is one codeword of K+M packet-sized shards and a lost packet
// erases one shard of one stripe. Packets past the end of the message
// count as present zeros; the last packet is zero-padded to a full shard.

// ecScratch is an endpoint's scratch for decoding.
type ecScratch struct {
	shards    [][]byte
	zero, pad []byte // one packet
}

func (x *ecScratch) init(mtu, shards int) {
	if cap(x.zero) < mtu { // the zeros are never written: a longer one serves
		x.zero, x.pad = make([]byte, mtu), make([]byte, mtu)
	}
	x.zero, x.pad = x.zero[:mtu], x.pad[:mtu]
	if cap(x.shards) < shards {
		x.shards = make([][]byte, shards)
	}
	x.shards = x.shards[:shards]
}

// stripes returns how many packet positions sub-message s spans: a full
// chunk's worth unless the message ends inside the sub-message's first chunk.
func stripes(npkts, k, s uint32, shift uint8) uint32 {
	first := uint64(s) * uint64(k) << shift
	return uint32(min(uint64(1)<<shift, uint64(npkts)-first))
}

// realShards returns the mask of data shards of stripe j of sub-message s
// that hold packets of the message.
func realShards(npkts, k, s, j uint32, shift uint8) uint64 {
	first := (uint64(s)*uint64(k))<<shift + uint64(j)
	if first >= uint64(npkts) {
		return 0
	}
	n := min(uint64(k), (uint64(npkts)-first+(1<<shift)-1)>>shift)
	return 1<<n - 1
}

// subCode returns the code of sub-message sub of a message of nchunks
// chunks: code itself, but for a short last sub-message the shortened
// code with parity in proportion to its data (reliability.Codec.Short).
func subCode(code reliability.Codec, nchunks, sub uint32) reliability.Codec {
	k := uint32(code.K())
	return code.Short(int(min(k, nchunks-sub*k)))
}

// ecSender holds the parity of the sub-message being sent.
type ecSender struct {
	parity []byte
	// shards lays out a sub-message's code; pad holds a chunk the
	// message ends inside, zero-padded.
	shards [][]byte
	pad    []byte
	// With the endpoint's codec workers (SetCodecWorkers), job codes the
	// parity of sub-message jobSub of message jobSeq while its data
	// packets leave.
	job            reliability.Job
	jobSeq, jobSub uint32
}

// subStart returns the first data packet of sub-message sub.
func (s *sender) subStart(m *sendMsg, sub uint32) uint32 {
	start := uint64(sub) * uint64(m.code.K()) << s.c.shift
	return uint32(min(start, uint64(m.npkts)))
}

// subEnd returns the packet after the last data packet of sub-message s.
func (s *sender) subEnd(m *sendMsg, sub uint32) uint32 { return s.subStart(m, sub+1) }

// codeAhead starts coding the parity of m's current sub-message on the
// codec workers, as its first data packet leaves.
func (s *sender) codeAhead(m *sendMsg) {
	code := s.parityShards(m)
	s.ec.jobSeq, s.ec.jobSub = m.seq, m.sub
	s.c.ep.codec.Start(&s.ec.job, code, s.ec.shards)
}

// waitCoding waits for the codec workers if they are reading m's data,
// before the data goes back to the application.
func (s *sender) waitCoding(m *sendMsg) {
	if s.ec != nil && s.ec.job.Busy() && s.ec.jobSeq == m.seq {
		_ = s.ec.job.Wait()
	}
}

// startParity readies the parity of m's current sub-message: coded
// ahead, or coded now. RS and XOR work byte by byte, so coding whole
// chunks at once (shards of S packets) yields exactly the per-stripe
// codewords, with one call instead of S.
func (s *sender) startParity(m *sendMsg) {
	nm := subCode(m.code, m.nchunks, m.sub).M()
	m.inParity, m.parityPos, m.parityChunks = true, 0, uint32(nm)
	if s.ec != nil && s.ec.job.Busy() && s.ec.jobSeq == m.seq && s.ec.jobSub == m.sub {
		_ = s.ec.job.Wait() // shapes are checked in parityShards; cannot fail
		s.stats.ParityCodedAhead++
		return
	}
	if code := s.parityShards(m); m.data != nil {
		_ = code.Encode(s.ec.shards)
	}
}

// parityShards sizes the parity buffer for m's current sub-message and
// lays out its code's shards: the data chunks in place, a chunk the
// message ends inside copied into pad and zero-padded, chunks past the
// end as zeros. It returns the sub-message's code.
func (s *sender) parityShards(m *sendMsg) reliability.Codec {
	if s.ec == nil {
		s.ec = new(ecSender)
	}
	_ = s.ec.job.Wait() // the buffers are a job's until it is done
	code := subCode(m.code, m.nchunks, m.sub)
	k, nm, mtu := code.K(), code.M(), uint64(m.geo.MTU)
	S := stripes(m.npkts, uint32(k), m.sub, s.c.shift)
	shard := uint64(S) * mtu
	need := int(shard) * nm
	x := s.ec
	if cap(x.parity) < need {
		x.parity = make([]byte, need)
	}
	x.parity = x.parity[:need]
	if m.data == nil {
		return code // a virtual message: its parity is zeros, like its data
	}
	if uint64(len(x.pad)) < shard {
		x.pad = make([]byte, shard)
	}
	if cap(x.shards) < k+nm {
		x.shards = make([][]byte, k+nm)
	}
	x.shards = x.shards[:k+nm]
	for c := range k {
		off := (uint64(m.sub)*uint64(k) + uint64(c)) << s.c.shift * mtu
		switch {
		case off >= m.geo.MsgLen:
			x.shards[c] = s.zeroPayload(int(shard)) // read only: a job may share it
		case off+shard > m.geo.MsgLen: // the message ends inside this chunk
			n := copy(x.pad[:shard], m.data[off:])
			clear(x.pad[n:shard])
			x.shards[c] = x.pad[:shard]
		default:
			x.shards[c] = m.data[off : off+shard]
		}
	}
	for i := range nm {
		x.shards[k+i] = x.parity[uint64(i)*shard : uint64(i+1)*shard]
	}
	return code
}

func (s *sender) sendParity(now monotime.Time, m *sendMsg, buf []byte) int {
	nm, mtu := m.parityChunks, uint32(m.geo.MTU)
	if len(buf) < wire.MaxHeaderLen+int(mtu) {
		return 0 // the caller's buffer cannot hold it: send nothing, lose nothing
	}
	s.c.mp.path = s.c.pickPathUp(now)
	S := stripes(m.npkts, uint32(m.code.K()), m.sub, s.c.shift)
	i, j := m.parityPos/S, m.parityPos%S
	off := (i*S + j) * mtu
	p := wire.Parity{Conn: s.c.peerID, Msg: s.c.msgID(m.seq), Sub: m.sub, Imm: m.imm, Geometry: m.geo,
		Index: uint8(i), Stripe: j}
	var n int
	if m.data == nil { // virtual: zeros, by reference like virtual data
		n = p.EncodeHeader(buf)
		s.c.ep.payload = s.zeroPayload(int(mtu))
	} else {
		// Real parity is copied: its buffer is overwritten by the next
		// sub-message while this packet may still wait to be sent.
		p.Payload = s.ec.parity[off : off+mtu]
		n, _ = p.Encode(buf)
	}
	s.stats.ParityPackets++
	s.stats.ParityBytes += uint64(mtu)
	m.parityPos++
	if m.parityPos == nm*S {
		m.inParity = false
		m.sub++
		if m.next == m.npkts {
			s.passEnd(now, m)
		}
	}
	return n
}

// ecRecv is a receive's decoding state.
type ecRecv struct {
	code   reliability.Codec
	last   reliability.Codec // the last sub-message's code: code, or shortened
	k      uint32
	subs   uint32
	masks  []uint64 // per sub-message and stripe: shards present
	parity [][]byte // per sub-message: its parity packets, or nil
}

// ecPool is the receiver's store of parity buffers.
type ecPool struct {
	c    *Conn
	free [][]byte
}

func (p *ecPool) init(c *Conn) { p.c = c }

func (p *ecPool) start(m *recvMsg) {
	if m.ec == nil {
		m.ec = new(ecRecv) // kept with the slot, buffers and all
	}
	e := m.ec
	code := m.scheme.Code()
	e.code, e.k = code, uint32(code.K())
	e.subs = (m.nchunks + e.k - 1) / e.k
	e.last = subCode(code, m.nchunks, e.subs-1)
	n := int(e.subs) << m.geo.ChunkShift
	if cap(e.masks) < n {
		e.masks = make([]uint64, n)
	}
	e.masks = e.masks[:n]
	clear(e.masks)
	m.decoded.reset(m.npkts)
	if cap(e.parity) < int(e.subs) {
		e.parity = make([][]byte, e.subs)
	}
	e.parity = e.parity[:e.subs]
}

// release returns a receive's parity buffers to the pool.
func (p *ecPool) release(e *ecRecv) {
	if e == nil {
		return
	}
	for i, b := range e.parity {
		if b != nil {
			p.free = append(p.free, b)
			e.parity[i] = nil
		}
	}
	e.code, e.last = nil, nil
}

// codeOf returns the code of sub-message s: only the last may be short.
func (e *ecRecv) codeOf(s uint32) reliability.Codec {
	if s == e.subs-1 {
		return e.last
	}
	return e.code
}

func (p *ecPool) take(size int) []byte {
	for i := len(p.free) - 1; i >= 0; i-- {
		if b := p.free[i]; cap(b) >= size {
			p.free[i] = p.free[len(p.free)-1]
			p.free = p.free[:len(p.free)-1]
			return b[:size]
		}
	}
	return make([]byte, size)
}

// txPackets is how many packets the sender's first pass of m holds.
func (p *ecPool) txPackets(m *recvMsg) uint64 {
	n := uint64(m.npkts)
	if e := m.ec; e != nil && e.code != nil {
		last := stripes(m.npkts, e.k, e.subs-1, m.geo.ChunkShift)
		lastM := e.last.M()
		n += uint64(e.code.M())*uint64(e.subs-1)<<m.geo.ChunkShift + uint64(lastM)*uint64(last)
	}
	return n
}

// dataPos is where data packet p stands in the sender's first pass: each
// earlier sub-message (always a full one) was followed by M*N parity.
func (p *ecPool) dataPos(m *recvMsg, pkt uint32) uint64 {
	e := m.ec
	if e == nil || e.code == nil {
		return uint64(pkt)
	}
	s := uint64(pkt>>m.geo.ChunkShift) / uint64(e.k)
	return uint64(pkt) + s*uint64(e.code.M())<<m.geo.ChunkShift
}

// parityPos is where packet j of parity chunk i of sub-message s stands in
// the sender's first pass.
func (p *ecPool) parityPos(m *recvMsg, s, i, j uint32) uint64 {
	e := m.ec
	S := stripes(m.npkts, e.k, s, m.geo.ChunkShift)
	dataEnd := min((uint64(s)+1)*uint64(e.k)<<m.geo.ChunkShift, uint64(m.npkts))
	return dataEnd + uint64(s)*uint64(e.code.M())<<m.geo.ChunkShift + uint64(i)*uint64(S) + uint64(j)
}

// chunkWhole frees the parity of a sub-message once all its data is in.
func (p *ecPool) chunkWhole(m *recvMsg, c uint32) {
	e := m.ec
	s := c / e.k
	end := min((s+1)*e.k, m.nchunks)
	if e.parity[s] != nil && m.chunks.nextClear(s*e.k, end) == end {
		p.free = append(p.free, e.parity[s])
		e.parity[s] = nil
	}
}

// dataArrived notes data packet pkt in its stripe and decodes the stripe
// if parity that arrived earlier now makes that possible.
func (p *ecPool) dataArrived(now monotime.Time, r *receiver, m *recvMsg, pkt uint32) {
	e := m.ec
	c := pkt >> m.geo.ChunkShift
	s, j := c/e.k, pkt&(1<<m.geo.ChunkShift-1)
	mi := s<<m.geo.ChunkShift + j
	e.masks[mi] |= 1 << (c % e.k)
	p.tryDecode(now, r, m, s, j)
}

func (r *receiver) onParity(now monotime.Time, pk *wire.Parity) error {
	m, err := r.accepting(pk.Msg, &pk.Geometry)
	if m == nil {
		return err
	}
	first := !m.known
	if first {
		scheme := r.c.schemeFor(reliability.Kind(pk.Scheme), pk.K, pk.M)
		if scheme == nil {
			return errMalformed
		}
		r.start(now, m, &pk.Geometry, scheme)
		m.imm = pk.Imm
	}
	e := m.ec
	if e.code == nil || pk.Sub >= e.subs || pk.Stripe >= stripes(m.npkts, e.k, pk.Sub, m.geo.ChunkShift) {
		return errMalformed
	}
	nm := e.codeOf(pk.Sub).M()
	if int(pk.Index) >= nm {
		return errMalformed
	}
	r.arrived(now, m, r.ec.parityPos(m, pk.Sub, uint32(pk.Index), pk.Stripe), first)
	mi := pk.Sub<<m.geo.ChunkShift + pk.Stripe
	bit := uint64(1) << (e.k + uint32(pk.Index))
	if r.ec.stripeWhole(m, pk.Sub, pk.Stripe) || e.masks[mi]&bit != 0 {
		return nil // not needed, or a duplicate
	}
	mtu := int(m.geo.MTU)
	if m.buf == nil { // virtual: only which shards arrived matters
		e.masks[mi] |= bit
		r.ec.tryDecode(now, r, m, pk.Sub, pk.Stripe)
		return nil
	}
	if e.parity[pk.Sub] == nil {
		e.parity[pk.Sub] = r.ec.take(nm * mtu << m.geo.ChunkShift)
	}
	off := (int(pk.Index)<<m.geo.ChunkShift + int(pk.Stripe)) * mtu
	copy(e.parity[pk.Sub][off:off+mtu], pk.Payload)
	e.masks[mi] |= bit
	r.ec.tryDecode(now, r, m, pk.Sub, pk.Stripe)
	return nil
}

func (p *ecPool) stripeWhole(m *recvMsg, s, j uint32) bool {
	real := realShards(m.npkts, m.ec.k, s, j, m.geo.ChunkShift)
	return m.ec.masks[s<<m.geo.ChunkShift+j]&real == real
}

// tryDecode rebuilds the missing data packets of stripe j of sub-message s
// straight into the posted buffer, if the code can.
func (p *ecPool) tryDecode(now monotime.Time, r *receiver, m *recvMsg, s, j uint32) {
	e := m.ec
	shift := m.geo.ChunkShift
	real := realShards(m.npkts, e.k, s, j, shift)
	mi := s<<shift + j
	have := e.masks[mi] | (1<<e.k-1)&^real // absent packets count as zeros
	code := e.codeOf(s)
	if e.masks[mi]&real == real || !code.Decodable(have) {
		return
	}
	if m.buf == nil { // virtual: decoding succeeds whenever it can
		p.recovered(now, r, m, s, j, real)
		return
	}
	k, nm, mtu := int(e.k), code.M(), int(m.geo.MTU)
	x := &p.c.ep.decoder
	x.init(mtu, k+nm)
	short := m.geo.PayloadLen(m.npkts-1) < mtu
	for c := range k {
		pkt := (s*e.k+uint32(c))<<shift + j
		off := uint64(pkt) * uint64(mtu)
		present := have&(1<<c) != 0
		switch {
		case real&(1<<c) == 0:
			x.shards[c] = x.zero
		case pkt == m.npkts-1 && short:
			x.shards[c] = x.pad[:0]
			if present {
				n := copy(x.pad, m.buf[off:m.geo.MsgLen])
				clear(x.pad[n:])
				x.shards[c] = x.pad
			}
		case present:
			x.shards[c] = m.buf[off : off+uint64(mtu)]
		default:
			x.shards[c] = m.buf[off:off:(off + uint64(mtu))]
		}
	}
	for i := range nm {
		x.shards[k+i] = nil
		if have&(1<<(k+i)) != 0 {
			off := (i<<shift + int(j)) * mtu
			x.shards[k+i] = e.parity[s][off : off+mtu]
		}
	}
	if err := code.Reconstruct(x.shards, have); err != nil {
		return
	}
	if pkt := m.npkts - 1; short && pkt>>shift/e.k == s && pkt&(1<<shift-1) == j && e.masks[mi]&(1<<(pkt>>shift%e.k)) == 0 {
		off := uint64(pkt) * uint64(mtu)
		copy(m.buf[off:m.geo.MsgLen], x.pad)
	}
	p.recovered(now, r, m, s, j, real)
}

// recovered marks the data packets of stripe j of sub-message s that were
// missing as present, now that decoding rebuilt them.
func (p *ecPool) recovered(now monotime.Time, r *receiver, m *recvMsg, s, j uint32, real uint64) {
	e := m.ec
	shift := m.geo.ChunkShift
	mi := s<<shift + j
	missing := real &^ e.masks[mi]
	e.masks[mi] |= real
	for c := range int(e.k) {
		if missing&(1<<c) == 0 {
			continue
		}
		pkt := (s*e.k+uint32(c))<<shift + j
		r.stats.RecoveredPackets++
		m.hi = max(m.hi, pkt+1)
		r.reportDecoded(m, pkt)
		r.accept(now, m, pkt)
		if m.state != recvPosted {
			return
		}
	}
}
