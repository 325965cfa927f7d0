package cel

import (
	"testing"

	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func basePolicy() *v1.BindPolicy {
	return &v1.BindPolicy{Spec: v1.BindPolicySpec{
		ClusterRef: v1.LocalObjectReference{Name: "resolver"},
		ZoneName:   "rpz.example.internal",
		Rules: []v1.RPZRule{
			{Match: "malware.example.net", Action: "NXDOMAIN"},
			{Match: "192.0.2.0/24", Trigger: v1.TriggerClientIP, Action: "DROP"},
		},
	}}
}

func TestBindPolicyCreate(t *testing.T) {
	runCreateCases(t, basePolicy, []createCase[*v1.BindPolicy]{
		{desc: "valid"},
		{desc: "valid redirect", mutate: func(p *v1.BindPolicy) {
			p.Spec.Rules = []v1.RPZRule{{Match: "*.ads.example.net", Action: "Redirect", RedirectTo: "sinkhole.example.internal"}}
		}},
		{desc: "unknown action", mutate: func(p *v1.BindPolicy) { p.Spec.Rules[0].Action = "BLOCK" },
			wantErrors: []string{"spec.rules[0].action", `Unsupported value: "BLOCK"`}},
		{desc: "unknown trigger", mutate: func(p *v1.BindPolicy) { p.Spec.Rules[0].Trigger = "Domain" },
			wantErrors: []string{"spec.rules[0].trigger", "Unsupported value"}},
		{desc: "redirect without a target", mutate: func(p *v1.BindPolicy) { p.Spec.Rules[0].Action = "Redirect" },
			wantErrors: []string{"redirectTo is required for the Redirect action and only allowed with it"}},
		{desc: "target without redirect", mutate: func(p *v1.BindPolicy) { p.Spec.Rules[0].RedirectTo = "x.example" },
			wantErrors: []string{"redirectTo is required for the Redirect action and only allowed with it"}},
		{desc: "client-ip rule with a name", mutate: func(p *v1.BindPolicy) { p.Spec.Rules[1].Match = "client.example.net" },
			wantErrors: []string{"ClientIP, ResponseIP and NSIP rules match an IP address or CIDR prefix"}},
		{desc: "qname rule with an address-like wildcard", mutate: func(p *v1.BindPolicy) { p.Spec.Rules[0].Match = "bad name" },
			wantErrors: []string{"QName and NSDName rules match a domain name"}},
		{desc: "duplicate rule", mutate: func(p *v1.BindPolicy) {
			p.Spec.Rules = append(p.Spec.Rules, v1.RPZRule{Match: "malware.example.net", Action: "NODATA"})
		}, wantErrors: []string{"spec.rules[2]", "Duplicate value"}},
		{desc: "max policy TTL above a day", mutate: func(p *v1.BindPolicy) { p.Spec.MaxPolicyTTL = ptr.To[int32](100000) },
			wantErrors: []string{"spec.maxPolicyTTL", "should be less than or equal to 86400"}},
		{desc: "unknown override", mutate: func(p *v1.BindPolicy) { p.Spec.PolicyOverride = "Block" },
			wantErrors: []string{"spec.policyOverride", "Unsupported value"}},
		// Rules that were the validating webhook's until they moved here.
		{desc: "root as the policy zone", mutate: func(p *v1.BindPolicy) { p.Spec.ZoneName = "." },
			wantErrors: []string{"spec.zoneName", "a policy zone needs its own name such as rpz.example.internal"}},
		{desc: "redirect target longer than 253 characters", mutate: func(p *v1.BindPolicy) {
			p.Spec.Rules = []v1.RPZRule{{Match: "ads.example.net", Action: "Redirect", RedirectTo: longName(254)}}
		}, wantErrors: []string{"spec.rules[0].redirectTo", "a domain name has at most 253 characters"}},
	})
}

func TestBindPolicyUpdate(t *testing.T) {
	runUpdateCases(t, basePolicy, []updateCase[*v1.BindPolicy]{
		{desc: "rules may change", mutate: func(p *v1.BindPolicy) { p.Spec.Rules = p.Spec.Rules[:1] }},
		{desc: "zoneName is immutable", mutate: func(p *v1.BindPolicy) { p.Spec.ZoneName = "rpz2.example.internal" },
			wantErrors: []string{"spec.zoneName", "zoneName is immutable; create a new BindPolicy"}},
	})
}
