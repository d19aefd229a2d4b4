// Package hostmodel is the simulator's hosts: a NIC that serializes what
// the real protocol core (internal/core) hands it onto the host's link,
// the NIC's cache of connection contexts, and the path its DMAs take to
// host memory (address translation, pinning). It knows the network
// elements, not topologies or workloads.
package hostmodel
