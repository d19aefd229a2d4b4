package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// TestHugePagesBackTheHeap checks that after useHugePages a large slice
// the program then allocates and writes sits on huge pages.
func TestHugePagesBackTheHeap(t *testing.T) {
	mode, err := os.ReadFile(thpControl)
	if err != nil || bytes.Contains(mode, []byte("[never]")) {
		t.Skipf("no transparent huge pages here (%s: %q, %v)", thpControl, bytes.TrimSpace(mode), err)
	}
	if err := useHugePages(512 << 20); err != nil {
		t.Skipf("useHugePages: %v", err)
	}
	data := make([]byte, 64<<20)
	for i := 0; i < len(data); i += 4096 {
		data[i] = 1
	}
	at := uintptr(unsafe.Pointer(&data[0]))
	huge, found := anonHugeKiB(t, at)
	if !found {
		t.Fatalf("no mapping in /proc/self/smaps holds %#x", at)
	}
	if huge < 2048 {
		t.Errorf("the mapping holding a 64 MiB slice has %d KiB on huge pages; want at least one 2 MiB page (%s: %s)", huge, thpControl, bytes.TrimSpace(mode))
	}
}

// anonHugeKiB returns the AnonHugePages of the mapping holding addr.
func anonHugeKiB(t *testing.T, addr uintptr) (kib int, found bool) {
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		line := sc.Text()
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(f[0], "-"); ok && !strings.HasSuffix(f[0], ":") {
			a, errA := strconv.ParseUint(lo, 16, 64)
			b, errB := strconv.ParseUint(hi, 16, 64)
			if errA == nil && errB == nil {
				in = uint64(addr) >= a && uint64(addr) < b
				continue
			}
		}
		if in && f[0] == "AnonHugePages:" && len(f) >= 2 {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				t.Fatalf("smaps: %q", line)
			}
			return n, true
		}
	}
	return 0, false
}
