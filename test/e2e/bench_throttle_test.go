package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// cpuThrottling is a process's CFS bandwidth counters (the cgroup v1 cpu
// controller's cpu.stat of its container): the enforcement periods it ran
// in, how many of them it spent its quota in and was stopped until the
// period ended, and how long it was stopped in all. The manager ships
// with a CPU limit (500m): a process stopped for the rest of a 100 ms
// period holds whatever it was doing, a webhook call included, which a
// latency tail would show and a mean would not.
type cpuThrottling struct {
	periods, throttled uint64
	waited             time.Duration
}

func (a cpuThrottling) sub(b cpuThrottling) cpuThrottling {
	return cpuThrottling{periods: a.periods - b.periods, throttled: a.throttled - b.throttled, waited: a.waited - b.waited}
}

func (a cpuThrottling) String() string {
	return fmt.Sprintf("stopped in %d of %d periods (%s)", a.throttled, a.periods, a.waited.Round(100*time.Microsecond))
}

// processThrottling reads the cpu.stat of pid's cpu cgroup.
func processThrottling(pid int) (cpuThrottling, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return cpuThrottling{}, err
	}
	var dir string
	for line := range strings.Lines(string(b)) {
		// "1:cpu:/path" or "1:cpu,cpuacct:/path"
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) == 3 && strings.Contains(","+parts[1]+",", ",cpu,") {
			dir = parts[2]
		}
	}
	if dir == "" {
		return cpuThrottling{}, fmt.Errorf("pid %d has no cgroup v1 cpu controller", pid)
	}
	stat, err := os.ReadFile(filepath.Join("/sys/fs/cgroup/cpu", dir, "cpu.stat"))
	if err != nil {
		return cpuThrottling{}, err
	}
	var out cpuThrottling
	for line := range strings.Lines(string(stat)) {
		k, v, _ := strings.Cut(strings.TrimSpace(line), " ")
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "nr_periods":
			out.periods = n
		case "nr_throttled":
			out.throttled = n
		case "throttled_time":
			out.waited = time.Duration(n)
		}
	}
	return out, nil
}

// operatorThrottling reads each running operator pod's manager, by pod
// name.
func operatorThrottling(ctx context.Context, t *testing.T) map[string]cpuThrottling {
	t.Helper()
	out := map[string]cpuThrottling{}
	for name, pid := range managerPIDs(ctx, t) {
		th, err := processThrottling(pid)
		testkit.Must(t, err)
		out[name] = th
	}
	return out
}

// throttlingSummary is what each manager lost to its CPU limit between two
// readings, the leader first.
func throttlingSummary(before, after map[string]cpuThrottling, leader string) string {
	var parts []string
	for name, a := range after {
		b, ok := before[name]
		if !ok {
			continue
		}
		role := "other replica"
		if name == leader {
			role = "leader"
		}
		s := role + ": " + a.sub(b).String()
		if name == leader {
			parts = append([]string{s}, parts...)
		} else {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 {
		return "no manager ran throughout"
	}
	return strings.Join(parts, "; ")
}
