// Package sim is the workloads of sdrnet's packet-level discrete-event
// simulator: messages, flows, collectives and training jobs replayed from
// Chakra traces, moved by hosts that run the same protocol core as a real
// host. Its networks are sim/topology's, its hosts sim/hostmodel's, its
// network elements sim/network's; its events run on sim/engine.
package sim
