package dnsrecords

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/test/rechecktest"
)

// A record the rules refuse is reported and what it wrote stays; a valid
// record of a zone the rules refuse writes nothing either. The reconciler
// here has no servers, so any write would fail.
func TestReconcilerReportsRefusedRecordAndStops(t *testing.T) {
	ctx := context.Background()
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Generation: 1}
	}
	zone := rechecktest.Refused(&bindv1alpha1.BindZone{ObjectMeta: meta("z"), Spec: bindv1alpha1.BindZoneSpec{ZoneName: "example.com", Type: bindv1alpha1.ZonePrimary,
		ClusterRef: bindv1alpha1.LocalObjectReference{Name: "dns"}}}, "records")
	rec := rechecktest.Refused(&bindv1alpha1.DNSRecord{ObjectMeta: meta("r"), Spec: bindv1alpha1.DNSRecordSpec{ZoneRef: bindv1alpha1.ZoneReference{Name: "z"},
		Name: "www", Type: "A", Values: []string{"192.0.2.1"}}, Status: bindv1alpha1.DNSRecordStatus{AppliedValues: []string{"192.0.2.9"}}}, "records")
	other := &bindv1alpha1.DNSRecord{ObjectMeta: meta("other"), Spec: bindv1alpha1.DNSRecordSpec{ZoneRef: bindv1alpha1.ZoneReference{Name: "z"},
		Name: "api", Type: "A", Values: []string{"192.0.2.2"}}}
	cluster := rechecktest.Refused(&bindv1alpha1.BindCluster{ObjectMeta: meta("dns")}, "records")
	objs := []client.Object{zone, rec, other, cluster}
	c := fake.NewClientBuilder().WithScheme(rechecktest.Scheme(t)).WithObjects(objs...).WithStatusSubresource(objs...).Build()
	rc := reconcileutil.NewRechecks(rechecktest.LabelRules(nil))
	req := func(name string) ctrl.Request {
		return ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: name}}
	}

	g, recorder := NewWithT(t), events.NewFakeRecorder(10)
	r := &DNSRecordReconciler{Client: c, Recorder: recorder, Rechecks: rc, Deleted: NewDeletedRecords()}
	_, err := r.Reconcile(ctx, req("r"))
	g.Expect(err).NotTo(HaveOccurred())
	var got bindv1alpha1.DNSRecord
	g.Expect(c.Get(ctx, req("r").NamespacedName, &got)).To(Succeed())
	rechecktest.ExpectInvalid(g, got.Status.Conditions, recorder)
	g.Expect(got.Status.AppliedValues).To(Equal([]string{"192.0.2.9"}), "what it wrote stays, nothing more is written")

	// A valid record of a refused zone writes nothing either.
	_, err = r.Reconcile(ctx, req("other"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Get(ctx, req("other").NamespacedName, &got)).To(Succeed())
	ready := rechecktest.ReadyOf(got.Status.Conditions)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Reason).To(Equal(bindv1alpha1.ReasonZoneNotReady))
	g.Expect(ready.Message).To(HavePrefix(`BindZone "z" in namespace "ns" fails the operator's current admission rules`))
}
