package cel

import (
	"testing"

	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func baseView() *v1.BindView {
	return &v1.BindView{Spec: v1.BindViewSpec{
		ClusterRef:   v1.LocalObjectReference{Name: "resolver"},
		Order:        ptr.To[int32](10),
		MatchClients: []v1.AddressMatchElement{{Address: "192.0.2.0/24"}},
	}}
}

func TestBindViewCreate(t *testing.T) {
	runCreateCases(t, baseView, []createCase[*v1.BindView]{
		{desc: "valid"},
		{desc: "valid recursive view", mutate: func(v *v1.BindView) {
			v.Spec.Recursion = ptr.To(true)
			v.Spec.AllowRecursion = []v1.AddressMatchElement{{Builtin: "localnets"}}
		}},
		{desc: "valid view matching a key", mutate: func(v *v1.BindView) {
			v.Spec.MatchClients = []v1.AddressMatchElement{{KeyRef: "internal-view"}}
		}},
		{desc: "no match criteria", mutate: func(v *v1.BindView) { v.Spec.MatchClients = nil },
			wantErrors: []string{"a view needs matchClients or matchDestinations"}},
		{desc: "allowRecursion without recursion", mutate: func(v *v1.BindView) {
			v.Spec.AllowRecursion = []v1.AddressMatchElement{{Builtin: "any"}}
		}, wantErrors: []string{"allowRecursion needs recursion: true"}},
		{desc: "order above the maximum", mutate: func(v *v1.BindView) { v.Spec.Order = ptr.To[int32](10001) },
			wantErrors: []string{"spec.order", "should be less than or equal to 10000"}},
		{desc: "match element with address and key", mutate: func(v *v1.BindView) {
			v.Spec.MatchClients = []v1.AddressMatchElement{{Address: "192.0.2.1", KeyRef: "k"}}
		}, wantErrors: []string{"spec.matchClients[0]", "set exactly one of address, aclRef, keyRef or builtin"}},
		{desc: "match destination is not an address", mutate: func(v *v1.BindView) {
			v.Spec.MatchDestinations = []v1.AddressMatchElement{{Address: "10.0.0.0/33"}}
		}, wantErrors: []string{"spec.matchDestinations[0].address", "address must be an IP address or a CIDR prefix"}},
		{desc: "aclRef with upper case", mutate: func(v *v1.BindView) {
			v.Spec.MatchClients = []v1.AddressMatchElement{{ACLRef: "Internal"}}
		}, wantErrors: []string{"spec.matchClients[0].aclRef", "should match"}},
		// Rules that were the validating webhook's until they moved here.
		{desc: "valid forwarders of a recursive view", mutate: func(v *v1.BindView) {
			v.Spec.Recursion = ptr.To(true)
			v.Spec.Forwarders = []v1.Forwarder{{Address: "192.0.2.53"}}
		}},
		{desc: "forwarders without recursion", mutate: func(v *v1.BindView) {
			v.Spec.Recursion = ptr.To(false)
			v.Spec.Forwarders = []v1.Forwarder{{Address: "192.0.2.53"}}
		}, wantErrors: []string{"spec.forwarders", "forwarders are only used while recursing; set recursion: true or remove them"}},
		{desc: "recursive-only match without recursion", mutate: func(v *v1.BindView) {
			v.Spec.Recursion = ptr.To(false)
			v.Spec.MatchRecursiveOnly = true
		}, wantErrors: []string{"spec.matchRecursiveOnly", "a view that matches only recursive queries needs recursion: true"}},
	})
}

func TestBindViewUpdate(t *testing.T) {
	runUpdateCases(t, baseView, []updateCase[*v1.BindView]{
		{desc: "order may change", mutate: func(v *v1.BindView) { v.Spec.Order = ptr.To[int32](5) }},
		{desc: "clusterRef is immutable", mutate: func(v *v1.BindView) { v.Spec.ClusterRef.Name = "other" },
			wantErrors: []string{"spec.clusterRef", "clusterRef is immutable; create a new BindView"}},
	})
}
