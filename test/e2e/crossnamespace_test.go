package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestRecordsFromTeamNamespaces (issue 14 item 3): with the operator
// installed as shipped (its RBAC reads namespace labels), an application
// team's DNSRecord in its own namespace reaches every pod of a zone that
// admits the team's namespace, and a DNSRecord from a namespace the zone
// does not admit is refused by the webhook with the rule's sentence.
func TestRecordsFromTeamNamespaces(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ns := newNamespace(ctx, t, "e2e-xns-dns")
	team, other := "e2e-xns-team", "e2e-xns-other"
	testkit.Must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team, Labels: map[string]string{"dns.example.com/zone": "apps"}}}))
	testkit.Must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}))
	a := authoritative{Namespace: ns, Name: "xns", Replicas: 2, Catalog: "catalog.xns.internal"}
	a.create(ctx, t)
	t.Cleanup(func() { dumpOnFailure(t, ns, a.Name, a.Replicas) })
	const zone = "apps.e2e.example"
	testkit.Must(t, env.Client.Create(ctx, &v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "updates"}}))
	z := a.catalogZone("apps", zone, "updates")
	z.Spec.AllowedRecords = &v1.AllowedRecords{
		Namespaces:   metav1.LabelSelector{MatchLabels: map[string]string{"dns.example.com/zone": "apps"}},
		NameSuffixes: []v1.RecordName{"team"},
	}
	testkit.Must(t, env.Client.Create(ctx, z))
	ips := a.servedByAll(ctx, t, zone)

	record := func(namespace, owner string) *v1.DNSRecord {
		return &v1.DNSRecord{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "api"},
			Spec: v1.DNSRecordSpec{ZoneRef: v1.ZoneReference{Namespace: ns, Name: "apps"}, Name: v1.RecordName(owner), Type: "A",
				TTL: ptr.To[v1.TTL](60), Values: []string{"192.0.2.10"}},
		}
	}
	start := time.Now()
	testkit.Must(t, env.Client.Create(ctx, record(team, "api.team")))
	for i, ip := range ips {
		waitA(ctx, t, ip, "api.team."+zone, "192.0.2.10", fmt.Sprintf("%s-%d", a.Name, i))
	}
	t.Logf("a DNSRecord of namespace %s served by all %d pods of a zone in %s in %s", team, len(ips), ns, time.Since(start).Round(time.Millisecond))

	err := env.Client.Create(ctx, record(other, "api.team"))
	NewWithT(t).Expect(err).To(HaveOccurred(), "a DNSRecord from a namespace the zone does not select")
	for _, want := range []string{"spec.zoneRef.namespace", `does not admit DNSRecords from namespace "e2e-xns-other": its spec.allowedRecords.namespaces does not select it`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q:\n%v", want, err)
		}
	}
	err = env.Client.Create(ctx, record(team, "api"))
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("spec.name")), "a name outside the admitted suffixes")
}
