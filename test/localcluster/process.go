package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// spawner starts every child from one OS thread that never exits: the
// children get SIGKILL when that thread dies (Pdeathsig is tied to the
// creating thread, not the process), which only happens when the harness
// itself dies. A crashed test never leaves an API server running.
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

var theSpawner = newSpawner()

// daemon is one long-running component.
type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// startDaemon runs bin with args, its output appended to
// <workdir>/logs/<name>.log, and journals its PID.
func (c *Cluster) startDaemon(name, bin string, args ...string) (*daemon, error) {
	if err := os.MkdirAll(c.opts.path("logs"), 0o755); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(c.opts.path("logs", name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = append(os.Environ(), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	req := spawnReq{cmd: cmd, done: make(chan error)}
	theSpawner.reqs <- req
	if err := <-req.done; err != nil {
		log.Close()
		return nil, errorf("start %s: %v", name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		log.Close()
		close(d.done)
	}()
	pid := cmd.Process.Pid
	if err := joinSystemSlice(pid); err != nil {
		_ = cmd.Process.Kill()
		return nil, errorf("start %s: %v", name, err)
	}
	if err := c.state.update(func(s *state) {
		s.Processes = append(s.Processes, process{Name: name, PID: pid, Start: procStart(pid)})
	}); err != nil {
		return nil, err
	}
	c.daemons = append(c.daemons, d)
	c.opts.Logf("localcluster: %s started (pid %d, log %s)", name, pid, c.opts.path("logs", name+".log"))
	return d, nil
}

// exited reports a daemon that died, with the end of its log.
func (d *daemon) exited(c *Cluster) error {
	select {
	case <-d.done:
		return errorf("%s exited (%v); last lines of %s:\n%s", d.name, d.err,
			c.opts.path("logs", d.name+".log"), tail(c.opts.path("logs", d.name+".log"), 20))
	default:
		return nil
	}
}

// stop sends SIGTERM to the daemon's process group and SIGKILL after grace.
func (d *daemon) stop(grace time.Duration) {
	select {
	case <-d.done:
		return
	default:
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(grace):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
	}
}

// waitUntil polls cond every 200 ms until it holds, the context ends, the
// timeout passes, or one of the watched daemons dies.
func (c *Cluster) waitUntil(ctx context.Context, what string, timeout time.Duration, cond func() (bool, error), watch ...*daemon) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		for _, d := range watch {
			if err := d.exited(c); err != nil {
				return errorf("waiting for %s: %v", what, err)
			}
		}
		if time.Now().After(deadline) {
			return errorf("%s not within %s (last error: %v)", what, timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// procStart is field 22 of /proc/PID/stat (start time in clock ticks), or
// "" when the process is gone.
func procStart(pid int) string {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ""
	}
	s := string(b)
	// The command name (field 2) may hold spaces; fields after it do not.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// killJournaled kills a journaled process if it is still the same process.
func killJournaled(p process) {
	if p.PID <= 1 || p.Start == "" || procStart(p.PID) != p.Start {
		return
	}
	_ = syscall.Kill(p.PID, syscall.SIGKILL)
	for i := 0; i < 50 && procStart(p.PID) == p.Start; i++ {
		time.Sleep(20 * time.Millisecond)
	}
}

// run runs a short command and returns its combined output.
func run(ctx context.Context, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

var errNotYet = errors.New("not yet")

// systemSlice is the CPU cgroup of the node's components (etcd, the
// control plane, containerd with its shims, the kubelet, kube-proxy),
// beside the kubelet's kubepods under the node's cgroup root. That is how
// a node whose Kubernetes runs as system services shares its CPUs: systemd
// puts the services in system.slice (cpu.shares 1024) and the kubelet
// gives kubepods the node's allocatable CPU (1024 per CPU). In the root
// cgroup instead, each component thread would weigh as much as every pod
// together, and under load the pods (named, the operator) would wait for
// a CPU behind the API server's threads far longer than on a real node.
const systemSlice = cgroupRoot + "/system.slice"

// nodeShares weighs the node's cgroup root against what runs outside it
// (the harness and the tests, in the root cgroup) as system.slice and
// kubepods together weigh against user.slice on a real node: a test's
// thread, like a user's session, gets a share of the CPUs, not priority
// over the whole node.
func nodeShares() int { return 1024 * (1 + runtime.NumCPU()) }

// cpuHierarchy is the mount of the v1 cpu controller, alone or with
// cpuacct; "" without one.
func cpuHierarchy() string {
	hierarchies, _ := cgroupHierarchies()
	for _, h := range hierarchies {
		if !slices.Contains(strings.Split(filepath.Base(h), ","), "cpu") {
			continue
		}
		if _, err := os.Stat(filepath.Join(h, "cpu.shares")); err == nil {
			return h
		}
	}
	return ""
}

// joinSystemSlice moves pid and its threads into systemSlice (children it
// forks afterwards are born there; the components fork nothing before
// this runs) and gives the node's cgroup root its weight. Without a v1 cpu
// hierarchy it does nothing: the processes stay where the harness runs.
func joinSystemSlice(pid int) error {
	h := cpuHierarchy()
	if h == "" {
		return nil
	}
	dir := filepath.Join(h, systemSlice)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(h, cgroupRoot, "cpu.shares"), []byte(strconv.Itoa(nodeShares())), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644)
}
