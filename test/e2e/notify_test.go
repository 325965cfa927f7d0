package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestRecordChangeReachesSecondariesThroughSignedNotify (issue 6 b): a
// DNSRecord change is served by every secondary long before the seed SOA's
// refresh could have fetched it, and each secondary's named logged the
// primary's NOTIFY as received, signed with the transfer key, and refused
// none. The NOTIFY leaves from the primary's pod IP while the secondaries
// transfer from the primary Service, so an unsigned NOTIFY would be refused
// as "non-primary": accepting it is exactly what docs/behaviours.md, "Keyed NOTIFY", promises.
func TestRecordChangeReachesSecondariesThroughSignedNotify(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-notify")
	// No persistent storage: adding the update key rolls the pods once
	// while the cluster comes up, and the primary that returns has lost
	// the zone. It is seeded again, the DNSRecord re-applied
	// (status.primarySeededAt) and the catalog membership restored over a
	// kept connection that named closed meanwhile.
	a := authoritative{Namespace: ns, Name: "notify", Replicas: 3, Catalog: "catalog.notify.internal"}
	a.create(ctx, t)
	const zone = "notify.e2e.example"
	testkit.Must(t, env.Client.Create(ctx, &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "updates"}}))
	testkit.Must(t, env.Client.Create(ctx, a.catalogZone("zone", zone, "updates")))
	rec := &v1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "app"},
		Spec: v1.DNSRecordSpec{ZoneRef: v1.ZoneReference{Name: "zone"}, Name: "app", Type: "A",
			TTL: ptr.To[v1.TTL](60), Values: []string{"192.0.2.1"}},
	}
	testkit.Must(t, env.Client.Create(ctx, rec))
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })

	waitClusterReady(ctx, t, ns, a.Name, a.Replicas)
	ips := podIPs(ctx, t, ns, a.Name, a.Replicas)
	for i, ip := range ips {
		waitA(ctx, t, ip, "app."+zone, "192.0.2.1", fmt.Sprintf("%s-%d", a.Name, i))
	}
	// Only what the secondaries log from here on counts.
	logStart := make([]int, a.Replicas)
	for i := 1; i < int(a.Replicas); i++ {
		l, err := env.Cluster.Logs(ctx, ns, fmt.Sprintf("%s-%d", a.Name, i), "named", false)
		testkit.Must(t, err)
		logStart[i] = len(l)
	}

	start := time.Now()
	testkit.Must(t, env.Client.Get(ctx, client.ObjectKeyFromObject(rec), rec))
	rec.Spec.Values = []string{"192.0.2.2"}
	testkit.Must(t, env.Client.Update(ctx, rec))
	var slowest time.Duration
	for i := 1; i < int(a.Replicas); i++ {
		waitA(ctx, t, ips[i], "app."+zone, "192.0.2.2", fmt.Sprintf("%s-%d", a.Name, i))
		slowest = time.Since(start)
	}
	t.Logf("the change was served by every secondary %s after the update (SOA refresh: %d s)", slowest.Round(time.Millisecond), render.SeedRefresh)
	if refresh := time.Duration(render.SeedRefresh) * time.Second; slowest >= refresh/2 {
		t.Errorf("the secondaries took %s, as slow as the SOA refresh fallback (%s): NOTIFY did not work", slowest, refresh)
	}

	// named logs "client @0x… <ip>#<port>/key <K>: received notify for
	// zone '<zone>'" for an accepted NOTIFY and "refused notify from
	// non-primary" for one it throws away. The primary's NOTIFY need not
	// be the first a secondary accepted: the operator re-sends one to a
	// secondary it saw stuck (bindzone-replication), signed with the same
	// key from its own address. What must hold is that the one from the
	// primary's pod IP was accepted, and none refused.
	transferKey := a.transferKey()
	fromPrimary := ips[0] + "#"
	for i := 1; i < int(a.Replicas); i++ {
		pod := fmt.Sprintf("%s-%d", a.Name, i)
		var accepted []string
		var fresh string
		// named logs the NOTIFY as it reads it, the transfer after; the
		// log can reach the kubelet a moment after the answer changed.
		NewWithT(t).Eventually(func() error {
			l, err := env.Cluster.Logs(ctx, ns, pod, "named", false)
			if err != nil {
				return err
			}
			fresh, accepted = l[logStart[i]:], nil
			for _, line := range strings.Split(fresh, "\n") {
				if strings.Contains(line, "received notify for zone '"+zone+"'") {
					accepted = append(accepted, strings.TrimSpace(line))
				}
			}
			for _, line := range accepted {
				if strings.Contains(line, fromPrimary) && strings.Contains(line, transferKey) {
					return nil
				}
			}
			return fmt.Errorf("no NOTIFY from the primary pod %s signed with %q among the %d accepted: %q; log since the change:\n%s",
				ips[0], transferKey, len(accepted), accepted, tail(fresh, 4000))
		}).WithContext(ctx).WithTimeout(30*time.Second).Should(Succeed(), "%s", pod)
		for _, line := range strings.Split(fresh, "\n") {
			if strings.Contains(line, "refused notify") {
				t.Errorf("%s refused a NOTIFY: %s", pod, line)
			}
		}
		t.Logf("%s accepted %d NOTIFY(s): %q", pod, len(accepted), accepted)
	}
}
