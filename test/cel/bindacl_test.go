package cel

import (
	"testing"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func baseACL() *v1.BindACL {
	return &v1.BindACL{Spec: v1.BindACLSpec{Entries: []v1.AddressMatchElement{{Address: "192.0.2.0/24"}, {Address: "2001:db8::1"}}}}
}

func TestBindACLCreate(t *testing.T) {
	runCreateCases(t, baseACL, []createCase[*v1.BindACL]{
		{desc: "valid"},
		{desc: "valid nested acl and key", mutate: func(a *v1.BindACL) {
			a.Spec.Entries = []v1.AddressMatchElement{{ACLRef: "other"}, {KeyRef: "k", Negate: true}}
		}},
		{desc: "no entries", mutate: func(a *v1.BindACL) { a.Spec.Entries = nil },
			wantErrors: []string{"spec.entries", "Required value"}},
		{desc: "named like a builtin", mutate: func(a *v1.BindACL) { a.Name = "localnets" },
			wantErrors: []string{"any, none, localhost and localnets are BIND's built-in ACLs"}},
		{desc: "entry is a host name", mutate: func(a *v1.BindACL) { a.Spec.Entries[0].Address = "gateway.local" },
			wantErrors: []string{"spec.entries[0].address", "address must be an IP address or a CIDR prefix"}},
		{desc: "entry with two kinds", mutate: func(a *v1.BindACL) { a.Spec.Entries[1].Builtin = "any" },
			wantErrors: []string{"spec.entries[1]", "set exactly one of address, aclRef, keyRef or builtin"}},
		{desc: "too many entries", mutate: func(a *v1.BindACL) {
			a.Spec.Entries = make([]v1.AddressMatchElement, 1025)
			for i := range a.Spec.Entries {
				a.Spec.Entries[i] = v1.AddressMatchElement{Builtin: "none"}
			}
		}, wantErrors: []string{"spec.entries", "must have at most 1024 items"}},
	})
}
