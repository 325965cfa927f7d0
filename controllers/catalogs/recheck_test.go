package catalogs

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/test/rechecktest"
)

// A catalog the rules refuse is reported and not transferred: the
// reconciler here has no endpoints, so any step past the report would fail.
func TestReconcilerReportsRefusedCatalogAndStops(t *testing.T) {
	ctx := context.Background()
	g, recorder := NewWithT(t), events.NewFakeRecorder(10)
	cat := rechecktest.Refused(&bindv1alpha1.BindCatalogZone{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cat", UID: "uid-cat", Generation: 1}}, "records")
	c := fake.NewClientBuilder().WithScheme(rechecktest.Scheme(t)).WithObjects(cat).WithStatusSubresource(cat).Build()
	rc := reconcileutil.NewRechecks(rechecktest.LabelRules(nil))
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "cat"}}
	_, err := (&BindCatalogZoneReconciler{Client: c, Recorder: recorder, Rechecks: rc}).Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	var got bindv1alpha1.BindCatalogZone
	g.Expect(c.Get(ctx, req.NamespacedName, &got)).To(Succeed())
	rechecktest.ExpectInvalid(g, got.Status.Conditions, recorder)
}
