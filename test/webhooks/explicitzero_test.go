package webhooks

import (
	"testing"

	"k8s.io/utils/ptr"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestExplicitZeroKept: a value the user wrote is never replaced by a
// default, 0 and false included (issue 44 item 7). order: 0 puts a view
// or a policy first; it used to be stored as 100, the default, because
// the webhook defaulted the zero value of a non-pointer field.
func TestExplicitZeroKept(t *testing.T) {
	fixtures(t)
	v := stored(t, &v1alpha1.BindView{ObjectMeta: meta("first"), Spec: v1alpha1.BindViewSpec{ClusterRef: ref("viewed"), Order: ptr.To[int32](0),
		MatchClients: []v1alpha1.AddressMatchElement{{Address: "2001:db8:1::/48"}}}}).(*v1alpha1.BindView)
	if v.Spec.Order == nil || *v.Spec.Order != 0 {
		t.Errorf("view order 0 stored as %v", v.Spec.Order)
	}
	p := stored(t, &v1alpha1.BindPolicy{ObjectMeta: meta("rpz-first"), Spec: v1alpha1.BindPolicySpec{ClusterRef: ref("res"), ZoneName: "rpz-first.example.internal",
		Order: ptr.To[int32](0), Log: ptr.To(false)}}).(*v1alpha1.BindPolicy)
	if p.Spec.Order == nil || *p.Spec.Order != 0 || p.Spec.Log == nil || *p.Spec.Log {
		t.Errorf("policy order 0 and log false stored as %v and %v", p.Spec.Order, p.Spec.Log)
	}
	// Unset still gets the default.
	p = stored(t, &v1alpha1.BindPolicy{ObjectMeta: meta("rpz-unset"), Spec: v1alpha1.BindPolicySpec{ClusterRef: ref("res"), ZoneName: "rpz-unset.example.internal"}}).(*v1alpha1.BindPolicy)
	if ptr.Deref(p.Spec.Order, -1) != v1alpha1.DefaultPolicyOrder || !ptr.Deref(p.Spec.Log, false) {
		t.Errorf("policy defaults: order %v, log %v", p.Spec.Order, p.Spec.Log)
	}
}
