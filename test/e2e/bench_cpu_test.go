package e2e

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The CPU probe reads the kernel's pressure stall information every
// cpuProbeEvery: the "some" line of /proc/pressure/cpu, the time during
// which at least one runnable task waited for a CPU. On a small node the
// API server, etcd, the operator, every named and agent, the kubelet and
// the bench's own pollers share the CPUs, so an edit slowed by the machine
// shows as one during which tasks waited far more than during the others,
// whatever its path.
type cpuSample struct {
	at    time.Time
	stall time.Duration // the kernel's cumulative "some" total
}

const (
	cpuProbeEvery   = 10 * time.Millisecond
	cpuPressureFile = "/proc/pressure/cpu"
)

// startCPUProbe starts the probe, or returns nil on a kernel without
// pressure stall information (the bench then reports none).
func startCPUProbe(t *testing.T) *probe[cpuSample] {
	t.Helper()
	if _, err := readCPUStall(); err != nil {
		t.Logf("no CPU pressure in this run: %v", err)
		return nil
	}
	return startProbe(t, "CPU", cpuProbeEvery, readCPUStall, func() {})
}

// readCPUStall parses "some avg10=… avg60=… avg300=… total=<µs>".
func readCPUStall() (cpuSample, error) {
	b, err := os.ReadFile(cpuPressureFile)
	if err != nil {
		return cpuSample{}, err
	}
	at := time.Now()
	line, _, _ := strings.Cut(string(b), "\n")
	if !strings.HasPrefix(line, "some ") {
		return cpuSample{}, fmt.Errorf("%s: no \"some\" line in %q", cpuPressureFile, line)
	}
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, "total="); ok {
			us, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return cpuSample{}, fmt.Errorf("%s: %w", cpuPressureFile, err)
			}
			return cpuSample{at: at, stall: time.Duration(us) * time.Microsecond}, nil
		}
	}
	return cpuSample{}, fmt.Errorf("%s: no total in %q", cpuPressureFile, line)
}

// pressureDuring is the share of [from, to] in which some task waited for
// a CPU, between the last sample at or before from and the first at or
// after to; ok is false when the samples do not cover the span.
func pressureDuring(samples []cpuSample, from, to time.Time) (share float64, ok bool) {
	a := sort.Search(len(samples), func(i int) bool { return samples[i].at.After(from) }) - 1
	b := sort.Search(len(samples), func(i int) bool { return !samples[i].at.Before(to) })
	if a < 0 || b >= len(samples) || b <= a {
		return 0, false
	}
	return float64(samples[b].stall-samples[a].stall) / float64(samples[b].at.Sub(samples[a].at)), true
}

// cpuSummary is the probe's row: how much of the time tasks waited for a
// CPU over the whole probe, and for each path over its edits served in
// over editGoal against over all its edits.
func cpuSummary(samples []cpuSample, paths []string, lats []changeLatencies) string {
	if len(samples) < 2 {
		return "no samples (no " + cpuPressureFile + " on this kernel)"
	}
	whole, _ := pressureDuring(samples, samples[0].at, samples[len(samples)-1].at)
	mean := func(l changeLatencies, slowOnly bool) (string, int) {
		var sum float64
		n := 0
		for j, served := range l.served {
			if slowOnly && served <= editGoal {
				continue
			}
			if share, ok := pressureDuring(samples, l.started[j], l.started[j].Add(served)); ok {
				sum += share
				n++
			}
		}
		if n == 0 {
			return "-", 0
		}
		return fmt.Sprintf("%.0f%%", 100*sum/float64(n)), n
	}
	parts := make([]string, 0, len(lats))
	for i, l := range lats {
		all, _ := mean(l, false)
		slow, n := mean(l, true)
		parts = append(parts, fmt.Sprintf("%s %s (%d slow) vs %s", paths[i], slow, n, all))
	}
	return fmt.Sprintf("tasks waited for a CPU %.0f%% of the time; during the edits served in over %s vs during all edits: %s",
		100*whole, editGoal, strings.Join(parts, ", "))
}
