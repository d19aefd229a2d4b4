//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// thpControl is where the kernel says whether transparent huge pages are
// on: "always", "madvise" (only regions that ask) or "never".
const thpControl = "/sys/kernel/mm/transparent_hugepage/enabled"

// useHugePages asks the kernel to back the simulator's heap with 2 MiB
// pages, up to reserve bytes of it.
//
// Why: a large fabric's run spends its time on the first touch of a
// port, a packet or a connection among hundreds of MiB of them, and with
// 4 KiB pages nearly every such touch also misses the TLB and walks the
// page table, which huge pages avoid (bench/htsim/run.sh measures both;
// the figures are in docs/performance.md).
//
// How: the Go runtime maps heap memory as the heap grows and does not ask
// for huge pages, and under the kernel's usual "madvise" mode only
// regions marked MADV_HUGEPAGE get them. So the heap is grown once, up
// front, by a block that is never touched; the block's range is marked;
// then the block is freed and handed back (debug.FreeOSMemory), which
// keeps the mark. What the run allocates later lands there (the runtime
// reuses free pages before it maps new ones) and faults in huge pages.
// The price is resident memory: a 2 MiB page counts whole once any byte
// of it is used, and the runtime returns less of a huge page to the
// kernel than of small ones.
func useHugePages(reserve int) error {
	mode, err := os.ReadFile(thpControl)
	if err != nil {
		return fmt.Errorf("this kernel offers no transparent huge pages: %w", err)
	}
	if bytes.Contains(mode, []byte("[never]")) {
		return fmt.Errorf("transparent huge pages are off (%s says never)", thpControl)
	}
	// Under strict overcommit the untouched block would be charged in
	// full, and a heap the kernel refuses to map is a fatal error.
	if policy, err := os.ReadFile(overcommitControl); err == nil && bytes.Equal(bytes.TrimSpace(policy), []byte("2")) {
		return fmt.Errorf("the kernel counts every mapped byte (%s is 2), so no heap is reserved", overcommitControl)
	}
	err = markHugePages(reserve)
	debug.FreeOSMemory()
	return err
}

// overcommitControl is the kernel's overcommit policy; 2 is strict.
const overcommitControl = "/proc/sys/vm/overcommit_memory"

// markHugePages grows the heap by n untouched bytes and marks them
// MADV_HUGEPAGE; the block is garbage when it returns.
func markHugePages(n int) error {
	block := make([]byte, n)
	// A block this large starts on a page (the runtime's pages are
	// multiples of the kernel's); madvise wants whole pages.
	page := os.Getpagesize()
	if err := unix.Madvise(block[:n/page*page], unix.MADV_HUGEPAGE); err != nil {
		return fmt.Errorf("madvise(MADV_HUGEPAGE): %w", err)
	}
	return nil
}
