package clusters

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/test/rechecktest"
)

// A cluster the rules refuse is reported, and nothing is written for it.
func TestReconcilerReportsRefusedClusterAndStops(t *testing.T) {
	ctx := context.Background()
	g, recorder := NewWithT(t), events.NewFakeRecorder(10)
	cluster := rechecktest.Refused(&bindv1alpha1.BindCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "dns", UID: "uid-dns", Generation: 1}}, "records")
	c := fake.NewClientBuilder().WithScheme(rechecktest.Scheme(t)).WithObjects(cluster).WithStatusSubresource(cluster).Build()
	rc := reconcileutil.NewRechecks(rechecktest.LabelRules(nil))
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "dns"}}
	_, err := (&BindClusterReconciler{Client: c, Recorder: recorder, Rechecks: rc}).Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	var got bindv1alpha1.BindCluster
	g.Expect(c.Get(ctx, req.NamespacedName, &got)).To(Succeed())
	rechecktest.ExpectInvalid(g, got.Status.Conditions, recorder)
	var svcs corev1.ServiceList
	g.Expect(c.List(ctx, &svcs)).To(Succeed())
	g.Expect(svcs.Items).To(BeEmpty(), "nothing is written for it")
}
