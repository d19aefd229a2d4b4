// Package sim is sdrnet's packet-level discrete-event simulator:
// topologies (leaf-spine, fat-tree, Clos, long haul), host models (NIC,
// context cache, host memory) that run the same protocol core as a real
// host, and workloads (messages, flows, collectives, training jobs). Its
// network elements are sim/network's and its events run on sim/engine.
package sim
