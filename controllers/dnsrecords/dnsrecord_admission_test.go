package dnsrecords

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"git.unkin.net/unkin/bind-operator/agent"
	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/recordindex"
)

// squatScene is issue 44's squatting scene: zone prod of namespace "a"
// (admitting no other namespace unless allowed is set), a DNSRecord of
// namespace "b" for its www A made an hour before the zone's owner made
// its own, and the owner's.
type squatScene struct {
	zone            *bindv1alpha1.BindZone
	squatter, owner *bindv1alpha1.DNSRecord
	client          client.Client
	names, zones    *recordindex.Index
}

func newSquatScene(t *testing.T, allowed *bindv1alpha1.AllowedRecords, more ...*bindv1alpha1.DNSRecord) *squatScene {
	t.Helper()
	g := NewWithT(t)
	early, late := metav1.NewTime(time.Now().Add(-time.Hour)), metav1.Now()
	rec := sceneRecord
	s := &squatScene{
		zone: &bindv1alpha1.BindZone{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "prod"},
			Spec: bindv1alpha1.BindZoneSpec{ZoneName: "prod.example", ClusterRef: bindv1alpha1.LocalObjectReference{Name: "dns"}, AllowedRecords: allowed}},
		squatter: rec("b", "www", "www", "A", early),
		owner:    rec("a", "www", "www", "A", late),
	}
	scheme := runtime.NewScheme()
	g.Expect(bindv1alpha1.AddToScheme(scheme)).To(Succeed())
	g.Expect(corev1.AddToScheme(scheme)).To(Succeed())
	objs := []client.Object{s.zone, s.squatter, s.owner,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"team": "b"}}},
	}
	for _, m := range more {
		objs = append(objs, m)
	}
	s.client = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&bindv1alpha1.DNSRecord{}).Build()
	informer := listed{toolscache.NewSharedIndexInformer(&toolscache.ListWatch{}, &bindv1alpha1.DNSRecord{}, 0, toolscache.Indexers{})}
	var err error
	s.names, err = recordindex.OnInformer(informer, recordindex.ByZoneName)
	g.Expect(err).NotTo(HaveOccurred())
	s.zones, err = recordindex.OnInformer(informer, recordindex.ByZone)
	g.Expect(err).NotTo(HaveOccurred())
	for _, r := range append([]*bindv1alpha1.DNSRecord{s.squatter, s.owner}, more...) {
		g.Expect(informer.GetIndexer().Add(r)).To(Succeed())
	}
	return s
}

// sceneRecord is a DNSRecord of namespace ns for zone a/prod.
func sceneRecord(ns, name, owner, typ string, at metav1.Time) *bindv1alpha1.DNSRecord {
	return &bindv1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), CreationTimestamp: at, Generation: 1},
		Spec: bindv1alpha1.DNSRecordSpec{ZoneRef: bindv1alpha1.ZoneReference{Namespace: "a", Name: "prod"},
			Name: bindv1alpha1.RecordName(owner), Type: bindv1alpha1.RecordType(typ), Values: []string{"192.0.2.1"}},
	}
}

func (s *squatScene) reconciler() *DNSRecordReconciler {
	return &DNSRecordReconciler{Client: s.client, Recorder: events.NewFakeRecorder(10), Deleted: NewDeletedRecords(), names: s.names}
}

// TestClaimsOnlyByAdmittedRecords: a DNSRecord its zone does not admit
// claims nothing, however old; one it admits does, and is named to the
// requester only in the requester's own namespace.
func TestClaimsOnlyByAdmittedRecords(t *testing.T) {
	ctx := context.Background()
	t.Run("not admitted: the owner's record is not claimed", func(t *testing.T) {
		s := newSquatScene(t, nil)
		owner, err := s.reconciler().claimant(ctx, s.owner, s.zone, newAdmissions(s.client, s.zone))
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(owner).To(BeEmpty())
	})
	t.Run("admitted by namespace, refused by suffix", func(t *testing.T) {
		s := newSquatScene(t, &bindv1alpha1.AllowedRecords{
			Namespaces:   metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}},
			NameSuffixes: []bindv1alpha1.RecordName{"team-b"},
		})
		owner, err := s.reconciler().claimant(ctx, s.owner, s.zone, newAdmissions(s.client, s.zone))
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(owner).To(BeEmpty())
	})
	t.Run("refused by type", func(t *testing.T) {
		s := newSquatScene(t, &bindv1alpha1.AllowedRecords{
			Namespaces: metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}},
			Types:      []bindv1alpha1.RecordType{"TXT"},
		})
		owner, err := s.reconciler().claimant(ctx, s.owner, s.zone, newAdmissions(s.client, s.zone))
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(owner).To(BeEmpty())
	})
	t.Run("admitted: the older record owns, unnamed across namespaces", func(t *testing.T) {
		s := newSquatScene(t, &bindv1alpha1.AllowedRecords{Namespaces: metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}})
		owner, err := s.reconciler().claimant(ctx, s.owner, s.zone, newAdmissions(s.client, s.zone))
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(owner).To(Equal("a DNSRecord in another namespace"))
	})
	t.Run("same namespace: named", func(t *testing.T) {
		s := newSquatScene(t, nil, sceneRecord("a", "www-first", "www", "A", metav1.NewTime(time.Now().Add(-2*time.Hour))))
		owner, err := s.reconciler().claimant(ctx, s.owner, s.zone, newAdmissions(s.client, s.zone))
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		NewWithT(t).Expect(owner).To(Equal(`DNSRecord "www-first"`))
	})
}

// TestSquatterReportsNotAdmitted: the squatter's reconcile reports
// NotAdmitted (and writes nothing: it has no server to write to).
func TestSquatterReportsNotAdmitted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newSquatScene(t, nil)
	_, err := s.reconciler().Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(s.squatter)})
	g.Expect(err).NotTo(HaveOccurred())
	var got bindv1alpha1.DNSRecord
	g.Expect(s.client.Get(ctx, client.ObjectKeyFromObject(s.squatter), &got)).To(Succeed())
	c := meta.FindStatusCondition(got.Status.Conditions, bindv1alpha1.ConditionReady)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Reason).To(Equal(bindv1alpha1.ReasonNotAdmitted))
	g.Expect(got.Status.AppliedValues).To(BeEmpty())
}

// TestOwnedSetsOnlyOfAdmittedRecords: the sets the agent guards and
// records are the zone's own and those of the DNSRecords it admits, live
// or deleted; a record it does not admit is in none of them.
func TestOwnedSetsOnlyOfAdmittedRecords(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	at := metav1.Now()
	admittedTXT := &bindv1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "txt", UID: "b/txt", CreationTimestamp: at},
		Spec:       bindv1alpha1.DNSRecordSpec{ZoneRef: bindv1alpha1.ZoneReference{Namespace: "a", Name: "prod"}, Name: "info.team-b", Type: "TXT", Values: []string{`"x"`}},
		Status:     bindv1alpha1.DNSRecordStatus{AppliedValues: []string{`"x"`}},
	}
	refusedMX := &bindv1alpha1.DNSRecord{
		ObjectMeta: metav1.ObjectMeta{Namespace: "b", Name: "mx", UID: "b/mx", CreationTimestamp: at},
		Spec:       bindv1alpha1.DNSRecordSpec{ZoneRef: bindv1alpha1.ZoneReference{Namespace: "a", Name: "prod"}, Name: "mail.team-b", Type: "MX", Values: []string{"10 mx.example."}},
	}
	s := newSquatScene(t, &bindv1alpha1.AllowedRecords{
		Namespaces:   metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}},
		NameSuffixes: []bindv1alpha1.RecordName{"team-b"},
		Types:        []bindv1alpha1.RecordType{"TXT"},
	}, admittedTXT, refusedMX)
	s.owner.Status.AppliedValues = []string{"192.0.2.1"}
	deleted := NewDeletedRecords()
	// A deleted squatter, its tombstone pending: not the zone's either.
	gone := s.squatter.DeepCopy()
	gone.Name, gone.UID, gone.Spec.Name = "api", "b/api", "api"
	deleted.put(gone, time.Now())
	o := &ZoneOwners{client: s.client, records: s.zones, deleted: deleted}
	sets, err := o.ownedSets(ctx, s.zone)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sets).To(Equal([]agent.OwnedSet{
		{Name: "info.team-b.prod.example.", Type: "TXT", Values: []string{`"x"`}},
		{Name: "prod.example.", Type: "NS"},
		{Name: "prod.example.", Type: "SOA"},
		{Name: "www.prod.example.", Type: "A", Values: []string{"192.0.2.1"}},
	}))
}
