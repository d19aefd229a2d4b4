package report

import (
	"testing"

	"github.com/sdrnet/sdrnet/sim/scenario"
)

func TestJudge(t *testing.T) {
	cell := func(cc, kind string, mean float64, retx uint64) scenario.Cell {
		return scenario.Cell{Runs: 1, Timing: scenario.Timing{Mean: mean}, RetxBytes: retx,
			Params: map[string]string{"transport.cc": cc, "workload.kind": kind, "topology.pfc": "off"}}
	}
	cells := []scenario.Cell{
		cell("none", "incast", 2, 1000), cell("dcqcn", "incast", 3, 50),
		cell("none", "allreduce", 1, 10), cell("dcqcn", "allreduce", 0.9, 0),
	}
	better, worse := map[string]string{"transport.cc": "none"}, map[string]string{"transport.cc": "dcqcn"}
	for _, tt := range []struct {
		name         string
		claim        scenario.Claim
		holds, total int
		summary      string
	}{
		{"mean everywhere", scenario.Claim{Better: better, Worse: worse}, 1, 2, "holds in 1 of 2 settings"},
		{"where", scenario.Claim{Better: better, Worse: worse, Where: map[string]string{"workload.kind": "incast"}}, 1, 1, "holds"},
		{"retx reversed", scenario.Claim{Better: worse, Worse: better, Metric: "retx_bytes", Factor: 10}, 2, 2, "holds in all 2 settings"},
		{"factor too high", scenario.Claim{Better: worse, Worse: better, Metric: "retx_bytes", Factor: 30}, 1, 2, "holds in 1 of 2 settings"},
		{"within a tolerance", scenario.Claim{Better: worse, Worse: better, Tolerance: 0.12}, 1, 2, "holds in 1 of 2 settings"},
		{"wide tolerance", scenario.Claim{Better: worse, Worse: better, Tolerance: 0.55}, 2, 2, "holds in all 2 settings"},
		{"no pair", scenario.Claim{Better: better, Worse: map[string]string{"transport.cc": "nscc"}}, 0, 0, "not judged"},
	} {
		v := Judge(cells, []scenario.Claim{tt.claim})[0]
		if v.Holds != tt.holds || len(v.Groups) != tt.total || len(v.Summary()) < len(tt.summary) || v.Summary()[:len(tt.summary)] != tt.summary {
			t.Errorf("%s: %+v: %q", tt.name, v, v.Summary())
		}
	}
	// sender_mean judges SDR-RDMA's timing: here the order flips.
	cells[0].AtSender, cells[1].AtSender = &scenario.Timing{Mean: 5}, &scenario.Timing{Mean: 4}
	if v := Judge(cells[:2], []scenario.Claim{{Better: better, Worse: worse, Metric: "sender_mean"}})[0]; v.Holds != 0 || len(v.Groups) != 1 {
		t.Errorf("sender_mean: %+v", v)
	}
	// Cells not timed at the sender are not judged by sender_mean (their
	// receiver mean is not put in its place).
	if v := Judge(cells[2:], []scenario.Claim{{Better: better, Worse: worse, Metric: "sender_mean"}})[0]; len(v.Groups) != 0 {
		t.Errorf("sender_mean without sender timing judged: %+v", v)
	}
	v := Judge(cells, []scenario.Claim{{Better: better, Worse: worse, Where: map[string]string{"workload.kind": "incast"}}})[0]
	if g := v.Groups[0]; g.Better != 2 || g.Worse != 3 || g.Figures() != "2s against 3s (1.50x)" {
		t.Errorf("pair %+v: %q", g, g.Figures())
	}
}

// TestJudgeDerivedParameter checks that a parameter following the
// compared one (topology.k auto follows workload.hosts) does not keep the
// cells apart, while one that varies on its own still groups them.
func TestJudgeDerivedParameter(t *testing.T) {
	cell := func(hosts, k, scheme string, mean float64) scenario.Cell {
		return scenario.Cell{Runs: 1, Timing: scenario.Timing{Mean: mean},
			Params: map[string]string{"workload.hosts": hosts, "topology.k": k, "transport.scheme": scheme}}
	}
	cells := []scenario.Cell{
		cell("64", "8", "gbn", 1), cell("1024", "18", "gbn", 3),
		cell("64", "8", "csaud", 1), cell("1024", "18", "csaud", 0.5),
	}
	v := Judge(cells, []scenario.Claim{{Better: map[string]string{"workload.hosts": "64"}, Worse: map[string]string{"workload.hosts": "1024"}}})[0]
	if len(v.Groups) != 2 || v.Holds != 1 {
		t.Errorf("hosts 64 against 1024 on fabrics of their size: %+v", v)
	}
	// Comparing schemes, k varies with the hosts, not with the scheme:
	// the groups are the two sizes.
	v = Judge(cells, []scenario.Claim{{Better: map[string]string{"transport.scheme": "csaud"}, Worse: map[string]string{"transport.scheme": "gbn"}}})[0]
	if len(v.Groups) != 2 || v.Holds != 1 {
		t.Errorf("csaud against gbn at two sizes: %+v", v)
	}
}
