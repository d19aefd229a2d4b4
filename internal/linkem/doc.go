// Package linkem is a user-space link emulator: a UDP proxy that delays,
// rate-limits, loses, reorders and duplicates datagrams, per path and per
// direction, and can take a path down for a while.
//
// It exists because the kernels this project runs on have no netem (the
// sch_netem qdisc is not built, and often there is no tc either), yet the
// real UDP datapath must be tested against delay, loss, reordering and
// path failures. linkem does in user space what netem would do in the
// kernel, needs no privileges, and is the same on every machine.
//
// # Model
//
// A [Proxy] listens on a front address and forwards every datagram to one
// target. For each client source address it opens its own socket toward the
// target (a NAT-like mapping), so replies from the target come back to that
// socket and are forwarded to the right client. The socket takes replies
// from any port of the target's host, since a multipath target answers from
// several ports (sdrnet recv --paths N); datagrams from other hosts are
// dropped (Stats.Foreign). sdrnet sprays one connection over many UDP
// source ports, so each client source address is a path: paths are
// numbered 0, 1, 2, ... in the order their first datagram arrives, and can
// also be selected by client source port.
//
// Every path has two directions, forward (client to target) and reverse
// (target to client), each with its own [Impairment] and its own state. A
// datagram crossing one direction of one path goes through, in order:
//
//   - failure: dropped if the path is down when it arrives or when it would
//     be delivered ([Impairment.Down]);
//   - the token bucket ([Impairment.Rate], Burst) with a drop-tail queue
//     (Queue);
//   - loss: Bernoulli ([Impairment.Loss]) or Gilbert-Elliott ([Impairment.GE]);
//   - delay plus jitter (order-preserving), then the optional reordering
//     hold-back ([Impairment.Reorder]);
//   - duplication ([Impairment.Duplicate]): a second copy right after it.
//
// One goroutine per direction owns all of that direction's state: it takes
// batches of received datagrams from reader goroutines, decides their fate
// and departure time, keeps pending deliveries in a min-heap ordered by
// departure time (first in, first out on ties) and writes due datagrams in
// batches (recvmmsg/sendmmsg through golang.org/x/net where the platform has
// them). Buffers are pooled. Random decisions come from math/rand/v2 streams
// seeded from [Config.Seed], one per path, direction and kind of decision,
// so a run is reproducible given the same arrival order and times, and
// changing one knob (say duplication) does not change another's draws (say
// which packets are lost).
//
// # Kernel TCP (Linux)
//
// A [Tunnel] applies the same impairments between two network namespaces
// it creates, joined through TUN devices, so the kernel's TCP (or any other
// traffic) crosses them too. It needs root, /dev/net/tun and ip netns; its
// addresses (198.18.0.1 and .2) exist only inside its namespaces.
//
// # Specs
//
// [ParseSpec] reads the compact form the command line uses, for example
//
//	delay=25ms,jitter=1ms,rate=1Gbps,loss=1e-3,queue=4MiB path[3]:fail=2s-5s
//
// See [ParseSpec] for the grammar and [Config.String] for the reverse.
package linkem
