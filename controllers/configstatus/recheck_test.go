package configstatus

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/test/rechecktest"
)

// A view the rules refuse is reported Invalid, with its event.
func TestInvalidConfigReportsRefusedView(t *testing.T) {
	ctx := context.Background()
	g, recorder := NewWithT(t), events.NewFakeRecorder(10)
	view := rechecktest.Refused(&bindv1alpha1.BindView{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "v", UID: "uid-v", Generation: 1},
		Spec: bindv1alpha1.BindViewSpec{ClusterRef: bindv1alpha1.LocalObjectReference{Name: "dns"}}}, "records")
	c := fake.NewClientBuilder().WithScheme(rechecktest.Scheme(t)).WithObjects(view).WithStatusSubresource(view).Build()
	rc := reconcileutil.NewRechecks(rechecktest.LabelRules(nil))
	key := types.NamespacedName{Namespace: "ns", Name: "v"}
	r := &ConfigStatusReconciler{Client: c, Recorder: recorder, Rechecks: rc}
	var v bindv1alpha1.BindView
	g.Expect(c.Get(ctx, key, &v)).To(Succeed())
	g.Expect(r.invalidConfig(ctx, &v, rc.Check(&v))).To(Succeed())
	g.Expect(c.Get(ctx, key, &v)).To(Succeed())
	rechecktest.ExpectInvalid(g, v.Status.Conditions, recorder)
}
