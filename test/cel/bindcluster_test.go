package cel

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func baseCluster() *v1.BindCluster {
	return &v1.BindCluster{Spec: v1.BindClusterSpec{Mode: v1.ModeAuthoritative, Replicas: ptr.To[int32](3)}}
}

func TestBindClusterCreate(t *testing.T) {
	runCreateCases(t, baseCluster, []createCase[*v1.BindCluster]{
		{desc: "valid base"},
		{desc: "empty spec takes the defaults", mutate: func(c *v1.BindCluster) { c.Spec = v1.BindClusterSpec{} }},
		{desc: "resolver with recursion", mutate: func(c *v1.BindCluster) {
			c.Spec.Mode = v1.ModeResolver
			c.Spec.Recursion = &v1.RecursionSpec{Forwarders: []v1.Forwarder{{Address: "192.0.2.1"}}, ForwardPolicy: v1.ForwardOnly}
		}},
		{desc: "unknown mode", mutate: func(c *v1.BindCluster) { c.Spec.Mode = "Recursive" },
			wantErrors: []string{"spec.mode", `Unsupported value: "Recursive"`}},
		{desc: "zero replicas", mutate: func(c *v1.BindCluster) { c.Spec.Replicas = ptr.To[int32](0) },
			wantErrors: []string{"spec.replicas", "should be greater than or equal to 1"}},
		{desc: "too many replicas", mutate: func(c *v1.BindCluster) { c.Spec.Replicas = ptr.To[int32](16) },
			wantErrors: []string{"spec.replicas", "should be less than or equal to 15"}},
		{desc: "recursion on an authoritative cluster", mutate: func(c *v1.BindCluster) {
			c.Spec.Recursion = &v1.RecursionSpec{DNSSECValidation: "Auto"}
		}, wantErrors: []string{"recursion settings only apply to a Resolver cluster"}},
		{desc: "forwarder is a host name", mutate: func(c *v1.BindCluster) {
			c.Spec.Mode = v1.ModeResolver
			c.Spec.Recursion = &v1.RecursionSpec{Forwarders: []v1.Forwarder{{Address: "dns.google"}}}
		}, wantErrors: []string{"spec.recursion.forwarders[0].address", "forwarder address must be an IPv4 or IPv6 address"}},
		{desc: "bad forward policy", mutate: func(c *v1.BindCluster) {
			c.Spec.Mode = v1.ModeResolver
			c.Spec.Recursion = &v1.RecursionSpec{ForwardPolicy: "Sometimes"}
		}, wantErrors: []string{"spec.recursion.forwardPolicy", "Unsupported value"}},
		{desc: "bad dnssec validation", mutate: func(c *v1.BindCluster) {
			c.Spec.Mode = v1.ModeResolver
			c.Spec.Recursion = &v1.RecursionSpec{DNSSECValidation: "maybe"}
		}, wantErrors: []string{"spec.recursion.dnssecValidation", "Unsupported value"}},
		{desc: "dns port out of range", mutate: func(c *v1.BindCluster) { c.Spec.Ports.DNS = 70000 },
			wantErrors: []string{"spec.ports.dns", "should be less than or equal to 65535"}},
		{desc: "negative notify delay", mutate: func(c *v1.BindCluster) { c.Spec.Tuning.NotifyDelay = ptr.To[int32](-1) },
			wantErrors: []string{"spec.tuning.notifyDelay", "should be greater than or equal to 0"}},
		{desc: "zero notify rate", mutate: func(c *v1.BindCluster) { c.Spec.Tuning.NotifyRate = ptr.To[int32](0) },
			wantErrors: []string{"spec.tuning.notifyRate", "should be greater than or equal to 1"}},
		{desc: "allowQuery element with two kinds", mutate: func(c *v1.BindCluster) {
			c.Spec.AllowQuery = []v1.AddressMatchElement{{Address: "192.0.2.0/24", Builtin: "any"}}
		}, wantErrors: []string{"spec.allowQuery[0]", "set exactly one of address, aclRef, keyRef or builtin"}},
		{desc: "allowQuery element with nothing", mutate: func(c *v1.BindCluster) {
			c.Spec.AllowQuery = []v1.AddressMatchElement{{Negate: true}}
		}, wantErrors: []string{"spec.allowQuery[0]", "set exactly one of address, aclRef, keyRef or builtin"}},
		{desc: "allowQuery address is not an IP", mutate: func(c *v1.BindCluster) {
			c.Spec.AllowQuery = []v1.AddressMatchElement{{Address: "example.com"}}
		}, wantErrors: []string{"spec.allowQuery[0].address", "address must be an IP address or a CIDR prefix"}},
		{desc: "allowQuery unknown builtin", mutate: func(c *v1.BindCluster) {
			c.Spec.AllowQuery = []v1.AddressMatchElement{{Builtin: "everyone"}}
		}, wantErrors: []string{"spec.allowQuery[0].builtin", "Unsupported value"}},
		{desc: "too many extra options", mutate: func(c *v1.BindCluster) {
			for range 33 {
				c.Spec.ExtraOptions = append(c.Spec.ExtraOptions, "minimal-responses yes;")
			}
		}, wantErrors: []string{"spec.extraOptions", "must have at most 32 items"}},
		{desc: "storage size while disabled", mutate: func(c *v1.BindCluster) {
			q := resource.MustParse("1Gi")
			c.Spec.Storage = &v1.StorageSpec{Enabled: ptr.To(false), Size: &q}
		}, wantErrors: []string{"spec.storage.size", "storage.size has no effect while storage.enabled is false"}},
		{desc: "emptyDir in memory", mutate: func(c *v1.BindCluster) {
			c.Spec.Storage = &v1.StorageSpec{Enabled: ptr.To(false), Medium: v1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("256Mi"))}
		}},
		{desc: "medium while the claims are on", mutate: func(c *v1.BindCluster) {
			c.Spec.Storage = &v1.StorageSpec{Medium: v1.StorageMediumMemory}
		}, wantErrors: []string{"spec.storage.medium", "medium applies to the emptyDir used while storage.enabled is false"}},
		{desc: "sizeLimit with storage enabled", mutate: func(c *v1.BindCluster) {
			c.Spec.Storage = &v1.StorageSpec{Enabled: ptr.To(true), SizeLimit: ptr.To(resource.MustParse("256Mi"))}
		}, wantErrors: []string{"spec.storage.sizeLimit", "sizeLimit applies to the emptyDir used while storage.enabled is false"}},
		{desc: "unknown medium", mutate: func(c *v1.BindCluster) {
			c.Spec.Storage = &v1.StorageSpec{Enabled: ptr.To(false), Medium: "Tape"}
		}, wantErrors: []string{"spec.storage.medium", "Unsupported value"}},
		{desc: "unknown service type", mutate: func(c *v1.BindCluster) { c.Spec.QueryService.Type = "ExternalName" },
			wantErrors: []string{"spec.queryService.type", "Unsupported value"}},
		{desc: "transfer key ref with an invalid name", mutate: func(c *v1.BindCluster) {
			c.Spec.TransferKeyRef = &v1.LocalObjectReference{Name: "Bad_Name"}
		}, wantErrors: []string{"spec.transferKeyRef.name", "should match"}},
		// Rules that were the validating webhook's until they moved here.
		{desc: "valid image", mutate: func(c *v1.BindCluster) { c.Spec.Image = "registry.example/bind9:9.18" }},
		{desc: "image with a space", mutate: func(c *v1.BindCluster) { c.Spec.Image = "bind9 :9.18" },
			wantErrors: []string{"spec.image", "an image reference such as registry.example/bind9:9.18 has no whitespace"}},
		{desc: "valid custom ports", mutate: func(c *v1.BindCluster) { c.Spec.Ports = v1.ClusterPorts{DNS: 5353, Agent: 8454, Metrics: 9120} }},
		{desc: "dns port on the agent's default", mutate: func(c *v1.BindCluster) { c.Spec.Ports = v1.ClusterPorts{DNS: 8453} },
			wantErrors: []string{"spec.ports.dns", "the dns port must differ from the agent and metrics ports"}},
		{desc: "metrics port on the agent's", mutate: func(c *v1.BindCluster) { c.Spec.Ports = v1.ClusterPorts{Agent: 9000, Metrics: 9000} },
			wantErrors: []string{"spec.ports.metrics", "the metrics port must differ from the agent port"}},
		{desc: "forward only without forwarders", mutate: func(c *v1.BindCluster) {
			c.Spec.Mode = v1.ModeResolver
			c.Spec.Recursion = &v1.RecursionSpec{ForwardPolicy: v1.ForwardOnly}
		}, wantErrors: []string{"spec.recursion.forwardPolicy", "forwardPolicy Only needs at least one forwarder; add forwarders or use First"}},
	})
}

func TestBindClusterUpdate(t *testing.T) {
	runUpdateCases(t, baseCluster, []updateCase[*v1.BindCluster]{
		{desc: "scaling is allowed", mutate: func(c *v1.BindCluster) { c.Spec.Replicas = ptr.To[int32](5) }},
		{desc: "mode is immutable", mutate: func(c *v1.BindCluster) { c.Spec.Mode = v1.ModeResolver },
			wantErrors: []string{"spec.mode", "mode is immutable; create a new BindCluster"}},
	})
}

var _ = metav1.Now
