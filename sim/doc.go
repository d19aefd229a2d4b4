// Package sim is sdrnet's packet-level discrete-event simulator:
// topologies (leaf-spine, fat-tree, Clos, long haul) and workloads
// (messages, flows, collectives, training jobs). Its hosts, which run the
// same protocol core as a real host, are sim/hostmodel's; its network
// elements sim/network's; its events run on sim/engine.
package sim
