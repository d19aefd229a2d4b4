// Package sim is sdrnet's packet-level discrete-event simulator: network
// elements (links, queues, switches with shared buffers, PFC), topologies
// (leaf-spine, fat-tree, Clos, long haul), host models (NIC, context
// cache, host memory) that run the same protocol core as a real host, and
// workloads (messages, flows, collectives). Its events run on
// sim/engine.
package sim
