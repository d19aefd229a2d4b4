package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// layoutProbe, appended to a report, measures it as a browser lays it
// out and writes what it found into the page, which --dump-dom prints.
const layoutProbe = `<script>
window.addEventListener('load', function () {
  const d = document.documentElement;
  let wide = 0, svgs = 0, empty = 0;
  for (const s of document.querySelectorAll('svg')) {
    svgs++;
    const r = s.getBoundingClientRect();
    if (!s.closest('.scroll') && r.right > d.clientWidth + 1) wide++;
    if (r.width < 1 || r.height < 1) empty++;
  }
  const p = document.createElement('pre');
  p.id = 'probe';
  p.textContent = 'scrollWidth=' + d.scrollWidth + ' clientWidth=' + d.clientWidth + ' svgs=' + svgs + ' wide=' + wide + ' empty=' + empty;
  document.body.appendChild(p);
});
</script>`

// TestReportsInBrowser opens built-in scenarios' reports in headless
// Chromium at 1400 px: nothing may stick out of the window (wide tables
// scroll inside their own box) and every plot has a size. Skipped where
// Chromium is not installed (apt-get install chromium).
func TestReportsInBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a browser")
	}
	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no Chromium on this machine (apt-get install chromium)")
	}
	dir := t.TempDir()
	for _, name := range []string{"meta-control", "incast-buffers", "sdr-allreduce"} {
		t.Run(name, func(t *testing.T) {
			out := filepath.Join(dir, name)
			var stdout, stderr bytes.Buffer
			if err := execute([]string{"sim", name, "--out", out}, &stdout, &stderr); err != nil {
				t.Fatalf("%v\n%s", err, stderr.String())
			}
			page, err := os.ReadFile(filepath.Join(out, "report.html"))
			if err != nil {
				t.Fatal(err)
			}
			probed := filepath.Join(out, "probed.html")
			page = bytes.Replace(page, []byte("</body>"), []byte(layoutProbe+"</body>"), 1)
			if err := os.WriteFile(probed, page, 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
				"--window-size=1400,1000", "--user-data-dir="+filepath.Join(out, "profile"), "--dump-dom", "file://"+probed)
			dom, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v", browser, err)
			}
			m := regexp.MustCompile(`scrollWidth=(\d+) clientWidth=(\d+) svgs=(\d+) wide=(\d+) empty=(\d+)`).FindStringSubmatch(string(dom))
			if m == nil {
				t.Fatalf("the probe did not run; page:\n%.500s", dom)
			}
			n := make([]int, len(m)-1)
			for i, s := range m[1:] {
				n[i], _ = strconv.Atoi(s)
			}
			if n[0] > n[1] {
				t.Errorf("the page is %d px wide in a %d px window: something sticks out (%s)", n[0], n[1], m[0])
			}
			if n[2] == 0 || n[3] > 0 || n[4] > 0 {
				t.Errorf("plots: %s (want some, none wider than the window, none empty)", m[0])
			}
			if strings.Contains(string(dom), "No plot") {
				t.Error("the report has an empty plot section")
			}
		})
	}
}
