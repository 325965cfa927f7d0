package e2e

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/quota"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// benchQuota turns TestInClusterQuotaBench on: off in make test, on in
// `make bench`.
var benchQuota = flag.Bool("bench-quota", false, "run TestInClusterQuotaBench: one namespace filled to its default quotas, the manager's memory")

// quotaProbes bounds the creates tried after a fill until one is refused:
// the webhooks judge against the manager's cache, which lags the creates
// just admitted by a moment (internal/quota, Tracker).
const quotaProbes = 200

// TestInClusterQuotaBench (issue 44 item 4; `make bench` only) fills one
// namespace to the operator's default quotas, as shipped, and reports the
// manager's memory against its limit: first by count (DNSRecords of one
// zone until the namespace holds quota.DefaultNamespaceObjects objects),
// then, in a second namespace, by bytes (large TXT records over three
// zones until it holds quota.DefaultNamespaceBytes of specs). Each fill
// ends with a create the webhooks refuse, naming the limit and the use;
// the creates admitted past the limit while the manager's cache caught up
// are reported. The manager's pods are restarted first, so the peak is
// this run's.
func TestInClusterQuotaBench(t *testing.T) {
	if !*benchQuota {
		t.Skip("a benchmark: `make bench` runs it (go test -run TestInClusterQuotaBench ./test/e2e/ -args -bench-quota)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	c := benchClient(t, nil)
	restartOperator(ctx, t)
	limit := managerMemoryLimit(ctx, t)

	// By count: small A records in one zone.
	countNS := newNamespace(ctx, t, "e2e-quota-count")
	a := authoritative{Namespace: countNS, Name: "quota", Replicas: 1, Catalog: "catalog.quota-count.internal"}
	a.create(ctx, t)
	t.Cleanup(func() { dumpOnFailure(t, countNS, a.Name, a.Replicas) })
	testkit.Must(t, env.Client.Create(ctx, a.catalogZone("count", "count.quota.e2e.example", "")))
	a.servedByAll(ctx, t, "count.quota.e2e.example")
	held := objectsIn(ctx, t, countNS)
	n := int(quota.DefaultNamespaceObjects) - held
	countRecord := func(name string, i int) *v1.DNSRecord {
		return &v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: countNS, Name: name}, Spec: v1.DNSRecordSpec{
			ZoneRef: v1.ZoneReference{Name: "count"}, Name: v1.RecordName(name), Type: "A", TTL: ptr.To[v1.TTL](60), Values: []string{benchValue(i)}}}
	}
	start := time.Now()
	testkit.Must(t, forEachRecord(ctx, n, func(i int) error { return retryCreate(ctx, countRecord(bulkRecord(i), i)) }))
	created := time.Since(start)
	over, refusal := createUntilRefused(ctx, t, c, func(i int) client.Object { return countRecord(fmt.Sprintf("probe%03d", i), i) })
	if !strings.Contains(refusal, "may hold at most "+quota.Count(quota.DefaultNamespaceObjects)) || !strings.Contains(refusal, "--"+quota.FlagNamespaceObjects) {
		t.Errorf("the create past the object quota was refused with %q; want the limit and its flag", refusal)
	}
	NewWithT(t).Eventually(func() (int, error) { return notReadyRecords(ctx, c, countNS) }).
		WithContext(ctx).WithTimeout(15*time.Minute).WithPolling(5*time.Second).Should(BeZero(), "DNSRecords not Ready")
	ready := time.Since(start)
	byCount := operatorMemory(ctx, t)

	// By bytes: TXT records of 60 values of 250 octets (about 15 KiB of
	// spec each) over three zones, each far below the zone byte quota.
	bytesNS := newNamespace(ctx, t, "e2e-quota-bytes")
	b := authoritative{Namespace: bytesNS, Name: "quota", Replicas: 1, Catalog: "catalog.quota-bytes.internal"}
	b.create(ctx, t)
	t.Cleanup(func() { dumpOnFailure(t, bytesNS, b.Name, b.Replicas) })
	zones := []string{"b0", "b1", "b2"}
	for _, z := range zones {
		testkit.Must(t, env.Client.Create(ctx, b.catalogZone(z, z+".quota.e2e.example", "")))
	}
	b.servedByAll(ctx, t, "b2.quota.e2e.example")
	bigRecord := func(name string, i int) *v1.DNSRecord {
		values := make([]string, 60)
		for j := range values {
			values[j] = fmt.Sprintf("%03d%s", j, strings.Repeat(string(rune('a'+i%26)), 247))
		}
		return &v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: bytesNS, Name: name}, Spec: v1.DNSRecordSpec{
			ZoneRef: v1.ZoneReference{Name: zones[i%len(zones)]}, Name: v1.RecordName(name), Type: "TXT", TTL: ptr.To[v1.TTL](60), Values: values}}
	}
	// The fill stops short of the quota by a margin for the six objects
	// already there and the canonical quoting of the values; the probes
	// take it the rest of the way.
	perRecord := int(jsonSpecSize(t, bigRecord(bulkRecord(0), 0)))
	m := int(quota.DefaultNamespaceBytes)/perRecord - 10
	bstart := time.Now()
	testkit.Must(t, forEachRecord(ctx, m, func(i int) error { return retryCreate(ctx, bigRecord(bulkRecord(i), i)) }))
	bcreated := time.Since(bstart)
	bover, brefusal := createUntilRefused(ctx, t, c, func(i int) client.Object { return bigRecord(fmt.Sprintf("probe%03d", i), i) })
	if !strings.Contains(brefusal, "may hold at most "+quota.Bytes(quota.DefaultNamespaceBytes)) || !strings.Contains(brefusal, "--"+quota.FlagNamespaceBytes) {
		t.Errorf("the create past the byte quota was refused with %q; want the limit and its flag", brefusal)
	}
	NewWithT(t).Eventually(func() (int, error) { return notReadyRecords(ctx, c, bytesNS) }).
		WithContext(ctx).WithTimeout(15*time.Minute).WithPolling(5*time.Second).Should(BeZero(), "DNSRecords not Ready")
	bready := time.Since(bstart)
	byBytes := operatorMemory(ctx, t)

	rate := func(d time.Duration, k int) string {
		return fmt.Sprintf("%s (%.0f obj/s)", d.Round(time.Second), float64(k)/d.Seconds())
	}
	withinLimit := func(m memory) string {
		if limit == 0 {
			return "no memory limit set"
		}
		if m.hwm >= limit {
			t.Errorf("the manager's peak memory %.0f MiB reached its limit %.0f MiB with one namespace at its quota", mib(m.hwm), mib(limit))
			return fmt.Sprintf("OVER the limit %.0f MiB", mib(limit))
		}
		return fmt.Sprintf("peak %.0f%% of the limit %.0f MiB", 100*float64(m.hwm)/float64(limit), mib(limit))
	}
	printBenchTable(t, 1, []benchRow{
		{fmt.Sprintf("quota by count: one namespace filled to %s objects (--%s)", quota.Count(quota.DefaultNamespaceObjects), quota.FlagNamespaceObjects),
			fmt.Sprintf("%d DNSRecords in one zone created (32 clients)", n), rate(created, n), ""},
		{"", "… every DNSRecord Ready", ready.Round(time.Second).String(), ""},
		{"", "… creates admitted past the quota while the manager's cache caught up, then refused with", fmt.Sprintf("%d; %q", over, refusal), ""},
		{"operator: the manager's memory", "with that namespace full (pods restarted before the fill)", byCount.String(), withinLimit(byCount)},
		{fmt.Sprintf("quota by bytes: a second namespace filled to %s of specs (--%s)", quota.Bytes(quota.DefaultNamespaceBytes), quota.FlagNamespaceBytes),
			fmt.Sprintf("%d TXT DNSRecords of %s each over three zones created (32 clients)", m, quota.Bytes(int64(perRecord))), rate(bcreated, m), ""},
		{"", "… every DNSRecord Ready", bready.Round(time.Second).String(), ""},
		{"", "… probes admitted before one was refused (the fill stops 10 records short; the refusal says by how much the cache's lag took the use past the limit), then refused with", fmt.Sprintf("%d; %q", bover, brefusal), ""},
		{"operator: the manager's memory", "with both namespaces full", byBytes.String(), withinLimit(byBytes)},
	})

	// Leave a quiet machine to what follows.
	for _, ns := range []string{countNS, bytesNS} {
		testkit.Must(t, env.Client.Delete(ctx, &v1.BindCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota"}}))
	}
	testkit.Must(t, forEachRecord(ctx, n, func(i int) error {
		return client.IgnoreNotFound(c.Delete(ctx, &v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: countNS, Name: bulkRecord(i)}}))
	}))
	testkit.Must(t, forEachRecord(ctx, m, func(i int) error {
		return client.IgnoreNotFound(c.Delete(ctx, &v1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: bytesNS, Name: bulkRecord(i)}}))
	}))
}

// createUntilRefused creates the objects next(0), next(1), … until the
// webhooks refuse one as forbidden by a quota, at most quotaProbes of
// them, and returns how many were admitted before that and the refusal.
// One every 100 ms: a quota is judged against the manager's cache, so the
// pause lets each admitted probe be counted before the next is judged.
func createUntilRefused(ctx context.Context, t *testing.T, c client.Client, next func(i int) client.Object) (int, string) {
	t.Helper()
	for i := range quotaProbes {
		err := c.Create(ctx, next(i))
		if err == nil {
			time.Sleep(100 * time.Millisecond) // the cache catching up is what is waited for
			continue
		}
		var status apierrors.APIStatus
		if !errors.As(err, &status) || !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
			t.Fatalf("probe %d past the quota: %v", i, err)
		}
		return i, status.Status().Message
	}
	t.Fatalf("%d creates past the quota were all admitted", quotaProbes)
	return 0, ""
}

// objectsIn counts the bind.unkin.net objects of ns that the quota counts.
func objectsIn(ctx context.Context, t *testing.T, ns string) int {
	t.Helper()
	n := 0
	for _, l := range []client.ObjectList{&v1.BindClusterList{}, &v1.BindZoneList{}, &v1.DNSRecordList{}, &v1.BindViewList{}, &v1.BindTSIGKeyList{},
		&v1.BindACLList{}, &v1.BindCatalogZoneList{}, &v1.BindPolicyList{}, &v1.BindDNSSECPolicyList{}} {
		testkit.Must(t, env.Client.List(ctx, l, client.InNamespace(ns)))
		n += meta.LenList(l)
	}
	return n
}

// jsonSpecSize is what the quota counts for obj.
func jsonSpecSize(t *testing.T, obj client.Object) int64 {
	t.Helper()
	c, ok := quota.Of(obj, obj.GetNamespace())
	if !ok {
		t.Fatalf("%T is not counted by the quotas", obj)
	}
	return c.Object.Bytes
}

// managerMemoryLimit is the manager container's memory limit, 0 if none.
func managerMemoryLimit(ctx context.Context, t *testing.T) int64 {
	t.Helper()
	var d appsv1.Deployment
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: OperatorNamespace, Name: OperatorDeployment}, &d))
	for _, ctr := range d.Spec.Template.Spec.Containers {
		if ctr.Name == "manager" {
			return ctr.Resources.Limits.Memory().Value()
		}
	}
	t.Fatalf("no manager container in %s/%s", OperatorNamespace, OperatorDeployment)
	return 0
}
