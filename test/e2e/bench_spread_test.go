package e2e

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// benchSpreadZones is how many zones TestInClusterSpreadBench spreads its
// DNSRecords over: 0 (make test) skips it, `make bench` asks for 100
// (issue 15 item 4).
var benchSpreadZones = flag.Int("bench-spread-zones", 0, "BindZones TestInClusterSpreadBench spreads its 10,000 DNSRecords over (0: skip)")

// TestInClusterSpreadBench (issue 15 items 1 and 4; `make bench` only)
// creates benchRecords DNSRecords spread evenly over -bench-spread-zones
// zones of one catalog, as many teams' applies would, where
// TestInClusterBench puts them in one zone: every zone has its own UPDATE
// lane, serial and transfers. It reports the same rates and API figures
// as that bench, the operator's memory (its pods restarted once the zones
// are Ready, so the peak is the records') and named's on the primary and
// the secondary, and how long deleting the records takes.
func TestInClusterSpreadBench(t *testing.T) {
	zones := *benchSpreadZones
	if zones == 0 {
		t.Skip("a benchmark: `make bench` runs it (go test -run TestInClusterSpreadBench ./test/e2e/ -args -bench-spread-zones=N)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-spread")
	a := authoritative{Namespace: ns, Name: "spread", Replicas: 2, Catalog: "catalog.spread.internal"}
	a.create(ctx, t)
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	ips := a.servedByAll(ctx, t, a.Catalog)
	transfer := readTSIGKey(ctx, t, ns, a.transferKey())

	spread := make([]bulkZone, zones)
	for z := range spread {
		spread[z] = bulkZone{ref: fmt.Sprintf("s%03d", z), name: fmt.Sprintf("s%03d.spread.e2e.example", z)}
	}
	testkit.Must(t, forEachRecord(ctx, zones, func(z int) error {
		return retryCreate(ctx, a.catalogZone(spread[z].ref, spread[z].name, ""))
	}))
	NewWithT(t).Eventually(func() (int, error) { return notReadyZones(ctx, env.Client, ns) }).
		WithContext(ctx).WithTimeout(5*time.Minute).WithPolling(time.Second).Should(BeZero(), "BindZones not Ready")
	restartOperator(ctx, t)

	own := &requestCounter{resource: "dnsrecords"}
	c := benchClient(t, own)
	token := metricsReaderToken(ctx, t)
	opBulk := benchOperatorBulk(ctx, t, c, own, token, ns, ips, spread, transfer)
	rows := opBulk.rows(fmt.Sprintf("operator: %d DNSRecords in %d zones", benchRecords, zones), "")
	rows = append(rows,
		benchRow{"operator: the manager's memory", fmt.Sprintf("with %d DNSRecords in %d zones of one catalog, webhooks in-process (pods restarted before)", benchRecords, zones), operatorMemory(ctx, t).String(), "goal: reported"},
		benchRow{"named: the primary's memory", fmt.Sprintf("%d zones, %d records in all", zones, benchRecords), podProcessMemory(ctx, t, ns, a.Name+"-0", "named").String(), ""},
		benchRow{"named: the secondary's memory", "the same zones, from the catalog", podProcessMemory(ctx, t, ns, a.Name+"-1", "named").String(), ""},
	)

	start := time.Now()
	testkit.Must(t, deleteBulk(ctx, c, ns))
	for _, zone := range spread {
		waitRecordsGone(ctx, t, ips[0], zone.name, transfer, 3*time.Minute)
	}
	deleted := time.Since(start)
	rows = append(rows, benchRow{"", fmt.Sprintf("the %d DNSRecords deleted (the primary serves none of their data)", benchRecords),
		deleted.Round(time.Millisecond).String(), fmt.Sprintf("%.2f× the creation (goal ≤ 1.2×)", deleted.Seconds()/opBulk.created.Seconds())})
	printBenchTable(t, a.Replicas, rows)
	testkit.Must(t, c.Delete(ctx, &v1.BindCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: a.Name}}))
}
