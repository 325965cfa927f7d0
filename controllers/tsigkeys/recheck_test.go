package tsigkeys

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

// A key the rules refuse is reported, and no material is generated for it.
func TestReconcilerReportsRefusedKeyAndStops(t *testing.T) {
	ctx := context.Background()
	g, recorder := NewWithT(t), events.NewFakeRecorder(10)
	key := rechecktest.Refused(&bindv1alpha1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "k", UID: "uid-k", Generation: 1}}, "records")
	c := fake.NewClientBuilder().WithScheme(rechecktest.Scheme(t)).WithObjects(key).WithStatusSubresource(key).Build()
	rc := reconcileutil.NewRechecks(rechecktest.LabelRules(nil))
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "k"}}
	_, err := (&BindTSIGKeyReconciler{Client: c, Recorder: recorder, Rechecks: rc}).Reconcile(ctx, req)
	g.Expect(err).NotTo(HaveOccurred())
	var got bindv1alpha1.BindTSIGKey
	g.Expect(c.Get(ctx, req.NamespacedName, &got)).To(Succeed())
	rechecktest.ExpectInvalid(g, got.Status.Conditions, recorder)
	var secrets corev1.SecretList
	g.Expect(c.List(ctx, &secrets)).To(Succeed())
	g.Expect(secrets.Items).To(BeEmpty(), "no material is generated for it")
}
