package e2e

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// The CPU pressure probe says that tasks waited for a CPU during the edits;
// this says which processes had the CPUs, and which of them waited. The
// kernel keeps, for every thread, the time it ran and the time it spent
// runnable on a run queue (/proc/<pid>/task/<tid>/schedstat, in ns). Two
// readings of every process on the node, one before a phase and one after,
// give each process's share of the node over that phase: the control
// plane, every named, agent and manager, the kubelet and the bench itself.
type processTime struct {
	comm    string
	start   string // when it started (/proc/<pid>/stat), to tell a reused pid
	threads map[string]testkit.ThreadTime
}

// processTimes holds a reading, by pid.
type processTimes struct {
	at    time.Time
	procs map[int]processTime
}

// readProcessTimes reads every process's threads once. Processes and
// threads that end while it reads are skipped, not errors.
func readProcessTimes() (processTimes, error) {
	out := processTimes{at: time.Now(), procs: map[int]processTime{}}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		threads, err := testkit.ReadThreadTimes(e.Name())
		if err != nil {
			continue
		}
		out.procs[pid] = processTime{comm: strings.TrimSpace(string(comm)), start: procStartTime(stat), threads: threads}
	}
	return out, nil
}

// cpuTimeSummary lists the top processes (by name, the bench's own process
// named so) by CPU used between before and after, in CPUs (seconds on a CPU
// per second), with the CPUs' worth of time their threads spent waiting
// for one, and the node's total.
func cpuTimeSummary(before, after processTimes, top int) string {
	wall := after.at.Sub(before.at)
	if wall <= 0 {
		return "no span"
	}
	self := os.Getpid()
	type use struct {
		name      string
		run, wait time.Duration
	}
	byName := map[string]*use{}
	var total use
	for pid, a := range after.procs {
		b := before.procs[pid] // zero for a process started meanwhile
		if b.start != a.start {
			b = processTime{} // the pid was reused
		}
		// Thread by thread: one started meanwhile counts from zero, and
		// one that ended took its times with it (so a summary is a
		// little short for processes whose threads come and go).
		var run, wait time.Duration
		for tid, at := range a.threads {
			bt := b.threads[tid]
			run += max(at.Run-bt.Run, 0)
			wait += max(at.Wait-bt.Wait, 0)
		}
		name := a.comm
		if pid == self {
			name = "the bench (" + a.comm + ")"
		}
		u := byName[name]
		if u == nil {
			u = &use{name: name}
			byName[name] = u
		}
		u.run += run
		u.wait += wait
		total.run += run
		total.wait += wait
	}
	uses := make([]*use, 0, len(byName))
	for _, u := range byName {
		uses = append(uses, u)
	}
	slices.SortFunc(uses, func(x, y *use) int {
		return cmp.Or(cmp.Compare(y.run, x.run), strings.Compare(x.name, y.name))
	})
	cpus := func(d time.Duration) float64 { return d.Seconds() / wall.Seconds() }
	parts := make([]string, 0, top)
	for _, u := range uses[:min(top, len(uses))] {
		parts = append(parts, fmt.Sprintf("%s %.2f (waited %.2f)", u.name, cpus(u.run), cpus(u.wait)))
	}
	return fmt.Sprintf("over %s the node used %.2f CPUs and its threads waited %.2f CPUs' worth for one; %s",
		wall.Round(time.Millisecond), cpus(total.run), cpus(total.wait), strings.Join(parts, ", "))
}

const (
	// cpuTimeTop is how many processes a summary names.
	cpuTimeTop = 8
	// restSpan is how long the node is read at rest.
	restSpan = 3 * time.Second
)

// readProcessTimesAt is one reading, as a one-element slice to append to;
// the bench stops on a /proc it cannot read.
func readProcessTimesAt(t *testing.T) []processTimes {
	t.Helper()
	r, err := readProcessTimes()
	if err != nil {
		t.Fatalf("reading the node's process times: %v", err)
	}
	return []processTimes{r}
}

// procStartTime is field 22 of /proc/<pid>/stat, the process's start in
// clock ticks since boot. The name (field 2) may hold spaces and
// parentheses, so the fields are counted after its closing one. A kernel
// worker renames itself after the work it does: only the start time
// tells a reused pid.
func procStartTime(stat []byte) string {
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19] // fields 3… are f[0]…: field 22 is f[19]
}
