package e2e

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// benchZones is how many BindZones TestInClusterZonesBench puts in one
// catalog: 0 (make test) skips it, `make bench` asks for 10,000 (issue 15
// item 4).
var benchZones = flag.Int("bench-zones", 0, "BindZones TestInClusterZonesBench creates in one catalog (0: skip)")

// TestInClusterZonesBench (issue 15 item 4; `make bench` only) creates
// -bench-zones BindZones in one catalog of a 2-replica cluster, from 32
// clients, and reports how long until every one is Ready and the last is
// served by the secondary (through the catalog), the operator's memory
// (its pods restarted first, so the peak is this run's) and named's, and
// how long deleting them takes.
func TestInClusterZonesBench(t *testing.T) {
	n := *benchZones
	if n == 0 {
		t.Skip("a benchmark: `make bench` runs it (go test -run TestInClusterZonesBench ./test/e2e/ -args -bench-zones=N)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-zones")
	a := authoritative{Namespace: ns, Name: "zones", Replicas: 2, Catalog: "catalog.zones.internal"}
	a.create(ctx, t)
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	ips := a.servedByAll(ctx, t, a.Catalog)
	enableOperatorPprof(ctx, t)
	restartOperator(ctx, t)

	c := benchClient(t, nil)
	token := metricsReaderToken(ctx, t)
	reconciles := leaderReconciles(ctx, t, token)
	zoneName := func(i int) string { return fmt.Sprintf("z%05d.zones.e2e.example", i) }
	requests := apiServerRequests(apiServerMetrics(ctx, t), "")
	times := readProcessTimesAt(t)
	throttled := operatorThrottling(ctx, t)
	start := time.Now()
	testkit.Must(t, forEachRecord(ctx, n, func(i int) error {
		return retryCreate(ctx, a.catalogZone(fmt.Sprintf("z%05d", i), zoneName(i), ""))
	}))
	created := time.Since(start)
	defer profileLeader(ctx, t, fmt.Sprintf("zones-%d-ready", n), 30*time.Second)()
	NewWithT(t).Eventually(func() (int, error) { return notReadyZones(ctx, c, ns) }).
		WithContext(ctx).WithTimeout(40*time.Minute).WithPolling(5*time.Second).Should(BeZero(), "BindZones not Ready")
	ready := time.Since(start)
	times = append(times, readProcessTimesAt(t)...)
	throttledSummary := throttlingSummary(throttled, operatorThrottling(ctx, t), leaderPod(ctx, t).Name)
	requests = apiServerRequests(apiServerMetrics(ctx, t), "").minus(requests)
	reconcilesPerZone := perZone(leaderReconciles(ctx, t, token), reconciles, n)
	for _, ip := range ips {
		NewWithT(t).Eventually(func() error { _, err := soaSerial(ip, zoneName(n-1)); return err }).
			WithContext(ctx).WithTimeout(5*time.Minute).Should(Succeed(), "%s does not serve %s", ip, zoneName(n-1))
	}
	served := time.Since(start)
	op := operatorMemory(ctx, t)
	rate := func(d time.Duration) string {
		return fmt.Sprintf("%s (%.0f zones/s)", d.Round(time.Second), float64(n)/d.Seconds())
	}
	rows := []benchRow{
		{fmt.Sprintf("operator: %d BindZones in one catalog", n), "created through the API server and webhooks (32 clients)", rate(created), ""},
		{"", "… every BindZone Ready", rate(ready), ""},
		{"", "… the last one served by the primary and the secondary", served.Round(time.Second).String(), ""},
		{"", fmt.Sprintf("… the node's CPU time from the first create to every BindZone Ready (/proc/<pid>/task/*/schedstat), the top %d, in CPUs", cpuTimeTop),
			cpuTimeSummary(times[0], times[1], cpuTimeTop), ""},
		{"", "… API requests per BindZone from the first create to every BindZone Ready, every client's (apiserver_request_total), the most frequent first",
			requests.perObject(n), ""},
		{"", "… reconciles per BindZone from the first create to every BindZone Ready, by controller (the leader's controller_runtime_reconcile_total), the most frequent first",
			reconcilesPerZone, ""},
		{"", "… the manager's CPU limit from the first create to every BindZone Ready: CFS periods (100 ms) in which it used up its quota and was stopped (its container's cpu.stat)", throttledSummary, ""},
		{"operator: the manager's memory", fmt.Sprintf("with %d BindZones in one catalog, webhooks in-process (pods restarted before)", n), op.String(), "goal: reported"},
		{"named: the primary's memory", fmt.Sprintf("%d zones", n), podProcessMemory(ctx, t, ns, a.Name+"-0", "named").String(), ""},
		{"named: the secondary's memory", "the same zones, from the catalog", podProcessMemory(ctx, t, ns, a.Name+"-1", "named").String(), ""},
	}

	start = time.Now()
	testkit.Must(t, forEachRecord(ctx, n, func(i int) error {
		return client.IgnoreNotFound(c.Delete(ctx, &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("z%05d", i)}}))
	}))
	NewWithT(t).Eventually(func() (int, error) {
		var l v1.BindZoneList
		err := c.List(ctx, &l, client.InNamespace(ns))
		return len(l.Items), err
	}).WithContext(ctx).WithTimeout(20*time.Minute).WithPolling(5*time.Second).Should(BeZero(), "deleted BindZones still there")
	rows = append(rows, benchRow{"", fmt.Sprintf("the %d BindZones deleted (finalizers done)", n), rate(time.Since(start)), ""})
	printBenchTable(t, a.Replicas, rows)
	testkit.Must(t, c.Delete(ctx, &v1.BindCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.Name}}))
}

func notReadyZones(ctx context.Context, c client.Reader, ns string) (int, error) {
	var l v1.BindZoneList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return -1, err
	}
	n := 0
	for _, z := range l.Items {
		if !meta.IsStatusConditionTrue(z.Status.Conditions, v1.ConditionReady) {
			n++
		}
	}
	return n, nil
}

// perZone is after − before of each controller's count, per zone, the
// most frequent first. Counts of two processes (the leader changed, or
// its manager restarted) cannot be subtracted: that is said instead.
func perZone(after, before reconcileCounts, zones int) string {
	if after.pod != before.pod || after.start != before.start {
		return fmt.Sprintf("not comparable: the leader was %s (%s) and is %s (%s)", before.pod, before.start, after.pod, after.start)
	}
	names := make([]string, 0, len(after.counts))
	for name := range after.counts {
		if after.counts[name] > before.counts[name] {
			names = append(names, name)
		}
	}
	d := func(name string) float64 { return after.counts[name] - before.counts[name] }
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(d(b), d(a)), strings.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %.2f", name, d(name)/float64(zones))
	}
	return strings.Join(parts, ", ")
}
