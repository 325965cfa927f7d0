package testkit

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of /proc/PID/stat's CPU times: USER_HZ, 100 on
// every Linux ABI.
const clockTick = 10 * time.Millisecond

// CPUTimes is the CPU time (user + system) used so far by this process and
// by its children named kube-apiserver and etcd (the control plane Main
// started), so a benchmark can say where its time went.
type CPUTimes struct{ Self, APIServer, Etcd time.Duration }

// ReadCPUTimes reads CPUTimes from /proc; a process it cannot read counts
// zero.
func ReadCPUTimes() CPUTimes {
	var t CPUTimes
	self := os.Getpid()
	t.Self, _, _ = procCPU(strconv.Itoa(self))
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		cpu, comm, ppid := procCPU(filepath.Base(d))
		if ppid != self {
			continue
		}
		switch comm {
		case "kube-apiserver":
			t.APIServer += cpu
		case "etcd":
			t.Etcd += cpu
		}
	}
	return t
}

// Sub is the CPU time used between o and t.
func (t CPUTimes) Sub(o CPUTimes) CPUTimes {
	return CPUTimes{Self: t.Self - o.Self, APIServer: t.APIServer - o.APIServer, Etcd: t.Etcd - o.Etcd}
}

// procCPU reads utime+stime, the command name and the parent of a process
// from /proc/PID/stat.
func procCPU(pid string) (cpu time.Duration, comm string, ppid int) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0, "", 0
	}
	s := string(b)
	// The command name (field 2) is in parentheses and may hold spaces;
	// the fields after it do not.
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return 0, "", 0
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 13 {
		return 0, "", 0
	}
	ppid, _ = strconv.Atoi(f[1])
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * clockTick, s[open+1 : end], ppid
}

// ThreadTime is one thread's schedstat: its time on a CPU and its time
// runnable on a run queue, waiting for one. The kernel counts both in
// nanoseconds from the scheduler's clock, so unlike /proc/PID/stat's
// ticks they do not charge a whole tick to a thread that woke just
// before it.
type ThreadTime struct{ Run, Wait time.Duration }

// ReadThreadTimes reads /proc/PID/task/*/schedstat, by thread id. Threads
// that end while it reads are left out, not errors; a process none of
// whose threads could be read is one (a kernel without schedstat, or a
// process that ended).
func ReadThreadTimes(pid string) (map[string]ThreadTime, error) {
	tasks, err := os.ReadDir(filepath.Join("/proc", pid, "task"))
	if err != nil {
		return nil, err
	}
	out := make(map[string]ThreadTime, len(tasks))
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc", pid, "task", task.Name(), "schedstat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		run, err1 := strconv.ParseInt(f[0], 10, 64)
		wait, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		out[task.Name()] = ThreadTime{Run: time.Duration(run), Wait: time.Duration(wait)}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no thread of process %s has a readable schedstat", pid)
	}
	return out, nil
}

// RunTime is the time the threads of the process pid that run now have
// spent on a CPU (ReadThreadTimes); a thread that ended took its time
// with it.
func RunTime(pid int) (time.Duration, error) {
	threads, err := ReadThreadTimes(strconv.Itoa(pid))
	var sum time.Duration
	for _, t := range threads {
		sum += t.Run
	}
	return sum, err
}
