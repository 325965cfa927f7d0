package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// namedTime is the layout of the timestamps named prints on each log line
// (print-time, milliseconds); the pods run in UTC, as the node does.
const namedTime = "02-Jan-2006 15:04:05.000"

// timelineSlack widens the window of a slow change's timeline on each side:
// named stamps a line with milliseconds, and a line logged as the change
// was served belongs to it.
const timelineSlack = 5 * time.Millisecond

// timelines is, for the slowest changes of one path that took over
// editGoal (the `most` slowest), what named logged about zone on each pod while
// the change was on its way: each line with its time since the change
// started. It says which leg a slow change stalled in: the UPDATE on the
// primary, the primary's NOTIFY, the secondary's SOA query, its transfer.
// Each change also carries the wall-clock time it started (UTC), so that
// a trace taken on the node meanwhile (perf sched, a profile) can be cut
// to the slow changes' windows.
// Diagnostics only: it asserts nothing.
func timelines(ctx context.Context, t *testing.T, ns string, pods []string, zone string, c changeLatencies, most int) string {
	t.Helper()
	idx := c.overGoal()
	if len(idx) == 0 {
		return ""
	}
	logs := make(map[string][]string, len(pods))
	for _, pod := range pods {
		l, err := env.Cluster.Logs(ctx, ns, pod, "named", false)
		if err != nil {
			return fmt.Sprintf("no timeline: the log of %s: %v", pod, err)
		}
		logs[pod] = strings.Split(l, "\n")
	}
	var b strings.Builder
	for _, i := range idx[:min(len(idx), most)] {
		from, to := c.started[i].Add(-timelineSlack), c.started[i].Add(c.served[i]+timelineSlack)
		fmt.Fprintf(&b, "change #%d at %s, served by every secondary after %s (primary %s):\n", i+1, c.started[i].UTC().Format("15:04:05.000000"), c.served[i].Round(100*time.Microsecond), c.primary[i].Round(100*time.Microsecond))
		for _, pod := range pods {
			for _, line := range logs[pod] {
				at, msg, ok := namedLine(line)
				if !ok || at.Before(from) || at.After(to) || !strings.Contains(msg, zone) {
					continue
				}
				fmt.Fprintf(&b, "  %-8s +%3dms %s\n", pod, at.Sub(c.started[i]).Milliseconds(), abbreviate(msg, 160))
			}
		}
	}
	return b.String()
}

// namedLine splits one line of named's log into its time and message.
func namedLine(line string) (time.Time, string, bool) {
	if len(line) < len(namedTime)+1 {
		return time.Time{}, "", false
	}
	at, err := time.ParseInLocation(namedTime, line[:len(namedTime)], time.UTC)
	if err != nil {
		return time.Time{}, "", false
	}
	return at, strings.TrimSpace(line[len(namedTime):]), true
}

// abbreviate cuts s to at most n bytes.
func abbreviate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
