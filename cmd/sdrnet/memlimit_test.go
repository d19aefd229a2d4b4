package main

import (
	"os"
	"runtime"
	"testing"
	"testing/fstest"
)

func TestMemoryAvailable(t *testing.T) {
	const gib = 1 << 30
	meminfo := &fstest.MapFile{Data: []byte("MemTotal:       25165824 kB\nMemFree: 1 kB\n")} // 24 GiB
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tt := range []struct {
		name string
		fs   fstest.MapFS
		want int64
	}{
		{"machine only", fstest.MapFS{"proc/meminfo": meminfo}, 24 * gib},
		{"v2, no limit anywhere", fstest.MapFS{"proc/meminfo": meminfo,
			"proc/self/cgroup":                    file("0::/user.slice\n"),
			"sys/fs/cgroup/memory.max":            file("max\n"),
			"sys/fs/cgroup/user.slice/memory.max": file("max\n")}, 24 * gib},
		{"v2, a Slurm job's limit deep in the tree", fstest.MapFS{"proc/meminfo": meminfo,
			"proc/self/cgroup": file("0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n"),
			"sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/memory.max":             file("10737418240\n"),
			"sys/fs/cgroup/system.slice/slurmstepd.scope/job_7/step_0/user/memory.max": file("max\n")}, 10 * gib},
		{"v2, the smallest on the way up wins", fstest.MapFS{"proc/meminfo": meminfo,
			"proc/self/cgroup":             file("0::/a/b\n"),
			"sys/fs/cgroup/a/memory.max":   file("2147483648\n"),
			"sys/fs/cgroup/a/b/memory.max": file("4294967296\n")}, 2 * gib},
		{"v1 memory controller", fstest.MapFS{"proc/meminfo": meminfo,
			"proc/self/cgroup": file("4:memory:/process_api/x\n3:cpuset:/\n"),
			"sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": file("8589934592\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes":               file("9223372036854771712\n")}, 8 * gib},
		{"nothing known", fstest.MapFS{}, 0},
	} {
		if got := memoryAvailable(tt.fs); got != tt.want {
			t.Errorf("%s: memoryAvailable = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestMemoryAvailableHere reads this machine's files.
func TestMemoryAvailableHere(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc and /sys")
	}
	if n := memoryAvailable(os.DirFS("/")); n < 64<<20 || n > 1<<50 {
		t.Fatalf("memoryAvailable = %d bytes", n)
	}
}
