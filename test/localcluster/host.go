package localcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Names of everything the harness creates in the host network namespace.
// Only one cluster runs on a machine at a time (see lockPath), so fixed
// names are safe and a leftover from a crashed run is recognised by prefix.
const (
	namePrefix = "blc"     // every link and network namespace starts with it
	bridgeName = "blc-br0" // pods' veths are enslaved here; holds the gateway
	// The Service ClusterIPs are /32 addresses on the bridge (the dummy
	// link type is not available on every kernel).
	svcLink  = bridgeName
	netnsDir = "/run/netns" // where `ip netns` keeps namespaces
	lockPath = "/run/bind-operator-localcluster.lock"
	// createdLog lists, one a line, the host paths a cluster created
	// outside its work folder (mount points) and the work folder itself,
	// so the next Start can remove them after a crash.
	createdLog = "/run/bind-operator-localcluster.created"
)

// run runs a host tool and returns its error with its output.
func run(ctx context.Context, name string, args ...string) error {
	_, err := output(ctx, name, args...)
	return err
}

func output(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// checkPrerequisites fails with a sentence that says what to do.
func checkPrerequisites(o *Options) error {
	var errs []string
	if os.Geteuid() != 0 {
		errs = append(errs, "must run as root (network namespaces, veths, bind mounts)")
	}
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			errs = append(errs, fmt.Sprintf("%q not found in PATH (install iproute2/util-linux)", tool))
		}
	}
	if o.RequireNamed {
		if _, err := os.Stat(o.NamedPath); err != nil {
			errs = append(errs, fmt.Sprintf("named not found at %s: run `make deps` (apt-get install bind9 bind9-utils bind9-dnsutils)", o.NamedPath))
		}
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager"} {
		if _, err := os.Stat(filepath.Join(o.BinDir, b)); err != nil {
			errs = append(errs, fmt.Sprintf("%s not found in %s: run `hack/build-k8s-binaries.sh bin/k8s` (builds it from the Go module proxy)", b, o.BinDir))
		}
	}
	if o.OperatorBinary != "" {
		if _, err := os.Stat(o.OperatorBinary); err != nil {
			errs = append(errs, fmt.Sprintf("operator binary %s not found: run `make build`", o.OperatorBinary))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("localcluster prerequisites missing:\n  - %s", strings.Join(errs, "\n  - "))
	}
	return nil
}

// acquireLock takes the machine-wide lock, waiting while another cluster
// runs (parallel test packages serialise here). The lock dies with the
// process, so a crashed run never blocks the next one.
func acquireLock(ctx context.Context, wait time.Duration) (*os.File, error) {
	f, err := os.OpenFile(lockPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", lockPath, err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			_ = f.Truncate(0)
			_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", lockPath, err)
		}
		if time.Now().After(deadline) {
			_ = f.Close()
			return nil, fmt.Errorf("another local cluster holds %s for more than %s", lockPath, wait)
		}
		select {
		case <-ctx.Done():
			_ = f.Close()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// spawner starts every long-lived child from one OS thread that never exits,
// so Pdeathsig (tied to the parent thread) kills the children only when the
// harness process dies, never when the Go runtime retires a thread.
type spawner struct{ reqs chan spawnReq }

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

func newSpawner() *spawner {
	s := &spawner{reqs: make(chan spawnReq)}
	go func() {
		runtime.LockOSThread() // never unlocked: the thread lives as long as the process
		for r := range s.reqs {
			r.done <- r.cmd.Start()
		}
	}()
	return s
}

func (s *spawner) start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	s.reqs <- spawnReq{cmd: cmd, done: done}
	return <-done
}

// listNetns returns the network namespaces whose names start with prefix.
func listNetns(prefix string) []string {
	entries, _ := os.ReadDir(netnsDir)
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// listLinks returns the host links whose names start with prefix.
func listLinks(prefix string) []string {
	entries, _ := os.ReadDir("/sys/class/net")
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// netnsPids returns the processes living in a network namespace.
func netnsPids(ctx context.Context, ns string) []int {
	out, err := output(ctx, "ip", "netns", "pids", ns)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		if p, err := strconv.Atoi(f); err == nil && p != os.Getpid() {
			pids = append(pids, p)
		}
	}
	return pids
}

// deleteNetns kills whatever still runs inside the namespace and removes it.
func deleteNetns(ctx context.Context, ns string) error {
	for i := 0; i < 20; i++ {
		pids := netnsPids(ctx, ns)
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return run(ctx, "ip", "netns", "delete", ns)
}

// sweep removes what a crashed earlier run left behind: every namespace and
// link with the harness prefix (only called while holding the lock, so none
// of them belongs to a live cluster).
func sweep(ctx context.Context) []string {
	return append(sweepNet(ctx), sweepCreated()...)
}

// sweepNet removes the harness' namespaces (killing what runs in them) and links.
func sweepNet(ctx context.Context) []string {
	var did []string
	for _, ns := range listNetns(namePrefix) {
		if err := deleteNetns(ctx, ns); err == nil {
			did = append(did, "netns "+ns)
		}
	}
	for _, l := range listLinks(namePrefix) {
		if err := run(ctx, "ip", "link", "delete", l); err == nil {
			did = append(did, "link "+l)
		}
	}
	return did
}

// sweepCreated removes what createdLog lists: mount points (only when
// empty) and temporary work folders.
func sweepCreated() []string {
	var did []string
	if b, err := os.ReadFile(createdLog); err == nil {
		paths := strings.Fields(string(b))
		// Processes first ("pid:" sorts before "/"), then the deepest paths.
		sort.Slice(paths, func(i, j int) bool {
			pi, pj := strings.HasPrefix(paths[i], "pid:"), strings.HasPrefix(paths[j], "pid:")
			if pi != pj {
				return pi
			}
			return len(paths[i]) > len(paths[j])
		})
		for _, p := range paths {
			if pid, start, ok := parsePidEntry(p); ok {
				if startTime(pid) == start {
					_ = syscall.Kill(pid, syscall.SIGKILL)
					did = append(did, fmt.Sprintf("process %d", pid))
				}
				continue
			}
			if b := filepath.Base(p); strings.HasPrefix(b, workDirPrefix) || strings.HasPrefix(b, "k8s_test_framework_") {
				if os.RemoveAll(p) == nil {
					did = append(did, "folder "+p)
				}
			} else if os.Remove(p) == nil { // never a folder that is not empty
				did = append(did, "mount point "+p)
			}
		}
		_ = os.Remove(createdLog)
	}
	return did
}

// logCreated appends a path to createdLog.
func logCreated(p string) {
	f, err := os.OpenFile(createdLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(p + "\n")
}

// Leftovers lists what a cluster could have left on the host: links and
// network namespaces with the harness prefix. Empty after a clean Stop.
func Leftovers() []string {
	var out []string
	for _, ns := range listNetns(namePrefix) {
		out = append(out, "netns "+ns)
	}
	for _, l := range listLinks(namePrefix) {
		out = append(out, "link "+l)
	}
	return out
}

// processAlive reports whether pid runs and is not a zombie.
func processAlive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z' && s[i+2] != 'X'
	}
	return true
}

func writeSysctl(path, value string) {
	_ = os.WriteFile(path, []byte(value), 0o644)
}

// startTime is a process' start time in clock ticks since boot ("" when
// it does not exist), so a recorded pid is never confused with a new one.
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22 of stat
}

func parsePidEntry(s string) (int, string, bool) {
	rest, ok := strings.CutPrefix(s, "pid:")
	if !ok {
		return 0, "", false
	}
	p, st, ok := strings.Cut(rest, ":")
	pid, err := strconv.Atoi(p)
	return pid, st, ok && err == nil
}

// logControlPlane records envtest's etcd and kube-apiserver (children of
// this process) and their temporary folders: they have no Pdeathsig, so a
// crashed harness would leave them running until the next Start.
func logControlPlane() {
	entries, _ := os.ReadDir("/proc")
	me := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil || !strings.Contains(string(status), "\nPPid:\t"+me+"\n") {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		args := strings.Split(string(cmdline), "\x00")
		if b := filepath.Base(args[0]); b != "etcd" && b != "kube-apiserver" {
			continue
		}
		logCreated(fmt.Sprintf("pid:%d:%s", pid, startTime(pid)))
		for _, a := range args {
			for _, flag := range []string{"--data-dir=", "--cert-dir="} {
				if d, ok := strings.CutPrefix(a, flag); ok && strings.HasPrefix(filepath.Base(d), "k8s_test_framework_") {
					logCreated(d)
				}
			}
		}
	}
}
