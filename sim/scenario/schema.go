package scenario

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sdrnet/sdrnet/internal/autoscheme"
	"github.com/sdrnet/sdrnet/internal/cc"
	"github.com/sdrnet/sdrnet/internal/monotime"
	"github.com/sdrnet/sdrnet/internal/path"
	"github.com/sdrnet/sdrnet/internal/reliability"
	"github.com/sdrnet/sdrnet/internal/units"
	"github.com/sdrnet/sdrnet/sim/topology"
)

// field is one known parameter: its default (empty: none) and its parser,
// whose error says what form is expected.
type field struct {
	def   string
	parse func(string) (any, error)
}

func oneOf(choices ...string) func(string) (any, error) {
	return func(s string) (any, error) {
		for _, c := range choices {
			if s == c {
				return s, nil
			}
		}
		return nil, fmt.Errorf("want one of %s", strings.Join(choices, ", "))
	}
}

func intIn(lo, hi int) func(string) (any, error) {
	return func(s string) (any, error) {
		v, err := strconv.Atoi(s)
		if err != nil || v < lo || v > hi {
			return nil, fmt.Errorf("want an integer in %d..%d", lo, hi)
		}
		return v, nil
	}
}

func size(lo, hi int64) func(string) (any, error) {
	return func(s string) (any, error) {
		v, err := units.ParseSize(s)
		if err != nil || v < lo || v > hi {
			return nil, fmt.Errorf("want a size in %s..%s, like 64KiB or 1GiB", units.FormatSize(lo), units.FormatSize(hi))
		}
		return v, nil
	}
}

// fatTreeArity is a fat-tree's k, or "auto": the smallest fat-tree that
// holds the job (Grid works it out per cell).
func fatTreeArity(s string) (any, error) {
	if s == "auto" {
		return s, nil
	}
	if v, err := strconv.Atoi(s); err == nil && v >= 2 && v <= 64 && v%2 == 0 {
		return v, nil
	}
	return nil, fmt.Errorf("want an even integer in 2..64, or auto (the smallest fat-tree that holds workload.hosts)")
}

// sharedMemory is a switch's memory shared by its ports, or "off" (also
// 0) for a buffer of its own per port.
func sharedMemory(s string) (any, error) {
	if s == "off" {
		return int64(0), nil
	}
	v, err := units.ParseSize(s)
	if err != nil || v < 0 {
		return nil, fmt.Errorf("want off (a buffer per port) or a size shared by the switch's ports, like 3MiB")
	}
	return v, nil
}

// bitRate and kilometres are parsed rates (bit/s) and distances, typed
// apart from plain numbers so that Number can say their unit.
type (
	bitRate    float64
	kilometres float64
)

func rate(s string) (any, error) {
	v, err := units.ParseRate(s)
	if err != nil || v <= 0 {
		return nil, fmt.Errorf("want a positive rate, like 400Gbps or 10Gbit/s")
	}
	return bitRate(v), nil
}

func duration(s string) (any, error) {
	d, err := units.ParseDuration(s)
	if err != nil || d < 0 {
		return nil, fmt.Errorf("want a non-negative duration, like 25ms or 1us")
	}
	return monotime.FromStd(d), nil
}

func probability(s string) (any, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v >= 1 {
		return nil, fmt.Errorf("want a probability in [0, 1), like 1e-3")
	}
	return v, nil
}

func nonNegative(s string) (any, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 {
		return nil, fmt.Errorf("want a non-negative number")
	}
	return v, nil
}

func positive(s string) (any, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 {
		return nil, fmt.Errorf("want a positive number, like 2 or 0.5")
	}
	return v, nil
}

func distance(s string) (any, error) {
	num, ok := strings.CutSuffix(s, "km")
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || v < 0 {
		return nil, fmt.Errorf("want a distance in km, like 3750km")
	}
	return kilometres(v), nil
}

// autoScheme is transport.scheme "auto": every cell gets its own chooser.
type autoScheme struct{}

func scheme(s string) (any, error) {
	sc, auto, err := autoscheme.Parse(s)
	if auto {
		return autoScheme{}, nil
	}
	return sc, err
}

func selector(s string) (any, error) { return path.ParseKind(s) }

func congestion(s string) (any, error) { return cc.Parse(s) }

func balancer(s string) (any, error) {
	if k, ok := topology.ParseBalancer(s); ok {
		return k, nil
	}
	return nil, fmt.Errorf("want ecmp, e-ecmp, pinned, flowlet or te")
}

// text is any string, as a file name.
func text(s string) (any, error) { return s, nil }

func fraction(s string) (any, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > 1 {
		return nil, fmt.Errorf("want a fraction in [0, 1], like 0.5")
	}
	return v, nil
}

// schema lists every parameter a scenario may set.
var schema = map[string]field{
	"topology.kind":             {"longhaul", oneOf("longhaul", "dumbbell", "leafspine", "fattree", "meta")},
	"topology.leaves":           {"8", intIn(1, 1<<12)},
	"topology.spines":           {"4", intIn(1, 1<<12)},
	"topology.hosts_per_leaf":   {"8", intIn(1, 1<<12)},
	"topology.k":                {"8", fatTreeArity},
	"topology.zones":            {"2", intIn(1, 64)},
	"topology.atsw":             {"4", intIn(1, 1<<12)},
	"topology.fabric_rate":      {"", rate},
	"topology.link_delay":       {"1us", duration},
	"topology.deep_queue":       {"0", size(0, 1<<40)},
	"topology.oversubscription": {"", positive},
	"topology.core_rate":        {"", rate},
	"topology.core_delay":       {"", duration},
	"topology.ecn_max":          {"0", size(0, 1<<40)},
	"topology.ecn_pmax":         {"1", fraction},
	"topology.buffer":           {"off", sharedMemory},
	"topology.deep_buffer":      {"0", size(0, 1<<40)},
	"topology.buffer_alpha":     {"1", positive},
	"topology.pfc":              {"off", oneOf("off", "on")},
	"topology.control_priority": {"on", oneOf("on", "off")},
	"topology.pfc_xoff":         {"256KiB", size(1, 1<<40)},
	"topology.pfc_xon":          {"0", size(0, 1<<40)},
	"topology.pfc_headroom":     {"0", size(0, 1<<40)},
	"topology.pfc_watchdog":     {"100ms", duration},
	"failure.switches":          {"0", intIn(0, 1<<16)},
	"failure.recover":           {"0", duration},
	"routing.balancer":          {"e-ecmp", balancer},
	"routing.flowlet_gap":       {"256us", duration},
	"metrics.queue_sample":      {"1us", duration},
	"failure.links":             {"0", intIn(0, 1<<16)},
	"failure.at":                {"0", duration},
	"failure.detect":            {"1ms", duration},
	"transport.qps":             {"1", intIn(1, 128)},
	"transport.select":          {"single", selector},
	"transport.dwrr_window":     {strconv.Itoa(path.DWRRWindowRTTs), intIn(1, path.MaxDWRRWindowRTTs)},
	"transport.window":          {"0", size(0, 1<<40)},
	"transport.admission":       {"0", intIn(0, 1<<16)},
	"transport.cc":              {"none", congestion},
	"transport.auth":            {"none", oneOf("none", "header", "full")},
	"workload.placement":        {"packed", oneOf("packed", "fragmented")},
	"workload.placement_seed":   {"0", intIn(0, 1<<30)},
	"workload.background":       {"0", fraction},
	"workload.bg_size":          {"1MiB", size(1, 1<<30)},
	"workload.bg_period":        {"100us", duration},
	"workload.bg_until":         {"10ms", duration},
	"topology.hosts_per_site":   {"1", intIn(1, 1<<16)},
	"topology.gpus_per_server":  {"1", intIn(1, 1<<10)},
	"topology.nvlink_rate":      {"3600Gbps", rate},
	"topology.nvlink_latency":   {"1us", duration},
	"topology.sites":            {"2", intIn(2, 64)},
	"topology.host_rate":        {"400Gbps", rate},
	"topology.host_delay":       {"1us", duration},
	"topology.trunk_rate":       {"400Gbps", rate},
	"topology.distance":         {"", distance},
	"topology.trunk_delay":      {"", duration},
	"topology.loss":             {"0", probability},
	"topology.burst":            {"0", nonNegative},
	"topology.queue":            {"0", size(0, 1<<40)},
	"topology.ecn":              {"0", size(0, 1<<40)},
	"transport.scheme":          {"sr", scheme},
	"transport.rto_factor":      {strconv.Itoa(reliability.DefaultRTOFactor), positive},
	"transport.mtu":             {"4096", size(64, 65000)},
	"transport.chunk":           {"64KiB", size(64, 1<<30)},
	"workload.kind":             {"messages", oneOf("messages", "allreduce", "permutation", "alltoall", "incast", "training")},
	"workload.trace":            {"", text},
	"workload.groups":           {"", text},
	"workload.model":            {"dp", oneOf("dp", "megatron")},
	"workload.algorithm":        {"ring", oneOf("ring", "tree")},
	"workload.channels":         {"1", intIn(1, 64)},
	"workload.layers":           {"8", intIn(1, 1<<16)},
	"workload.hidden":           {"4096", intIn(1, 1<<20)},
	"workload.seq_len":          {"2048", intIn(1, 1<<24)},
	"workload.micro_batch":      {"1", intIn(1, 1<<16)},
	"workload.micro_batches":    {"4", intIn(1, 1<<16)},
	"workload.tp":               {"1", intIn(1, 1<<16)},
	"workload.pp":               {"1", intIn(1, 1<<16)},
	"workload.ep":               {"1", intIn(1, 1<<16)},
	"workload.gpu_tflops":       {"400", positive},
	"workload.forward":          {"100us", duration},
	"workload.backward":         {"200us", duration},
	"workload.overlap":          {"on", oneOf("on", "off")},
	"metrics.timeline":          {"on", oneOf("on", "off")},
	"workload.size":             {"1MiB", size(1, 4<<30)},
	"workload.count":            {"10", intIn(1, 1_000_000)},
	"workload.rounds":           {"0", intIn(0, 1<<20)},
	"workload.bytes":            {"0", size(0, 1<<50)},
	"workload.min_count":        {"1", intIn(1, 1_000_000)},
	"workload.hosts":            {"4", intIn(2, 1<<16)},
	"workload.limit":            {"1h", duration},
	"workload.payload":          {"virtual", oneOf("virtual", "real")},
	"nic.qp_cache":              {"0", intIn(0, 1<<20)},
	"nic.qp_miss":               {"1us", duration},
	"workload.depth":            {"1", intIn(1, 1<<16)},
	"host.translation":          {"off", oneOf("off", "ats", "emtt")},
	"host.memory":               {"gpu", oneOf("gpu", "host")},
	"host.page":                 {"4KiB", size(1, 1<<30)},
	"host.atc":                  {"32", intIn(1, 1<<24)},
	"host.iotlb":                {"64", intIn(1, 1<<24)},
	"host.ats_latency":          {"550ns", duration},
	"host.walk_latency":         {"330ns", duration},
	"host.outstanding":          {"4", intIn(1, 1<<16)},
	"host.pinning":              {"off", oneOf("off", "all", "on_demand")},
	"host.guest_memory":         {"64GiB", size(1, 1<<50)},
	"host.pin_per_gib":          {"250ms", duration},
	"host.pin_unit":             {"2MiB", size(1, 1<<40)},
	"host.fault":                {"5us", duration},
	"host.map_cache":            {"0", intIn(0, 1<<30)},
	"host.boot":                 {"5s", duration},
	"host.boot_touch":           {"1GiB", size(0, 1<<50)},
}

// Value returns parameter path of the point, parsed. The scenario was
// checked when loaded, so parsing cannot fail here.
func (p Point) Value(path string) any {
	v, ok := p.Values[path]
	if !ok {
		return nil
	}
	out, err := schema[path].parse(v)
	if err != nil {
		panic(fmt.Sprintf("scenario: unchecked value %q for %s: %v", v, path, err))
	}
	return out
}

// Number returns a parameter's value as a number in the unit the output
// files use: sizes in bytes, rates in bit/s, durations in seconds,
// distances in km, and unit "" for counts and other plain numbers. ok is
// false where the value is no number (a scheme, on or off) or the path is
// unknown.
func Number(path, value string) (x float64, unit string, ok bool) {
	f, known := schema[path]
	if !known {
		return 0, "", false
	}
	v, err := f.parse(value)
	if err != nil {
		return 0, "", false
	}
	switch v := v.(type) {
	case int64:
		return float64(v), "bytes", true
	case bitRate:
		return float64(v), "bps", true
	case monotime.Duration:
		return v.Seconds(), "s", true
	case kilometres:
		return float64(v), "km", true
	case int:
		return float64(v), "", true
	case float64:
		return v, "", true
	}
	return 0, "", false
}
