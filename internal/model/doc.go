// Package model is the analytic completion-time model of SDR-RDMA
// (section 4.2 of "SDR-RDMA: Software-Defined Reliability Architecture for
// Planetary Scale RDMA Communication"; summarized in
// shared/design/REFERENCES.md, section "SDR-RDMA"). It predicts how long one
// message of M bytes takes over a lossy long-haul link under selective
// repeat (SR-RTO, SR-NACK) and erasure coding (EC with an MDS or an XOR
// code, falling back to SR for what the code cannot recover).
//
// Notation (the paper's, where it has one):
//
//	M       message size in bytes
//	chunk   bitmap chunk size in bytes; N = chunk/MTU packets per chunk
//	C       = ceil(M/chunk) chunks in the message
//	T_INJ   = (chunk + N*header)*8/rate, injection time of one chunk
//	p       per-packet drop probability (independent drops)
//	p_chunk = 1 - (1-p)^N, probability that a chunk loses a packet
//	RTT     round-trip time; RTT/2 is the one-way delay
//	RTO     = RTT + a*RTT, SR-RTO's retransmission timeout
//	O       = RTO + T_INJ, SR's retry period (SR-NACK: O = RTT + T_INJ)
//	Y_i     attempts chunk i needs: Geometric(1-p_chunk) on {1,2,...}
//	        (RetryChunk, the paper's), or max_j of N_i Geometric(1-p) per
//	        packet attempts (RetryPacket): see RetryModel
//	k, m    data and parity chunks per EC sub-message; R = k/m
//	L       = ceil(C/k) sub-messages
//	b       EC fallback slack: FTO = injection + b*RTT
//
// All times are computed as float64 picoseconds and reported as
// monotime.Duration. The package does no I/O, reads no clock and uses no
// global randomness (MonteCarlo takes an explicit seed).
//
// # Two modes
//
// The paper's mode (Decode: DecodeChunk, Retry: RetryChunk, Timers:
// TimersAuto) is the paper's equations: chunk-level loss, whole-chunk
// retries, SR-NACK retried every O = RTT + T_INJ, EC's repair SR-RTO over
// the expected lost chunks. Both modes charge the parity the
// implementation sends, ceil(C/R) chunks: m per full sub-message and
// m' = ceil(k'*m/k) (at least 1) for a last one of k' < k chunks (see
// ecModel).
//
// This repository's mode (DecodeStripe, RetryPacket, TimersAuto) models
// internal/core. Its constants come from the implementation: T_pkt =
// (MTU + header)*8/rate; the receiver's estimate T_rx = (MTU +
// wire.ParityLen)*8/rate (core's packetTime); d = max(RTT/8, 1 us), the
// SR-NACK reordering wait (reliability.SelectiveRepeat.NackDelay, fraction
// Params.NackFraction); the re-NACK period 1.5 RTT + missing*T_rx (core's
// renackDelay; 1.5 is Params.RenackRTTs); RTO = RTT + a*RTT (a = 2,
// reliability.DefaultRTOFactor); b = 1 (reliability.DefaultFallbackB).
// SR-RTO is the same in both modes but for RetryPacket. Control packets
// (NACKs, the final ACK) are dropped with p like data, as on the
// simulator's trunk (Params.LosslessAcks turns that off).
//
// SR-NACK (impl.go, nackModel). Packet j is sent at j*T_pkt and arrives
// at a_j = (j+1)*T_pkt + RTT/2; the first pass is in at E = injection +
// RTT/2. A lost packet j < n-1 is revealed by the next one, at
// r_j = a_(j+1). Let i0 be the first loss (Geometric(p), in at most 64
// bins of equal mass) and t0 = r_(i0). The receiver NACKs i0 at
// n_first = t0 + d; gaps revealed while that timer runs are NACKed one d
// later, so a chain of NACK batches runs every d while losses keep coming
// (core's gapAt/gapHi): a loss revealed in (t0 + (k-2)d, t0 + (k-1)d] is
// NACKed at t0 + k*d, k >= 2 (the chain is taken not to break: exact when
// losses are dense or the message is short against d). Its resend arrives
// RTT + T_pkt later. The receiver then re-NACKs everything still missing
// at
//
//	tau_1 = n_first + 1.5 RTT + missing*T_rx,
//	      ~ 1.5 RTT + max(n_first, E)   (missing counts the packets of
//	                                     the first pass still to come),
//	tau_c = tau_1 + (c-1)*(1.5 RTT + n p^2 T_rx),
//
// answered at tau_c + RTT + T_pkt. Every NACK (a batch, or a re-NACK
// round) is lost with p_ack; given which were, packets fail independently,
// so with c rounds answered by t, l of them delivered (Binomial(c, 1-p_ack)),
//
//	P(T <= t | i0, l) = [i0's batch] * prod_batches
//	    ((1-p_ack)(1 - p^(2+l))^s + p_ack (1 - p^(1+l))^s) * (1-p)^rest,
//
// over the batches of s packets NACKed by t - RTT - T_pkt, rest being the
// packets whose batch is not yet answered (they must not have been lost).
// The last packet, if lost, is revealed by nothing: the sender's RTO
// resends it, in at injection + k*RTO + RTT/2 after k resends. At the
// sender, T + RTT/2, and with p_ack the final ACK is lost and the sender
// learns of completion one RTO later. The CDF is a step function; E[T]
// and its quantiles are exact over its steps.
//
// EC repair (impl.go, ecRounds). At the fallback timeout (T_base + b*RTT
// at the receiver) the receiver NACKs every missing data packet, F' of
// them; their resends are in an RTT (and F'*T_pkt) later, and what is
// still missing is re-NACKed every O_r = 1.5 RTT + F'*T_rx. A data shard
// is missing after r rounds iff its first copy and r resends were lost,
// q_r = p^(r+1); parity is never resent; a codeword has decoded once its
// remaining erasures are within its tolerance (an XOR group that lost two
// data packets needs only one resend). Hence, exactly for independent
// drops,
//
//	P(T <= T_r) = prod_codewords (1 - fail(data erasure q_r, parity p)),
//	T_0 = T_base,  T_r = T_base + (b+1)*RTT + F'*T_pkt + (r-1)*O_r.
//
// SR-RTO at the sender: T + RTT/2, and with p the final ACK is lost and
// the sender learns of completion one RTO later, as for SR-NACK.
//
// Not modeled: the sender's EC backstop (5 RTT after the first pass, it
// resends unacknowledged chunks, coinciding with the third re-NACK round),
// and for SR-RTO the loss of ACKs before the final one.
package model
