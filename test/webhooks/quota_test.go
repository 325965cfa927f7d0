package webhooks

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/quota"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestQuotas (docs/behaviours.md, "Quotas"): through the API server, a
// namespace filled to its object quota gets the next create refused with
// the limit and the use, while a delete goes through and makes room, and
// another namespace is not affected; a zone at its record-set quota
// refuses the next DNSRecord at spec.zoneRef and the growth of its inline
// records at spec.records.
//
// The suite runs with the default limits (the benchmarks measure the
// check as shipped); this test lowers them for its own duration, once the
// tracker has counted its scene. No other test runs meanwhile: none of
// the package's top-level tests is parallel.
func TestQuotas(t *testing.T) {
	const full, other = "quota-full", "quota-other"
	in := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	zone := func(ns string) *v1alpha1.BindZone {
		return &v1alpha1.BindZone{ObjectMeta: in(ns, "zone"), Spec: v1alpha1.BindZoneSpec{ClusterRef: ref("auth"), ZoneName: v1alpha1.DomainName(ns + ".example"),
			Records: []v1alpha1.RecordSet{{Name: "@", Type: "NS", Values: []string{"ns1.example.net."}}}}}
	}
	record := func(ns string, i int) *v1alpha1.DNSRecord {
		return &v1alpha1.DNSRecord{ObjectMeta: in(ns, fmt.Sprintf("r%d", i)), Spec: v1alpha1.DNSRecordSpec{
			ZoneRef: v1alpha1.ZoneReference{Name: "zone"}, Name: v1alpha1.RecordName(fmt.Sprintf("r%d", i)), Type: "A", Values: []string{fmt.Sprintf("192.0.2.%d", i+1)}}}
	}
	for _, ns := range []string{full, other} {
		testkit.Must(t, k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
		testkit.Must(t, k8sClient.Create(ctx, zone(ns)))
	}
	for i := range 4 {
		testkit.Must(t, k8sClient.Create(ctx, record(full, i)))
	}
	testkit.Must(t, k8sClient.Create(ctx, record(other, 0)))
	// The tracker follows the cache, which may lag the creates a moment.
	counted := func(ns string, n int64) {
		t.Helper()
		NewWithT(t).Eventually(func() int64 { return quotas.Namespace(ns).Count }).WithTimeout(10*time.Second).Should(Equal(n), "objects of %s counted", ns)
	}
	counted(full, 5)
	counted(other, 2)
	t.Cleanup(func() { quotas.SetLimits(quota.DefaultLimits()) })

	t.Run("namespace objects", func(t *testing.T) {
		quotas.SetLimits(quota.Limits{NamespaceObjects: 5})
		err := k8sClient.Create(ctx, record(full, 4))
		expectInvalid(t, err, "metadata.namespace",
			`namespace "quota-full" holds 5 bind.unkin.net objects and may hold at most 5 (the manager's --quota-namespace-objects); delete some, or ask the operator's administrator to raise the limit`)
		// Every kind counts, and is refused alike.
		err = k8sClient.Create(ctx, &v1alpha1.BindACL{ObjectMeta: in(full, "acl"), Spec: v1alpha1.BindACLSpec{Entries: []v1alpha1.AddressMatchElement{{Address: "192.0.2.0/24"}}}})
		expectInvalid(t, err, "metadata.namespace", `namespace "quota-full" holds 5 bind.unkin.net objects`)
		// Another namespace is not affected.
		testkit.Must(t, k8sClient.Create(ctx, record(other, 1)))
		// A delete is never refused, and makes room once counted.
		testkit.Must(t, k8sClient.Delete(ctx, record(full, 0)))
		counted(full, 4)
		testkit.Must(t, k8sClient.Create(ctx, record(full, 4)))
		counted(full, 5)
		// An update that adds no object passes at the limit.
		r := &v1alpha1.DNSRecord{}
		testkit.Must(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: full, Name: "r1"}, r))
		r.Spec.Values = append(r.Spec.Values, "192.0.2.100")
		before := quotas.Namespace(full).Bytes
		testkit.Must(t, k8sClient.Update(ctx, r))
		// `,"192.0.2.100"` more in its spec.
		NewWithT(t).Eventually(func() int64 { return quotas.Namespace(full).Bytes }).WithTimeout(10 * time.Second).Should(Equal(before + 14))
	})

	t.Run("namespace bytes", func(t *testing.T) {
		use := quotas.Namespace(full)
		quotas.SetLimits(quota.Limits{NamespaceBytes: use.Bytes})
		r := &v1alpha1.DNSRecord{}
		testkit.Must(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: full, Name: "r2"}, r))
		r.Spec.Values = append(r.Spec.Values, "192.0.2.101")
		expectInvalid(t, k8sClient.Update(ctx, r), "spec",
			fmt.Sprintf(`namespace "quota-full" holds %s of bind.unkin.net specs and may hold at most %s (the manager's --quota-namespace-bytes); this would add 14 bytes`, quota.Bytes(use.Bytes), quota.Bytes(use.Bytes)))
		// Shrinking is never refused.
		testkit.Must(t, k8sClient.Get(ctx, client.ObjectKey{Namespace: full, Name: "r1"}, r))
		r.Spec.Values = r.Spec.Values[:1]
		testkit.Must(t, k8sClient.Update(ctx, r))
	})

	t.Run("zone records", func(t *testing.T) {
		key := types.NamespacedName{Namespace: full, Name: "zone"}
		// One inline set and four DNSRecords.
		NewWithT(t).Eventually(func() int64 { return quotas.Zone(key).Total().Count }).WithTimeout(10 * time.Second).Should(BeEquivalentTo(5))
		quotas.SetLimits(quota.Limits{ZoneRecords: 5})
		expectInvalid(t, k8sClient.Create(ctx, record(full, 5)), "spec.zoneRef",
			"BindZone quota-full/zone holds 5 record sets (its spec.records and the DNSRecords it admits) and may hold at most 5 (the manager's --quota-zone-records); delete some, or ask the operator's administrator to raise the limit")
		z := &v1alpha1.BindZone{}
		testkit.Must(t, k8sClient.Get(ctx, key, z))
		z.Spec.Records = append(z.Spec.Records, v1alpha1.RecordSet{Name: "mail", Type: "A", Values: []string{"192.0.2.25"}})
		expectInvalid(t, k8sClient.Update(ctx, z), "spec.records", "BindZone quota-full/zone holds 5 record sets")
		// The other namespace's zone holds two.
		testkit.Must(t, k8sClient.Create(ctx, record(other, 2)))
	})
}
