// Package network is the simulator's network elements: packets and their
// pool, links, queues and switch output ports (Egress), priority flow
// control, switch memory shared by a switch's ports with its ECN marking,
// loss models, and the histograms they keep. It knows nothing of hosts,
// topologies or workloads; its events run on sim/engine.
package network
