package importer

import (
	"bytes"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func convertSeed(t *testing.T) *Result {
	t.Helper()
	data, err := os.ReadFile("testdata/seed/manifests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	res, err := ConvertManifests("manifests.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestConvertManifests: the predecessor's manifests become this API's
// objects, each admitted by the offline rules, and what this API has no
// field for is reported.
func TestConvertManifests(t *testing.T) {
	g := NewWithT(t)
	res := convertSeed(t)
	g.Expect(Validate(res.Objects)).To(BeEmpty())
	g.Expect(res.Objects).To(HaveLen(18))

	key := byName[*v1.BindTSIGKey](res.Objects, "externaldns-key")
	g.Expect(key.Spec.SecretTemplate.Annotations).To(HaveKey("reflector.v1.k8s.emberstack.com/reflection-allowed"))

	r := byName[*v1.BindCluster](res.Objects, "r")
	g.Expect(r.Spec.Mode).To(Equal(v1.ModeAuthoritative))
	g.Expect(r.Spec.TransferKeyRef).To(Equal(&v1.LocalObjectReference{Name: "transfer-key"}))
	g.Expect(r.Spec.AllowQuery).To(Equal([]v1.AddressMatchElement{{Builtin: v1.BuiltinAny}}))
	g.Expect(r.ResourceVersion).To(BeEmpty(), "what the API server wrote is dropped")
	g.Expect(r.UID).To(BeEmpty())

	cat := byName[*v1.BindCatalogZone](res.Objects, "catalog")
	g.Expect(cat.Spec.DefaultPrimaries).To(Equal([]v1.RemoteServer{{Address: "192.0.2.53", KeyRef: &v1.LocalObjectReference{Name: "transfer-key"}}}))

	main := byName[*v1.BindZone](res.Objects, "main")
	g.Expect(main.Spec.Type).To(Equal(v1.ZonePrimary))
	g.Expect(main.Spec.UpdateKeyRef).To(Equal(&v1.LocalObjectReference{Name: "externaldns-key"}))
	g.Expect(main.Spec.CatalogZoneRef).To(Equal(&v1.LocalObjectReference{Name: "catalog"}))
	g.Expect(main.Spec.AllowTransfer).To(Equal([]v1.AddressMatchElement{{KeyRef: "transfer-key"}, {Address: "10.0.0.0/8"}, {Address: "192.0.2.99", Negate: true}}))

	static := byName[*v1.BindZone](res.Objects, "static")
	g.Expect(static.Spec.UpdateKeyRef).To(BeNil(), "dynamicUpdate: false means no updates")

	partner := byName[*v1.BindZone](res.Objects, "partner")
	g.Expect(partner.Spec.Type).To(Equal(v1.ZoneSecondary))
	g.Expect(partner.Spec.Primaries).To(Equal([]v1.RemoteServer{{Address: "192.0.2.1"}, {Address: "192.0.2.2", Port: ptr.To[int32](5353), KeyRef: &v1.LocalObjectReference{Name: "transfer-key"}}}))

	rec := byName[*v1.DNSRecord](res.Objects, "api")
	g.Expect(rec.Spec.ZoneRef.Name).To(Equal("main"))
	g.Expect(rec.Spec.Type).To(Equal(v1.RecordType("CNAME")))

	acl := byName[*v1.BindACL](res.Objects, "offices")
	g.Expect(acl.Spec.Entries).To(Equal([]v1.AddressMatchElement{{Address: "10.20.99.0/24", Negate: true}, {Address: "10.20.0.0/16"}, {Builtin: v1.BuiltinLocalhost}}))

	resolver := byName[*v1.BindCluster](res.Objects, "resolver")
	g.Expect(resolver.Spec.Mode).To(Equal(v1.ModeResolver))
	g.Expect(resolver.Spec.Recursion.AllowRecursion).To(Equal([]v1.AddressMatchElement{{ACLRef: "offices"}}))
	g.Expect(resolver.Spec.Recursion.Forwarders).To(Equal([]v1.Forwarder{{Address: "192.0.2.53"}, {Address: "192.0.2.54", Port: ptr.To[int32](5353)}}))
	g.Expect(resolver.Spec.Recursion.ForwardPolicy).To(Equal(v1.ForwardFirst))
	g.Expect(resolver.Spec.Recursion.DNSSECValidation).To(Equal(v1.DNSSECValidationAuto))

	corp := byName[*v1.BindZone](res.Objects, "corp")
	g.Expect(corp.Spec.ViewRef).To(Equal(&v1.LocalObjectReference{Name: "offices"}))
	g.Expect(corp.Spec.ForwardPolicy).To(Equal(v1.ForwardOnly))

	var lines, converted []string
	for _, f := range res.Report.Findings {
		if f.Kind == Converted {
			converted = append(converted, f.String())
			continue
		}
		lines = append(lines, f.String())
	}
	g.Expect(lines).To(ConsistOf(
		"manifests.yaml#1: replaced: BindTSIGKey transfer-key: spec.clusterRef: a key belongs to its namespace: the clusters that use it name it",
		"manifests.yaml#2: replaced: BindTSIGKey externaldns-key: spec.clusterRef: a key belongs to its namespace: the clusters that use it name it",
		"manifests.yaml#3: replaced: BindCluster r: status, metadata.resourceVersion, metadata.uid, metadata.creationTimestamp, metadata.generation: written by the API server and the operator, not by you: left out",
		"manifests.yaml#5: replaced: BindZone main: spec.dynamicUpdate: spec.updateKeyRef alone allows the key's updates",
		`manifests.yaml#5: omitted: BindZone main: spec.notify: this API's BindZone has no such field`,
		"manifests.yaml#6: replaced: BindZone static: spec.updateKeyRef: updates were off (dynamicUpdate: false), and an updateKeyRef would allow them: left out",
		"manifests.yaml#13: omitted: ConfigMap unrelated: the object: it is not one of this API's kinds (bind.unkin.net/v1alpha1): apply it as it is if you still need it",
	))
	// Every change is said field by field: one line per field changed.
	g.Expect(converted).To(HaveLen(47))
	g.Expect(converted).To(ContainElements(
		`manifests.yaml#3: converted: BindCluster r: spec.transferKeyRef: "transfer-key" is now {"name":"transfer-key"}`,
		`manifests.yaml#5: converted: BindZone main: spec.allowTransfer: ["key transfer-key","10.0.0.0/8","!192.0.2.99"] is now [{"keyRef":"transfer-key"},{"address":"10.0.0.0/8"},{"address":"192.0.2.99","negate":true}]`,
		`manifests.yaml#6: converted: BindZone static: spec.type: "master" is now "Primary"`,
		`manifests.yaml#7: converted: BindZone partner: spec.masters: renamed spec.primaries`,
		`manifests.yaml#8: converted: DNSRecord api: spec.type: "cname" is now "CNAME"`,
		`manifests.yaml#10: converted: BindCluster resolver: spec.recursion.forwardPolicy: "first" is now "First"`,
	))
}

// TestConvertManifestsReadsAList: `kubectl get -o yaml` of several
// objects is one List; its items are converted, and the report is the
// same on every run.
func TestConvertManifestsReadsAList(t *testing.T) {
	g := NewWithT(t)
	list := []byte(`apiVersion: v1
kind: List
items:
- apiVersion: bind.unkin.net/v1alpha1
  kind: BindACL
  metadata: {name: a, namespace: dns, resourceVersion: "7"}
  spec: {entries: ["10.0.0.0/8", "key k"]}
- apiVersion: bind.unkin.net/v1alpha1
  kind: BindView
  metadata: {name: v, namespace: dns}
  spec: {clusterRef: c, order: 1, matchClients: ["a"], matchDestinations: ["any"]}
`)
	res, err := ConvertManifests("export.yaml", list)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Objects).To(HaveLen(2))
	g.Expect(Validate(res.Objects)).To(BeEmpty())
	var first bytes.Buffer
	res.Report.Write(&first)
	for range 5 {
		again, err := ConvertManifests("export.yaml", list)
		g.Expect(err).NotTo(HaveOccurred())
		var b bytes.Buffer
		again.Report.Write(&b)
		g.Expect(b.String()).To(Equal(first.String()))
	}
	g.Expect(first.String()).To(Equal(`export.yaml#1: replaced: BindACL a: metadata.resourceVersion: written by the API server and the operator, not by you: left out
export.yaml#1: converted: BindACL a: spec.entries: ["10.0.0.0/8","key k"] is now [{"address":"10.0.0.0/8"},{"keyRef":"k"}]
export.yaml#1: converted: BindView v: spec.clusterRef: "c" is now {"name":"c"}
export.yaml#1: converted: BindView v: spec.matchClients: ["a"] is now [{"aclRef":"a"}]
export.yaml#1: converted: BindView v: spec.matchDestinations: ["any"] is now [{"builtin":"any"}]
0 omitted, 1 replaced by the operator, 4 converted
`))
}

// FuzzConvertManifests: any document is converted or reported, never a
// panic.
func FuzzConvertManifests(f *testing.F) {
	data, err := os.ReadFile("testdata/seed/manifests.yaml")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte("apiVersion: bind.unkin.net/v1alpha1\nkind: BindZone\nspec:\n  allowTransfer: [\"!\", \"key\"]\n  primaries: [\"1.2.3.4 port\"]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = ConvertManifests("f", b)
	})
}

// TestConvertManifestsLeavesOutAListWhole: a list with an element this API
// cannot hold is left out whole and reported, as the named.conf import
// does: part of an access list would match other clients.
func TestConvertManifestsLeavesOutAListWhole(t *testing.T) {
	g := NewWithT(t)
	res, err := ConvertManifests("m.yaml", []byte(`apiVersion: bind.unkin.net/v1alpha1
kind: BindZone
metadata: {name: z, namespace: dns}
spec:
  clusterRef: c
  zoneName: z.example
  allowTransfer: ["key k", "192.0.2.1 port 53"]
  allowQuery: ["!192.0.2.9", "any"]
`))
	g.Expect(err).NotTo(HaveOccurred())
	z := byName[*v1.BindZone](res.Objects, "z")
	g.Expect(z.Spec.AllowTransfer).To(BeNil())
	g.Expect(z.Spec.AllowQuery).To(Equal([]v1.AddressMatchElement{{Address: "192.0.2.9", Negate: true}, {Builtin: v1.BuiltinAny}}))
	g.Expect(res.Report.Omitted()).To(Equal(1))
	g.Expect(res.Report.Findings).To(ContainElement(HaveField("String()",
		`m.yaml#1: omitted: BindZone z: spec.allowTransfer: element "192.0.2.1 port 53" has no counterpart: the list is left out`)))
}
