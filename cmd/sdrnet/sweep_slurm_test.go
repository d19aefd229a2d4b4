package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sdrnet/sdrnet/sim/sweep"
)

// TestSweepOnSlurm runs a sweep the way a cluster user does: Slurm and
// MUNGE from Debian's packages, a one-node cluster on this machine, the
// job array of deploy/slurm submitted with sbatch, the results merged
// and compared byte for byte with sdrnet sim of the same scenario.
func TestSweepOnSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: installs and starts a Slurm cluster")
	}
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skip("needs root on Linux: it installs Slurm and runs its daemons")
	}
	installSlurm(t)
	bin := sdrnetBinary(t)
	dir := t.TempDir()
	env := startSlurm(t, dir)

	grid := []string{"csaud", "--set", "workload.size=256KiB"}
	sweepDir := filepath.Join(dir, "sweep")
	runSdrnet(t, env, bin, append([]string{"sweep", "plan", "--out", sweepDir, "--cells-per-task", "2"}, grid...)...)
	m, err := sweep.Load(sweepDir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Tasks < 2 {
		t.Fatalf("the plan has %d tasks: want an array of several", m.Tasks)
	}
	script, err := filepath.Abs("../../deploy/slurm/sweep.sbatch")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sbatch := exec.CommandContext(ctx, "sbatch", "--wait", fmt.Sprintf("--array=0-%d", m.Tasks-1),
		"--output="+filepath.Join(dir, "task-%a.out"), script, sweepDir)
	sbatch.Env = append(env, "SDRNET="+bin)
	if out, err := sbatch.CombinedOutput(); err != nil {
		t.Fatalf("sbatch: %v\n%s", err, out)
	}
	if outs, _ := filepath.Glob(filepath.Join(dir, "task-*.out")); len(outs) != m.Tasks {
		t.Fatalf("%d tasks left output, want the array's %d", len(outs), m.Tasks)
	}
	status := runSdrnet(t, env, bin, "sweep", "status", sweepDir)
	if !strings.Contains(status, fmt.Sprintf("%d of %d cells done", len(m.Cells), len(m.Cells))) {
		t.Fatalf("after the array: %s", status)
	}
	runSdrnet(t, env, bin, "sweep", "merge", sweepDir)
	local := filepath.Join(dir, "local")
	runSdrnet(t, env, bin, append([]string{"sim", "--out", local}, grid...)...)
	names, _ := filepath.Glob(filepath.Join(local, "*"))
	if len(names) < 3 {
		t.Fatalf("the local run wrote %v", names)
	}
	for _, name := range names {
		want, _ := os.ReadFile(name)
		got, err := os.ReadFile(filepath.Join(sweepDir, filepath.Base(name)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: the sweep on Slurm differs from the local run (%v)", filepath.Base(name), err)
		}
	}
}

// installSlurm installs Slurm and MUNGE from the distribution's packages
// where they are missing, or skips the test saying why it could not.
func installSlurm(t *testing.T) {
	t.Helper()
	missing := false
	for _, p := range []string{"sbatch", "slurmctld", "slurmd", "munged", "mungekey"} {
		if _, err := exec.LookPath(p); err != nil {
			missing = true
		}
	}
	if !missing {
		return
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		t.Skip("Slurm is not installed and there is no apt-get to install it (slurm-wlm, munge)")
	}
	// Keep the packages from starting their own daemons (Debian's
	// policy-rc.d: 101 is "action forbidden"); this test runs its own on
	// ports of their own, and stops only those.
	const policy = "/usr/sbin/policy-rc.d"
	if _, err := os.Stat(policy); os.IsNotExist(err) {
		if err := os.WriteFile(policy, []byte("#!/bin/sh\nexit 101\n"), 0o755); err == nil {
			defer os.Remove(policy)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	install := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("apt-get %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	err := install("install", "-y", "--no-install-recommends", "slurm-wlm", "munge")
	if err != nil {
		if uerr := install("update"); uerr == nil {
			err = install("install", "-y", "--no-install-recommends", "slurm-wlm", "munge")
		}
	}
	if err != nil {
		t.Skipf("could not install Slurm from the distribution's packages: %v", err)
	}
}

// startSlurm starts MUNGE, slurmctld and slurmd for a one-node cluster
// whose files all live in dir, on ports of their own, and returns the
// environment that points Slurm's commands at it. Cleanup stops them.
func startSlurm(t *testing.T, dir string) []string {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(slurmLogs(dir))
		}
	})
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ = strings.Cut(host, ".")
	for _, d := range []string{"state", "spool"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	key, sock := filepath.Join(dir, "munge.key"), filepath.Join(dir, "munge.sock")
	if out, err := exec.Command("mungekey", "--create", "--keyfile", key).CombinedOutput(); err != nil {
		t.Fatalf("mungekey: %v\n%s", err, out)
	}
	ctld, slurmd := freeTCPPort(t), freeTCPPort(t)
	conf := filepath.Join(dir, "slurm.conf")
	config := fmt.Sprintf(`ClusterName=sdrnettest
SlurmctldHost=%[1]s(127.0.0.1)
SlurmctldPort=%[3]d
SlurmdPort=%[4]d
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=%[2]s/munge.sock
CredType=cred/munge
StateSaveLocation=%[2]s/state
SlurmdSpoolDir=%[2]s/spool
SlurmctldPidFile=%[2]s/slurmctld.pid
SlurmdPidFile=%[2]s/slurmd.pid
SlurmctldLogFile=%[2]s/slurmctld.log
SlurmdLogFile=%[2]s/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
NodeName=%[1]s NodeAddr=127.0.0.1 CPUs=%[5]d State=UNKNOWN
PartitionName=sdrnet Nodes=ALL Default=YES MaxTime=INFINITE State=UP
`, host, dir, ctld, slurmd, runtime.NumCPU())
	if err := os.WriteFile(conf, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	daemon(t, dir, "munged", "--foreground", "--force", "--key-file", key, "--socket", sock,
		"--pid-file", filepath.Join(dir, "munged.pid"), "--log-file", filepath.Join(dir, "munged.log"),
		"--seed-file", filepath.Join(dir, "munged.seed"))
	waitFor(t, time.Minute, "MUNGE's socket", func() bool { _, err := os.Stat(sock); return err == nil })
	daemon(t, dir, "slurmctld", "-D", "-f", conf)
	daemon(t, dir, "slurmd", "-D", "-f", conf)
	env := append(os.Environ(), "SLURM_CONF="+conf)
	waitFor(t, time.Minute, "the node to be idle", func() bool {
		cmd := exec.Command("sinfo", "--noheader", "--format=%t")
		cmd.Env = env
		out, _ := cmd.Output()
		return strings.TrimSpace(string(out)) == "idle"
	})
	return env
}

// daemon starts a cluster daemon in the foreground, its output in dir,
// and stops it when the test ends.
func daemon(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	out, err := os.Create(filepath.Join(dir, name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		out.Close()
	})
}

// slurmLogs gathers the cluster's logs and the tasks' output, for a
// failure's message.
func slurmLogs(dir string) string {
	var b strings.Builder
	for _, pattern := range []string{"*.log", "*.out"} {
		files, _ := filepath.Glob(filepath.Join(dir, pattern))
		for _, f := range files {
			data, _ := os.ReadFile(f)
			if len(data) > 4000 {
				data = data[len(data)-4000:]
			}
			fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(f), data)
		}
	}
	return b.String()
}

// runSdrnet runs sdrnet with env and returns its standard output, failing the
// test with its output if it fails.
func runSdrnet(t *testing.T, env []string, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sdrnet %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// freeTCPPort returns a TCP port on loopback that nothing uses right now.
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
