// Package topology builds the simulator's networks from its hosts and
// network elements: sites joined by long-haul trunks, and datacenter
// fabrics (leaf-spine, fat-tree, Meta's zoned Clos) with their routing,
// switch-side load balancing (ECMP, E-ECMP, pinning, flowlets, traffic
// engineering), link and switch failures, and queue sampling. It knows
// hosts and network elements, not workloads.
package topology
