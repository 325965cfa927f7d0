package webhooks

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestExplicitZeroNotDefaulted: the mutating webhooks fill a view's and a
// policy's order (and a policy's log) only when unset; 0 and false that
// the user wrote stay (issue 44 item 7).
func TestExplicitZeroNotDefaulted(t *testing.T) {
	ws := testWebhooks(t)
	v := &v1alpha1.BindView{ObjectMeta: objectMeta("first"), Spec: v1alpha1.BindViewSpec{ClusterRef: ref("res"), Order: ptr.To[int32](0),
		MatchClients: []v1alpha1.AddressMatchElement{{Builtin: v1alpha1.BuiltinAny}}}}
	NewWithT(t).Expect(ws.view.Default(context.Background(), v)).To(Succeed())
	NewWithT(t).Expect(v.Spec.Order).To(HaveValue(BeEquivalentTo(0)))

	p := &v1alpha1.BindPolicy{ObjectMeta: objectMeta("rpz"), Spec: v1alpha1.BindPolicySpec{ClusterRef: ref("res"), ZoneName: "rpz.example.internal",
		Order: ptr.To[int32](0), Log: ptr.To(false)}}
	NewWithT(t).Expect(ws.policy.Default(context.Background(), p)).To(Succeed())
	NewWithT(t).Expect(p.Spec.Order).To(HaveValue(BeEquivalentTo(0)))
	NewWithT(t).Expect(p.Spec.Log).To(HaveValue(BeFalse()))

	unset := &v1alpha1.BindView{ObjectMeta: objectMeta("later"), Spec: v1alpha1.BindViewSpec{ClusterRef: ref("res")}}
	NewWithT(t).Expect(ws.view.Default(context.Background(), unset)).To(Succeed())
	NewWithT(t).Expect(unset.Spec.Order).To(HaveValue(BeEquivalentTo(v1alpha1.DefaultViewOrder)))
}
