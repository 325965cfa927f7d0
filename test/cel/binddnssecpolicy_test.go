package cel

import (
	"testing"

	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func baseDNSSEC() *v1.BindDNSSECPolicy {
	return &v1.BindDNSSECPolicy{Spec: v1.BindDNSSECPolicySpec{
		Keys: []v1.DNSSECKey{
			{Role: "KSK", Algorithm: "ecdsap256sha256", Lifetime: "unlimited"},
			{Role: "ZSK", Algorithm: "ecdsap256sha256", Lifetime: "P90D"},
		},
		DNSKEYTTL: "PT1H",
	}}
}

func TestBindDNSSECPolicyCreate(t *testing.T) {
	runCreateCases(t, baseDNSSEC, []createCase[*v1.BindDNSSECPolicy]{
		{desc: "valid"},
		{desc: "valid CSK with RSA size", mutate: func(p *v1.BindDNSSECPolicy) {
			p.Spec.Keys = []v1.DNSSECKey{{Role: "CSK", Algorithm: "rsasha256", KeySize: ptr.To[int32](2048), Lifetime: "30d"}}
		}},
		{desc: "no keys", mutate: func(p *v1.BindDNSSECPolicy) { p.Spec.Keys = nil },
			wantErrors: []string{"spec.keys", "Required value"}},
		{desc: "KSK without ZSK", mutate: func(p *v1.BindDNSSECPolicy) { p.Spec.Keys = p.Spec.Keys[:1] },
			wantErrors: []string{"use either CSK keys only, or at least one KSK and one ZSK"}},
		{desc: "CSK mixed with ZSK", mutate: func(p *v1.BindDNSSECPolicy) { p.Spec.Keys[0].Role = "CSK" },
			wantErrors: []string{"use either CSK keys only, or at least one KSK and one ZSK"}},
		{desc: "unknown algorithm", mutate: func(p *v1.BindDNSSECPolicy) { p.Spec.Keys[0].Algorithm = "rsasha1" },
			wantErrors: []string{"spec.keys[0].algorithm", `Unsupported value: "rsasha1"`}},
		{desc: "key size on an elliptic-curve key", mutate: func(p *v1.BindDNSSECPolicy) { p.Spec.Keys[0].KeySize = ptr.To[int32](2048) },
			wantErrors: []string{"keySize only applies to RSA algorithms"}},
		{desc: "RSA key too small", mutate: func(p *v1.BindDNSSECPolicy) {
			p.Spec.Keys[0].Algorithm, p.Spec.Keys[0].KeySize = "rsasha256", ptr.To[int32](512)
		}, wantErrors: []string{"spec.keys[0].keySize", "should be greater than or equal to 1024"}},
		{desc: "lifetime is not a duration", mutate: func(p *v1.BindDNSSECPolicy) { p.Spec.Keys[1].Lifetime = "ninety days" },
			wantErrors: []string{"spec.keys[1].lifetime", `lifetime must be "unlimited" or a duration`}},
		{desc: "empty ISO duration", mutate: func(p *v1.BindDNSSECPolicy) { p.Spec.DNSKEYTTL = "P" },
			wantErrors: []string{"spec.dnskeyTTL", "a duration needs at least one number"}},
		{desc: "malformed duration", mutate: func(p *v1.BindDNSSECPolicy) { p.Spec.MaxZoneTTL = "1 day" },
			wantErrors: []string{"spec.maxZoneTTL", "should match"}},
		{desc: "NSEC3 iterations above 150", mutate: func(p *v1.BindDNSSECPolicy) { p.Spec.NSEC3 = &v1.NSEC3Spec{Iterations: ptr.To[int32](151)} },
			wantErrors: []string{"spec.nsec3.iterations", "should be less than or equal to 150"}},
		{desc: "named like a builtin policy", mutate: func(p *v1.BindDNSSECPolicy) { p.Name = "default" },
			wantErrors: []string{"default, insecure and none are BIND's built-in policies"}},
	})
}
