package e2e

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/localcluster"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// benchPolicyEdits measures a BindPolicy rule edit through the API server
// until every pod of a 2-pod resolver answers with the new rewrite (the
// rule redirects a name of zone, which the resolver forwards to the bench
// cluster, to a new target each time). It also checks that no edit rolled
// the resolver.
func benchPolicyEdits(ctx context.Context, t *testing.T, c client.Client, ns, upstream, zone string) (latencies, bool) {
	t.Helper()
	const replicas = 2
	testkit.Must(t, c.Create(ctx, &v1.BindCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "resolver"},
		Spec: v1.BindClusterSpec{
			Mode: v1.ModeResolver, Replicas: ptr.To[int32](replicas), Storage: &v1.StorageSpec{Enabled: ptr.To(false)},
			Recursion: &v1.RecursionSpec{AllowRecursion: []v1.AddressMatchElement{{Address: localcluster.NodeIP.String()}}},
		},
	}))
	testkit.Must(t, c.Create(ctx, &v1.BindZone{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "forward"},
		Spec: v1.BindZoneSpec{ClusterRef: v1.LocalObjectReference{Name: "resolver"}, ZoneName: v1.DomainName(zone), Type: v1.ZoneForward,
			Forwarders: []v1.Forwarder{{ClusterRef: &v1.LocalObjectReference{Name: upstream}}}},
	}))
	name := "rpz-lat." + zone
	rule := func(i int) []v1.RPZRule {
		return []v1.RPZRule{{Match: name, Action: v1.ActionRedirect, RedirectTo: v1.DomainName(fmt.Sprintf("t%d.%s", i, zone))}}
	}
	p := &v1.BindPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "lat"},
		Spec:       v1.BindPolicySpec{ClusterRef: v1.LocalObjectReference{Name: "resolver"}, ZoneName: "rpz.bench.internal", QNameWaitRecurse: ptr.To(false), Rules: rule(0)},
	}
	testkit.Must(t, c.Create(ctx, p))
	waitClusterReady(ctx, t, ns, "resolver", replicas)
	ips := podIPs(ctx, t, ns, "resolver", replicas)
	for _, ip := range ips {
		testkit.Must(t, pollCNAME(ctx, ip, name, fmt.Sprintf("t0.%s.", zone), time.Minute))
	}
	before, _, err := currentRollout(ctx, ns, "resolver")
	testkit.Must(t, err)
	out := make(latencies, 0, policyEdits)
	for i := 1; i <= policyEdits; i++ {
		start := time.Now()
		patch := client.MergeFrom(p.DeepCopy())
		p.Spec.Rules = rule(i)
		testkit.Must(t, c.Patch(ctx, p, patch))
		var wg sync.WaitGroup
		errs := make([]error, len(ips))
		for j, ip := range ips {
			wg.Go(func() { errs[j] = pollCNAME(ctx, ip, name, fmt.Sprintf("t%d.%s.", i, zone), 30*time.Second) })
		}
		wg.Wait()
		for j, err := range errs {
			if err != nil {
				t.Fatalf("policy edit %d not enforced by resolver-%d: %v", i, j, err)
			}
		}
		out = append(out, time.Since(start))
	}
	after, _, err := currentRollout(ctx, ns, "resolver")
	testkit.Must(t, err)
	return out, after == before
}

// pollCNAME asks server for name every few milliseconds until the answer
// starts with a CNAME to target, for at most limit.
func pollCNAME(ctx context.Context, server, name, target string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	last := "no answer"
	for time.Now().Before(deadline) && ctx.Err() == nil {
		got, err := answer(server, netip.Addr{}, name)
		if err != nil {
			last = err.Error()
		} else if _, rest, _ := strings.Cut(got, " "); strings.HasPrefix(rest, "CNAME "+target) {
			return nil
		} else {
			last = got
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("after %s the answer was %q, want a CNAME to %s", limit, last, target)
}
