package main

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// limitMemory gives the garbage collector a soft limit of most of the
// memory this process may use (the machine's, or its cgroup's under
// Slurm, Kubernetes or a container), unless GOMEMLIMIT says otherwise.
// A grid's cells run side by side and each heap may grow to twice what it
// holds before the collector runs: csaud's full grid on two workers, its
// 1024-GPU cells holding about 8 GiB each, peaked at 21 GiB on a 24 GiB
// machine (docs/benchmarks.md). With the limit the collector runs more
// often instead, as the total nears it.
func limitMemory() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if total := memoryAvailable(); total > 0 {
		debug.SetMemoryLimit(total / 100 * 85)
	}
}

// memoryAvailable returns the smaller of the machine's memory and the
// cgroup's limit, in bytes; 0 where neither is known.
func memoryAvailable() int64 {
	var total int64
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err == nil {
					total = kb << 10
				}
			}
		}
		f.Close()
	}
	for _, file := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
		break
	}
	return total
}
