package zones

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

// A zone the rules refuse is reported and nothing reaches its pods: the
// reconciler here has no agents, servers or endpoints, so any step past
// the report would fail. Once it is gone, its verdict is forgotten.
func TestReconcilerReportsRefusedZoneAndStops(t *testing.T) {
	ctx := context.Background()
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Generation: 1}
	}
	zone := rechecktest.Refused(&bindv1alpha1.BindZone{ObjectMeta: meta("z"), Spec: bindv1alpha1.BindZoneSpec{ZoneName: "example.com", Type: bindv1alpha1.ZonePrimary,
		ClusterRef: bindv1alpha1.LocalObjectReference{Name: "dns"}}}, "records")
	cluster := rechecktest.Refused(&bindv1alpha1.BindCluster{ObjectMeta: meta("dns")}, "records")
	objs := []client.Object{zone, cluster}
	c := fake.NewClientBuilder().WithScheme(rechecktest.Scheme(t)).WithObjects(objs...).WithStatusSubresource(objs...).Build()
	calls := 0
	rc := reconcileutil.NewRechecks(rechecktest.LabelRules(&calls))
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "z"}}

	t.Run("BindZone", func(t *testing.T) {
		g, recorder := NewWithT(t), events.NewFakeRecorder(10)
		_, err := (&BindZoneReconciler{Client: c, Recorder: recorder, Rechecks: rc}).Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
		var got bindv1alpha1.BindZone
		g.Expect(c.Get(ctx, req.NamespacedName, &got)).To(Succeed())
		rechecktest.ExpectInvalid(g, got.Status.Conditions, recorder)
		g.Expect(got.Finalizers).To(BeEmpty(), "nothing was added to the pods, so nothing to remove")
		// Again: the same message is no new event.
		_, err = (&BindZoneReconciler{Client: c, Recorder: recorder, Rechecks: rc}).Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(recorder.Events).NotTo(Receive())
	})
	t.Run("gone", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(c.Delete(ctx, zone)).To(Succeed())
		_, err := (&BindZoneReconciler{Client: c, Rechecks: rc}).Reconcile(ctx, req)
		g.Expect(err).NotTo(HaveOccurred())
		// The verdict is forgotten: the same generation is checked anew.
		before := calls
		g.Expect(rc.Check(zone)).NotTo(BeEmpty())
		g.Expect(calls).To(Equal(before+1), "the verdict of a zone that is gone is dropped")
	})
}
