package main

import (
	"runtime"
	"testing"
)

func TestMemoryAvailable(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/meminfo")
	}
	if n := memoryAvailable(); n < 64<<20 || n > 1<<50 {
		t.Fatalf("memoryAvailable() = %d bytes", n)
	}
}
