package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestCatalogMemberReachesSecondariesUntouched (issue 6 f): a new primary
// BindZone in a catalog is served by every secondary, and nothing of the
// secondaries moved to get it there: the cluster's ConfigMap and keys
// Secret keep their resourceVersion, the StatefulSet its generation and
// config hash, every pod its UID and restart count, and no secondary's
// agent was asked for the zone. The secondaries' named logs show it came
// through the catalog.
func TestCatalogMemberReachesSecondariesUntouched(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-catalog")
	a := authoritative{Namespace: ns, Name: "catalog", Replicas: 3, Catalog: "catalog.catalog.internal"}
	a.create(ctx, t)
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	ips := a.servedByAll(ctx, t, a.Catalog)

	type version struct{ configMap, keys string }
	versions := func() version {
		var cm corev1.ConfigMap
		var s corev1.Secret
		testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.Name + "-config"}, &cm))
		testkit.Must(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.Name + "-keys"}, &s))
		return version{cm.ResourceVersion, s.ResourceVersion}
	}
	beforeVersions := versions()
	beforeRollout, _, err := currentRollout(ctx, ns, a.Name)
	testkit.Must(t, err)
	beforePods, err := podStates(ctx, ns, a.Name)
	testkit.Must(t, err)
	logStart := map[string]int{}
	for i := 1; i < int(a.Replicas); i++ {
		for _, c := range []string{"named", "agent"} {
			l, err := env.Cluster.Logs(ctx, ns, fmt.Sprintf("%s-%d", a.Name, i), c, false)
			testkit.Must(t, err)
			logStart[fmt.Sprintf("%d/%s", i, c)] = len(l)
		}
	}

	const zone = "member.catalog.e2e.example"
	start := time.Now()
	testkit.Must(t, env.Client.Create(ctx, a.catalogZone("member", zone, "", v1.RecordSet{Name: "www", Type: "A", Values: []string{"192.0.2.20"}})))
	for i, ip := range ips {
		waitA(ctx, t, ip, "www."+zone, "192.0.2.20", fmt.Sprintf("%s-%d", a.Name, i))
	}
	t.Logf("the catalog member was served by all %d pods %s after the BindZone was created", a.Replicas, time.Since(start).Round(time.Millisecond))

	if after := versions(); after != beforeVersions {
		t.Errorf("the cluster's config changed for a catalog member: resourceVersions %+v -> %+v", beforeVersions, after)
	}
	afterRollout, _, err := currentRollout(ctx, ns, a.Name)
	testkit.Must(t, err)
	if afterRollout != beforeRollout {
		t.Errorf("the StatefulSet moved for a catalog member: %+v -> %+v", beforeRollout, afterRollout)
	}
	afterPods, err := podStates(ctx, ns, a.Name)
	testkit.Must(t, err)
	if describePods(afterPods) != describePods(beforePods) {
		t.Errorf("pods changed for a catalog member:\nbefore %s\nafter  %s", describePods(beforePods), describePods(afterPods))
	}
	for i := 1; i < int(a.Replicas); i++ {
		pod := fmt.Sprintf("%s-%d", a.Name, i)
		agentLog, err := env.Cluster.Logs(ctx, ns, pod, "agent", false)
		testkit.Must(t, err)
		if fresh := agentLog[logStart[fmt.Sprintf("%d/agent", i)]:]; strings.Contains(fresh, zone) {
			t.Errorf("%s's agent was asked about %s; a catalog member must reach secondaries through the catalog alone:\n%s", pod, zone, tail(fresh, 2000))
		}
		namedLog, err := env.Cluster.Logs(ctx, ns, pod, "named", false)
		testkit.Must(t, err)
		var catz string
		for _, line := range strings.Split(namedLog[logStart[fmt.Sprintf("%d/named", i)]:], "\n") {
			if strings.Contains(line, "catz") && strings.Contains(line, zone) {
				catz = strings.TrimSpace(line)
				break
			}
		}
		if catz == "" {
			t.Errorf("%s's named did not log adding %s from catalog %s:\n%s", pod, zone, a.Catalog, tail(namedLog, 3000))
			continue
		}
		t.Logf("%s: %s", pod, catz)
	}
}
