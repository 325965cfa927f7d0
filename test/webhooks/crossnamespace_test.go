package webhooks

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// A BindZone admits DNSRecords of other namespaces only as its
// allowedRecords says (namespace labels, name suffixes, types), and the
// rules that tie DNSRecords of one zone together (a CNAME alone at its
// name) hold across namespaces.
func TestDNSRecordsFromOtherNamespaces(t *testing.T) {
	const zonesNS, teamNS, otherNS = "xns-zones", "xns-team-a", "xns-other"
	for _, n := range []*corev1.Namespace{
		{ObjectMeta: metav1.ObjectMeta{Name: zonesNS}},
		{ObjectMeta: metav1.ObjectMeta{Name: teamNS, Labels: map[string]string{"dns.example.com/team": "a"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: otherNS}},
	} {
		testkit.Must(t, k8sClient.Create(ctx, n))
	}
	in := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	for _, o := range []client.Object{
		&v1alpha1.BindCluster{ObjectMeta: in(zonesNS, "auth")},
		&v1alpha1.BindTSIGKey{ObjectMeta: in(zonesNS, "updates")},
		&v1alpha1.BindZone{ObjectMeta: in(zonesNS, "shared"), Spec: v1alpha1.BindZoneSpec{
			ClusterRef: ref("auth"), ZoneName: "shared.example", UpdateKeyRef: &v1alpha1.LocalObjectReference{Name: "updates"},
			AllowedRecords: &v1alpha1.AllowedRecords{
				Namespaces:   metav1.LabelSelector{MatchLabels: map[string]string{"dns.example.com/team": "a"}},
				NameSuffixes: []v1alpha1.RecordName{"team-a"},
				Types:        []v1alpha1.RecordType{"A", "CNAME"},
			},
		}},
		&v1alpha1.BindZone{ObjectMeta: in(zonesNS, "closed"), Spec: v1alpha1.BindZoneSpec{
			ClusterRef: ref("auth"), ZoneName: "closed.example", UpdateKeyRef: &v1alpha1.LocalObjectReference{Name: "updates"},
		}},
		// The zone's own namespace is not limited by allowedRecords.
		&v1alpha1.DNSRecord{ObjectMeta: in(zonesNS, "home"), Spec: v1alpha1.DNSRecordSpec{
			ZoneRef: v1alpha1.ZoneReference{Name: "shared"}, Name: "app.team-a", Type: "TXT", Values: []string{"owned at home"}}},
	} {
		testkit.Must(t, k8sClient.Create(ctx, o))
	}
	record := func(ns, name, zone, owner string, typ v1alpha1.RecordType, value string) *v1alpha1.DNSRecord {
		return &v1alpha1.DNSRecord{ObjectMeta: in(ns, name), Spec: v1alpha1.DNSRecordSpec{
			ZoneRef: v1alpha1.ZoneReference{Namespace: zonesNS, Name: zone}, Name: v1alpha1.RecordName(owner), Type: typ, Values: []string{value}}}
	}
	// Admitted: the webhook reads namespaces and zones through its cache,
	// which may lag the scene by a moment.
	ok := record(teamNS, "api", "shared", "api.team-a", "A", "192.0.2.10")
	NewWithT(t).Eventually(func() error { return k8sClient.Create(ctx, ok.DeepCopy(), client.DryRunAll) }).WithTimeout(10 * time.Second).Should(Succeed())
	testkit.Must(t, k8sClient.Create(ctx, ok))

	for _, tc := range []struct {
		desc       string
		rec        *v1alpha1.DNSRecord
		path, want string
	}{
		{"zone without allowedRecords", record(teamNS, "c", "closed", "api", "A", "192.0.2.1"),
			"spec.zoneRef.namespace", `BindZone xns-zones/closed does not admit DNSRecords from other namespaces; its owner can admit namespace "xns-team-a" with spec.allowedRecords`},
		{"namespace not selected", record(otherNS, "o", "shared", "api.team-a", "A", "192.0.2.1"),
			"spec.zoneRef.namespace", `does not admit DNSRecords from namespace "xns-other": its spec.allowedRecords.namespaces does not select it`},
		{"name outside the suffixes", record(teamNS, "n", "shared", "xteam-a", "A", "192.0.2.1"),
			"spec.name", "is under none of its spec.allowedRecords.nameSuffixes"},
		{"type not admitted", record(teamNS, "t", "shared", "txt.team-a", "TXT", "hello"),
			"spec.type", "is not among its spec.allowedRecords.types"},
		{"CNAME beside another namespace's data", record(teamNS, "alias", "shared", "app.team-a", "CNAME", "api.team-a"),
			"spec.type", "a DNSRecord in another namespace already holds TXT data at app.team-a, and a CNAME cannot coexist with other records at a name"},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			err := k8sClient.Create(ctx, tc.rec)
			if err == nil {
				t.Fatalf("admitted; want a refusal at %s: %s", tc.path, tc.want)
			}
			for _, w := range []string{tc.path, tc.want} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), `"home"`) {
				t.Errorf("refusal names a DNSRecord of another namespace:\n%v", err)
			}
		})
	}

	// A squatter's CNAME, applied from another namespace before the zone
	// existed (admitted with a warning), holds no name against the zone
	// owner's own records once the zone exists and does not admit it.
	testkit.Must(t, k8sClient.Create(ctx, record(otherNS, "grab", "later", "www", "CNAME", "evil.example.net.")))
	testkit.Must(t, k8sClient.Create(ctx, &v1alpha1.BindZone{ObjectMeta: in(zonesNS, "later"), Spec: v1alpha1.BindZoneSpec{
		ClusterRef: ref("auth"), ZoneName: "later.example", UpdateKeyRef: &v1alpha1.LocalObjectReference{Name: "updates"},
	}}))
	own := &v1alpha1.DNSRecord{ObjectMeta: in(zonesNS, "www"), Spec: v1alpha1.DNSRecordSpec{
		ZoneRef: v1alpha1.ZoneReference{Name: "later"}, Name: "www", Type: "A", Values: []string{"192.0.2.80"}}}
	if err := k8sClient.Create(ctx, own); err != nil {
		t.Errorf("the zone owner's record is refused beside a squatter's CNAME the zone does not admit: %v", err)
	}
}
