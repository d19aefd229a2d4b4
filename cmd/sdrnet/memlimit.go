package main

import (
	"bufio"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
)

// prepareHeap sets the heap up for a simulation: the memory limit, and
// with hugePages as much of the heap as the limit allows (at most
// maxHugePageReserve) on huge pages. Where huge pages cannot be had it
// says why on w and the run goes on with small ones: results do not
// depend on it.
func prepareHeap(w io.Writer, hugePages bool) {
	limitMemory()
	if !hugePages {
		return
	}
	// An int holds it on 64-bit machines; on 32-bit ones half the
	// address space is the most a block may take.
	reserve := min(debug.SetMemoryLimit(-1), maxHugePageReserve, math.MaxInt/2)
	if err := useHugePages(int(reserve)); err != nil {
		fmt.Fprintf(w, "sdrnet: --huge-pages: %v; running on small pages\n", err)
	}
}

// maxHugePageReserve bounds the heap --huge-pages reserves: address space
// only, but a machine with no memory limit known would otherwise reserve
// without end.
const maxHugePageReserve = 16 << 30

// hugePagesUsage is the --huge-pages flag's help.
const hugePagesUsage = "back the heap with 2 MiB pages (Linux): a large fabric runs faster, with more memory resident"

// limitMemory gives the garbage collector a soft limit of most of the
// memory this process may use (the machine's, or its cgroup's under
// Slurm, Kubernetes or a container), unless GOMEMLIMIT says otherwise.
// A grid's cells run side by side and each heap may grow to twice what it
// holds before the collector runs, so large cells side by side can
// outgrow the machine. With the limit the collector runs more often
// instead, as the total nears it.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if total := memoryAvailable(os.DirFS("/")); total > 0 {
		debug.SetMemoryLimit(total / 100 * 85)
	}
}

// memoryAvailable returns, in bytes, the least of the machine's memory
// and the memory limits of this process's cgroup and every cgroup above
// it; 0 where none is known. root is the file system's root. The
// process's own cgroup is the one that counts: Slurm puts a job in a
// cgroup of its own deep in the hierarchy (.../job_N/step_M) without a
// namespace, so the root's limit is not the job's --mem.
func memoryAvailable(root fs.FS) int64 {
	var least int64
	lower := func(n int64) {
		if n > 0 && (least == 0 || n < least) {
			least = n
		}
	}
	if f, err := root.Open("proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err == nil {
					lower(kb << 10)
				}
			}
		}
		f.Close()
	}
	// /proc/self/cgroup: "0::PATH" under cgroup v2, "N:memory:PATH" for
	// v1's memory controller.
	data, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return least
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		dir, file := "sys/fs/cgroup", "memory.max"
		switch {
		case f[0] == "0" && f[1] == "":
		case strings.Contains(","+f[1]+",", ",memory,"):
			dir, file = "sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		for p := path.Clean("/" + f[2]); ; p = path.Dir(p) {
			if data, err := fs.ReadFile(root, path.Join(dir, p, file)); err == nil {
				// "max" (no limit) does not parse and lowers nothing.
				if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil {
					lower(n)
				}
			}
			if p == "/" {
				break
			}
		}
	}
	return least
}
