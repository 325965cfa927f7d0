package cel

import (
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestSchemaKeepsExplicitZero: the CRD schema defaults an order that is
// absent and keeps one that is 0 (issue 44 item 7: 0 was stored as 100),
// here without the webhooks.
func TestSchemaKeepsExplicitZero(t *testing.T) {
	ns := newNamespace(t)
	for _, tc := range []struct {
		desc  string
		obj   client.Object
		order func(client.Object) *int32
		want  int32
	}{
		{"view order 0", &v1.BindView{Spec: v1.BindViewSpec{ClusterRef: v1.LocalObjectReference{Name: "resolver"}, Order: ptr.To[int32](0),
			MatchClients: []v1.AddressMatchElement{{Builtin: "any"}}}}, viewOrder, 0},
		{"view order unset", &v1.BindView{Spec: v1.BindViewSpec{ClusterRef: v1.LocalObjectReference{Name: "resolver"},
			MatchClients: []v1.AddressMatchElement{{Builtin: "any"}}}}, viewOrder, v1.DefaultViewOrder},
		{"policy order 0", &v1.BindPolicy{Spec: v1.BindPolicySpec{ClusterRef: v1.LocalObjectReference{Name: "resolver"}, ZoneName: "rpz.example.internal",
			Order: ptr.To[int32](0)}}, policyOrder, 0},
		{"policy order unset", &v1.BindPolicy{Spec: v1.BindPolicySpec{ClusterRef: v1.LocalObjectReference{Name: "resolver"}, ZoneName: "rpz.example.internal"}},
			policyOrder, v1.DefaultPolicyOrder},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			obj := prepare(func() client.Object { return tc.obj }, ns)
			if err := k8sClient.Create(ctx, obj); err != nil {
				t.Fatalf("create: %v", err)
			}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
				t.Fatal(err)
			}
			if got := tc.order(obj); got == nil || *got != tc.want {
				t.Errorf("stored order %v, want %d", got, tc.want)
			}
		})
	}
}

func viewOrder(o client.Object) *int32   { return o.(*v1.BindView).Spec.Order }
func policyOrder(o client.Object) *int32 { return o.(*v1.BindPolicy).Spec.Order }
