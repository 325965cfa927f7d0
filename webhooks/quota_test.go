package webhooks

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/quota"
)

// quotaWebhooks are the webhooks reading objs, with a tracker holding
// limits that has counted objs, as the manager's informers would have.
func quotaWebhooks(t testing.TB, limits quota.Limits, objs ...client.Object) (*webhooks, *quota.Tracker) {
	t.Helper()
	ws := testWebhooks(t, objs...)
	tr := quota.NewTracker(limits)
	for _, o := range objs {
		tr.Add(o)
	}
	ws.quotas = &quotas{tracker: tr, reader: ws.reader}
	return ws, tr
}

// zoneKeyNS is quotaZone("ns")'s key.
var zoneKeyNS = types.NamespacedName{Namespace: "ns", Name: "example"}

func quotaRecord(ns, name, zoneNS string, values ...string) *v1alpha1.DNSRecord {
	return &v1alpha1.DNSRecord{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.DNSRecordSpec{
		ZoneRef: v1alpha1.ZoneReference{Name: "example", Namespace: zoneNS}, Name: v1alpha1.RecordName(name), Type: "A", Values: values}}
}

func quotaZone(ns string, records ...v1alpha1.RecordSet) *v1alpha1.BindZone {
	return &v1alpha1.BindZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "example"}, Spec: v1alpha1.BindZoneSpec{
		ClusterRef: ref("dns"), ZoneName: "example.com", Type: v1alpha1.ZonePrimary, Records: records}}
}

// createRecord defaults and validates r through the DNSRecord's one call
// with the quota check, as SetupWithManager registers it.
func createRecord(ws *webhooks, r *v1alpha1.DNSRecord) error {
	ctx := context.Background()
	if err := ws.record.Default(ctx, r); err != nil {
		return err
	}
	_, err := withQuota[*v1alpha1.DNSRecord](ws.record, "DNSRecord", ws.quotas).ValidateCreate(ctx, r)
	return err
}

func updateRecord(ws *webhooks, old, r *v1alpha1.DNSRecord) error {
	ctx := context.Background()
	if err := ws.record.Default(ctx, r); err != nil {
		return err
	}
	_, err := withQuota[*v1alpha1.DNSRecord](ws.record, "DNSRecord", ws.quotas).ValidateUpdate(ctx, old, r)
	return err
}

// refusedAt expects err to be one refusal at path holding each of want.
func refusedAt(t *testing.T, err error, path string, want ...string) {
	t.Helper()
	got := causes(t, err)
	g := NewWithT(t)
	g.Expect(got).To(HaveLen(1), "one refusal: %v", err)
	g.Expect(got[0].Field).To(Equal(path))
	g.Expect(got[0].Type).To(Equal(field.ErrorTypeForbidden))
	for _, w := range want {
		g.Expect(got[0].Detail).To(ContainSubstring(w))
	}
}

// TestNamespaceQuotaRefusesTheNextCreate: a namespace at its object quota
// gets the next create refused at metadata.namespace, with the use, the
// limit and the flag; another namespace is not affected; an update that
// does not grow, and one of an object being deleted, pass.
func TestNamespaceQuotaRefusesTheNextCreate(t *testing.T) {
	g := NewWithT(t)
	zone := quotaZone("ns")
	a := quotaRecord("ns", "a", "", "192.0.2.1")
	b := quotaRecord("ns", "b", "", "192.0.2.2")
	otherZone := quotaZone("other")
	ws, tr := quotaWebhooks(t, quota.Limits{NamespaceObjects: 3}, zone, a, b, otherZone,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	g.Expect(tr.Namespace("ns").Count).To(BeEquivalentTo(3))

	refusedAt(t, createRecord(ws, quotaRecord("ns", "c", "", "192.0.2.3")), "metadata.namespace",
		`namespace "ns" holds 3 bind.unkin.net objects and may hold at most 3 (the manager's --quota-namespace-objects); delete some, or ask the operator's administrator to raise the limit`)
	// Another kind counts the same.
	acl := &v1alpha1.BindACL{ObjectMeta: objectMeta("acl"), Spec: v1alpha1.BindACLSpec{Entries: []v1alpha1.AddressMatchElement{{Address: "192.0.2.0/24"}}}}
	_, err := withQuota[*v1alpha1.BindACL](ws.acl, "BindACL", ws.quotas).ValidateCreate(context.Background(), acl)
	refusedAt(t, err, "metadata.namespace", `namespace "ns" holds 3`)

	g.Expect(createRecord(ws, quotaRecord("other", "c", "", "192.0.2.3"))).To(Succeed(), "another namespace is not affected")

	grown := a.DeepCopy()
	grown.Spec.Values = []string{"192.0.2.1", "192.0.2.9"}
	g.Expect(updateRecord(ws, a, grown)).To(Succeed(), "an update adds no object")

	// Once one is deleted, there is room again.
	tr.Delete(b)
	g.Expect(createRecord(ws, quotaRecord("ns", "c", "", "192.0.2.3"))).To(Succeed())
}

// TestNamespaceBytesQuota: an update that grows the namespace's specs past
// its bytes refuses at spec with what it would add; a shrinking update
// passes even over a limit lowered since; so does any update of an
// object being deleted.
func TestNamespaceBytesQuota(t *testing.T) {
	g := NewWithT(t)
	zone := quotaZone("ns")
	a := quotaRecord("ns", "a", "", "192.0.2.1", "192.0.2.2")
	defaultDNSRecord(a, zone) // as stored
	ws, tr := quotaWebhooks(t, quota.Limits{}, zone, a, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})
	use := tr.Namespace("ns")
	tr.SetLimits(quota.Limits{NamespaceBytes: use.Bytes + 5})

	grown := a.DeepCopy()
	grown.Spec.Values = []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}
	refusedAt(t, updateRecord(ws, a, grown), "spec", `namespace "ns" holds `+quota.Bytes(use.Bytes)+" of bind.unkin.net specs",
		"at most "+quota.Bytes(use.Bytes+5)+" (the manager's --quota-namespace-bytes); this would add 12 bytes")

	tr.SetLimits(quota.Limits{NamespaceBytes: 1, NamespaceObjects: 1})
	shrunk := a.DeepCopy()
	shrunk.Spec.Values = []string{"192.0.2.1"}
	g.Expect(updateRecord(ws, a, shrunk)).To(Succeed(), "a shrinking update over the limit")

	deleting := grown.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{}
	g.Expect(updateRecord(ws, a, deleting)).To(Succeed(), "an object being deleted")
}

// TestZoneQuota: a zone at its record-set quota refuses the next
// DNSRecord at spec.zoneRef and the growth of its own inline records at
// spec.records. Records of a namespace the zone does not admit do not
// count (a tenant cannot fill another's zone); those of one it admits do,
// and are not named.
func TestZoneQuota(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}
	teamB := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"team": "b"}}}
	ns1 := v1alpha1.RecordSet{Name: "@", Type: "NS", Values: []string{"ns1.example.net."}}
	own := quotaRecord("ns", "a", "", "192.0.2.1")
	squat1 := quotaRecord("team-b", "squat1", "ns", "192.0.2.8")
	squat2 := quotaRecord("team-b", "squat2", "ns", "192.0.2.9")
	limits := quota.Limits{ZoneRecords: 3}

	t.Run("records of a namespace the zone does not admit do not count", func(t *testing.T) {
		ws, tr := quotaWebhooks(t, limits, ns, teamB, quotaZone("ns", ns1), own, squat1, squat2)
		NewWithT(t).Expect(tr.Zone(zoneKeyNS).Total().Count).To(BeEquivalentTo(4))
		NewWithT(t).Expect(createRecord(ws, quotaRecord("ns", "b", "", "192.0.2.2"))).To(Succeed())
	})

	t.Run("the zone's own records fill it", func(t *testing.T) {
		ws, _ := quotaWebhooks(t, limits, ns, teamB, quotaZone("ns", ns1), own, quotaRecord("ns", "b", "", "192.0.2.2"), squat1)
		refusedAt(t, createRecord(ws, quotaRecord("ns", "c", "", "192.0.2.3")), "spec.zoneRef",
			"BindZone ns/example holds 3 record sets (its spec.records and the DNSRecords it admits) and may hold at most 3 (the manager's --quota-zone-records)")
	})

	t.Run("records of a namespace the zone admits count, unnamed", func(t *testing.T) {
		open := quotaZone("ns", ns1)
		open.Spec.AllowedRecords = &v1alpha1.AllowedRecords{Namespaces: metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}
		ws, _ := quotaWebhooks(t, limits, ns, teamB, open, own, squat1, squat2)
		err := createRecord(ws, quotaRecord("ns", "b", "", "192.0.2.2"))
		refusedAt(t, err, "spec.zoneRef", "BindZone ns/example holds 4 record sets")
		NewWithT(t).Expect(err.Error()).NotTo(ContainSubstring("squat"))
		NewWithT(t).Expect(err.Error()).NotTo(ContainSubstring("team-b"))
		// The admitted namespace is refused alike.
		refusedAt(t, createRecord(ws, quotaRecord("team-b", "c", "ns", "192.0.2.3")), "spec.zoneRef", "holds 4 record sets")
	})

	t.Run("inline records grow past the quota", func(t *testing.T) {
		zone := quotaZone("ns", ns1, v1alpha1.RecordSet{Name: "www", Type: "A", Values: []string{"192.0.2.80"}})
		ws, _ := quotaWebhooks(t, limits, ns, zone, own)
		grown := zone.DeepCopy()
		grown.Spec.Records = append(grown.Spec.Records, v1alpha1.RecordSet{Name: "mail", Type: "A", Values: []string{"192.0.2.25"}})
		v := withQuota[*v1alpha1.BindZone](ws.zone, "BindZone", ws.quotas)
		NewWithT(t).Expect(ws.zone.Default(context.Background(), grown)).To(Succeed())
		_, err := v.ValidateUpdate(context.Background(), zone, grown)
		refusedAt(t, err, "spec.records", "BindZone ns/example holds 3 record sets", "--quota-zone-records")
		shrunk := zone.DeepCopy()
		shrunk.Spec.Records = shrunk.Spec.Records[:1]
		NewWithT(t).Expect(ws.zone.Default(context.Background(), shrunk)).To(Succeed())
		_, err = v.ValidateUpdate(context.Background(), zone, shrunk)
		NewWithT(t).Expect(err).NotTo(HaveOccurred(), "removing inline records")
	})

	t.Run("zone bytes", func(t *testing.T) {
		ws, tr := quotaWebhooks(t, quota.Limits{}, ns, quotaZone("ns", ns1), own)
		use := tr.Zone(zoneKeyNS).Total()
		tr.SetLimits(quota.Limits{ZoneBytes: use.Bytes + 10})
		refusedAt(t, createRecord(ws, quotaRecord("ns", "b", "", "192.0.2.2")), "spec.zoneRef",
			"BindZone ns/example holds "+quota.Bytes(use.Bytes)+" of records", "--quota-zone-bytes")
	})
}

// TestQuotaAfterValidity: an object that is invalid is refused for what
// is wrong with it, not for the quota.
func TestQuotaAfterValidity(t *testing.T) {
	ws, _ := quotaWebhooks(t, quota.Limits{NamespaceObjects: 1}, quotaZone("ns"), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}})
	got := causes(t, createRecord(ws, quotaRecord("ns", "a", "", "2001:db8::1")))
	NewWithT(t).Expect(got).To(HaveLen(1))
	NewWithT(t).Expect(got[0].Field).To(Equal("spec.values[0]"))
}
