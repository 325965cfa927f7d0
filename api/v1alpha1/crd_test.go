package v1alpha1

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// The generated CRDs carry the defaults and enums of the markers, which
// cannot name Go constants; this test holds them to the constants that the
// webhooks, controllers and render use, so the two cannot drift.

// crdSchema reads the spec schema of config/crd/bases/bind.unkin.net_<plural>.yaml.
func crdSchema(t *testing.T, plural string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "bind.unkin.net_"+plural+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != GroupVersion.Version {
		t.Fatalf("%s: want the one version %s", plural, GroupVersion.Version)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// at walks a path such as "spec.records[].type": a "[]" suffix steps into
// the items of a list.
func at(t *testing.T, s *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, part := range strings.Split(path, ".") {
		name, list := strings.CutSuffix(part, "[]")
		p, ok := s.Properties[name]
		if !ok {
			t.Fatalf("no property %q in %s", name, path)
		}
		s = &p
		if list {
			s = s.Items.Schema
		}
	}
	return s
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestCRDDefaultsAreTheConstants(t *testing.T) {
	for _, tc := range []struct {
		plural, path string
		want         any
	}{
		{"bindclusters", "spec.mode", ModeAuthoritative},
		{"bindclusters", "spec.replicas", DefaultReplicas},
		{"bindclusters", "spec.ports.dns", DefaultDNSPort},
		{"bindclusters", "spec.ports.agent", DefaultAgentPort},
		{"bindclusters", "spec.ports.metrics", DefaultMetricsPort},
		{"bindclusters", "spec.tuning.notifyDelay", DefaultNotifyDelay},
		{"bindclusters", "spec.tuning.notifyRate", DefaultNotifyRate},
		{"bindclusters", "spec.tuning.startupNotifyRate", DefaultStartupNotifyRate},
		{"bindclusters", "spec.tuning.serialQueryRate", DefaultSerialQueryRate},
		{"bindclusters", "spec.tuning.catalogMinUpdateInterval", DefaultCatalogMinUpdateInterval},
		{"bindzones", "spec.type", DefaultZoneType},
		{"bindviews", "spec.order", DefaultViewOrder},
		{"bindpolicies", "spec.order", DefaultPolicyOrder},
		{"bindpolicies", "spec.rules[].trigger", DefaultRPZTrigger},
	} {
		t.Run(tc.plural+" "+tc.path, func(t *testing.T) {
			g := NewWithT(t)
			d := at(t, crdSchema(t, tc.plural), tc.path).Default
			g.Expect(d).NotTo(BeNil(), "the field has no +kubebuilder:default marker")
			g.Expect(string(d.Raw)).To(MatchJSON(jsonOf(t, tc.want)))
		})
	}
}

func TestCRDBoundsAreTheConstants(t *testing.T) {
	g := NewWithT(t)
	r := at(t, crdSchema(t, "bindclusters"), "spec.replicas")
	g.Expect(r.Minimum).To(HaveValue(BeNumerically("==", MinReplicas)))
	g.Expect(r.Maximum).To(HaveValue(BeNumerically("==", MaxReplicas)))
	g.Expect(at(t, crdSchema(t, "bindzones"), "spec.records").MaxItems).To(HaveValue(BeNumerically("==", MaxZoneRecordSets)))
	g.Expect(at(t, crdSchema(t, "bindzones"), "spec.seedFrom.configMaps").MaxItems).To(HaveValue(BeNumerically("==", MaxSeedBytes/MaxSeedPartBytes)))
}

func TestCRDEnumsAreTheConstants(t *testing.T) {
	recordTypes := make([]any, len(RecordTypes))
	for i, rt := range RecordTypes {
		recordTypes[i] = rt
	}
	tsig := make([]any, len(TSIGAlgorithms))
	for i, a := range TSIGAlgorithms {
		tsig[i] = a
	}
	builtins := make([]any, len(BuiltinACLs))
	for i, b := range BuiltinACLs {
		builtins[i] = b
	}
	for _, tc := range []struct {
		plural, path string
		want         []any
	}{
		{"bindclusters", "spec.mode", []any{ModeAuthoritative, ModeResolver}},
		{"bindclusters", "spec.imagePullPolicy", []any{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}},
		{"bindclusters", "spec.queryService.type", []any{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer}},
		{"bindclusters", "spec.primaryService.type", []any{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer}},
		{"bindclusters", "spec.recursion.forwardPolicy", []any{ForwardFirst, ForwardOnly}},
		{"bindclusters", "spec.recursion.dnssecValidation", []any{DNSSECValidationAuto, DNSSECValidationYes, DNSSECValidationNo}},
		{"bindclusters", "spec.allowQuery[].builtin", builtins},
		{"bindacls", "spec.entries[].builtin", builtins},
		{"bindzones", "spec.type", []any{ZonePrimary, ZoneSecondary, ZoneForward, ZoneStub}},
		{"bindzones", "spec.forwardPolicy", []any{ForwardFirst, ForwardOnly}},
		{"bindzones", "spec.records[].type", recordTypes},
		{"dnsrecords", "spec.type", recordTypes},
		{"bindtsigkeys", "spec.algorithm", tsig},
		{"bindpolicies", "spec.policyOverride", []any{RPZOverrideGiven, RPZOverrideDisabled, RPZOverridePassthru, RPZOverrideNXDOMAIN, RPZOverrideNODATA, RPZOverrideDrop, RPZOverrideTCPOnly}},
		{"bindpolicies", "spec.rules[].trigger", []any{TriggerQName, TriggerClientIP, TriggerResponseIP, TriggerNSDName, TriggerNSIP}},
		{"bindpolicies", "spec.rules[].action", []any{ActionNXDOMAIN, ActionNODATA, ActionPassthru, ActionDrop, ActionTCPOnly, ActionRedirect}},
		{"binddnssecpolicies", "spec.keys[].role", []any{RoleKSK, RoleZSK, RoleCSK}},
		{"binddnssecpolicies", "spec.keys[].algorithm", []any{DNSSECRSASHA256, DNSSECRSASHA512, DNSSECECDSAP256SHA256, DNSSECECDSAP384SHA384, DNSSECED25519, DNSSECED448}},
	} {
		t.Run(tc.plural+" "+tc.path, func(t *testing.T) {
			g := NewWithT(t)
			enum := at(t, crdSchema(t, tc.plural), tc.path).Enum
			got := make([]string, len(enum))
			for i, e := range enum {
				got[i] = string(e.Raw)
			}
			want := make([]string, len(tc.want))
			for i, w := range tc.want {
				want[i] = jsonOf(t, w)
			}
			g.Expect(got).To(Equal(want))
		})
	}
}

// TestRSAIsTheKeySizeRule: the CRD allows keySize only where IsRSA says
// the defaults give one.
func TestRSAIsTheKeySizeRule(t *testing.T) {
	g := NewWithT(t)
	rules := at(t, crdSchema(t, "binddnssecpolicies"), "spec.keys[]").XValidations
	g.Expect(rules).To(ContainElement(HaveField("Rule", "!has(self.keySize) || self.algorithm.startsWith('rsa')")))
	for _, a := range []DNSSECAlgorithm{DNSSECRSASHA256, DNSSECRSASHA512, DNSSECECDSAP256SHA256, DNSSECECDSAP384SHA384, DNSSECED25519, DNSSECED448} {
		g.Expect(a.IsRSA()).To(Equal(strings.HasPrefix(string(a), "rsa")), string(a))
	}
}
