package importer

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/render"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// importFixture imports testdata/server, the copy of an existing server's
// files: split-horizon views, ACLs, keys, every zone type, $INCLUDE,
// $GENERATE and $ORIGIN, statements the operator replaces and some it
// cannot import.
func importFixture(t *testing.T) *Result {
	t.Helper()
	res, err := Import(Options{Root: "testdata/server", Config: "/etc/bind/named.conf", Namespace: "dns", Cluster: "legacy"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestImportGolden: the objects and the report of the fixture, against
// testdata/server.objects.yaml and server.report.txt (go test ./importer
// -update rewrites them; review the diff).
func TestImportGolden(t *testing.T) {
	res := importFixture(t)
	var objs bytes.Buffer
	for _, o := range res.Objects {
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		objs.WriteString("---\n")
		objs.Write(b)
	}
	var report bytes.Buffer
	res.Report.Write(&report)
	for file, got := range map[string][]byte{"server.objects.yaml": objs.Bytes(), "server.report.txt": report.Bytes()} {
		p := filepath.Join("testdata", file)
		if *update {
			if err := os.WriteFile(p, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("%v (go test ./importer -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from what the import emits (go test ./importer -update rewrites it; review the diff):\n%s", p, got)
		}
	}
}

// importTree imports named.conf of a tree of files (namespace n, cluster c).
func importTree(t *testing.T, files map[string]string) *Result {
	t.Helper()
	res, err := Import(Options{Root: writeTree(t, files), Config: "named.conf", Namespace: "n", Cluster: "c"})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func byName[T client.Object](objs []client.Object, name string) T {
	var zero T
	for _, o := range objs {
		if x, ok := o.(T); ok && o.GetName() == name {
			return x
		}
	}
	return zero
}

// TestImportFixture checks what the golden files hold that matters most.
func TestImportFixture(t *testing.T) {
	g := NewWithT(t)
	res := importFixture(t)
	g.Expect(Validate(res.Objects)).To(BeEmpty(), "every emitted object passes the admission rules")
	g.Expect(res.Report.Outcome()).To(Equal(WithOmissions))

	acl := byName[*v1.BindACL](res.Objects, "internal")
	g.Expect(acl.Spec.Entries).To(Equal([]v1.AddressMatchElement{
		{Address: "192.168.99.0/24", Negate: true}, {Address: "10.0.0.0/8"}, {Address: "192.168.0.0/16"}, {KeyRef: "xfer-key"},
	}), "10/8 is BIND's short form of 10.0.0.0/8")

	// One zone name in two views: one object per view.
	internal := byName[*v1.BindZone](res.Objects, "internal-example.com")
	external := byName[*v1.BindZone](res.Objects, "external-example.com")
	g.Expect(internal.Spec.ViewRef.Name).To(Equal("internal"))
	g.Expect(internal.Spec.UpdateKeyRef.Name).To(Equal("ddns-key"))
	g.Expect(external.Spec.AllowTransfer).To(Equal([]v1.AddressMatchElement{{KeyRef: "xfer-key"}}))
	g.Expect(internal.Spec.AllowTransfer).To(Equal([]v1.AddressMatchElement{{Builtin: v1.BuiltinNone}}), "inherited from options")

	sets := map[string]v1.RecordSet{}
	for _, r := range external.Spec.Records {
		sets[string(r.Name)+"/"+string(r.Type)] = r
	}
	g.Expect(sets).To(HaveKey("host10/A"), "$GENERATE")
	g.Expect(sets).To(HaveKey("inc1/A"), "$INCLUDE")
	g.Expect(sets).To(HaveKey("api.dev/AAAA"), "$ORIGIN inside an $INCLUDE")
	g.Expect(*sets["mail/A"].TTL).To(Equal(v1.TTL(300)))
	g.Expect(*sets["ns1/A"].TTL).To(Equal(v1.TTL(3600)), "$TTL")
	g.Expect(sets["www/CNAME"].Values).To(Equal([]string{"example.com."}))
	g.Expect(sets["@/NS"].Values).To(Equal([]string{"ns1.example.com.", "ns2.example.net."}))
	g.Expect(sets).NotTo(HaveKey("hinfo/HINFO"))
	g.Expect(*external.Spec.SOA.Refresh).To(Equal(int32(7200)))
	g.Expect(external.Spec.SOA.ResponsiblePerson).To(Equal(v1.DomainName("hostmaster.example.com")))

	partner := byName[*v1.BindZone](res.Objects, "partner.example")
	g.Expect(partner.Spec.Type).To(Equal(v1.ZoneSecondary))
	g.Expect(partner.Spec.Primaries).To(HaveLen(2), "the named primaries list, expanded")
	g.Expect(*partner.Spec.Primaries[1].Port).To(Equal(int32(5353)))
	g.Expect(byName[*v1.BindZone](res.Objects, "fwd.example")).To(BeNil(), "named does not use a forward zone without recursion")
	g.Expect(byName[*v1.BindZone](res.Objects, "stub.example")).To(BeNil())

	var omitted, replaced []string
	for _, f := range res.Report.Findings {
		if f.Kind == Replaced {
			replaced = append(replaced, f.What)
		} else {
			omitted = append(omitted, f.Pos.String()+" "+f.What)
		}
	}
	g.Expect(omitted).To(ConsistOf(
		"/var/cache/bind/db.example.com:13 hinfo.example.com. HINFO",
		"/etc/bind/named.conf:39 zone example.com: also-notify { 192.0.2.10; };",
		"/etc/bind/named.conf:42 zone stub.example (stub)",
		"/etc/bind/named.conf:43 zone fwd.example (forward)",
		"/etc/bind/named.conf:44 zone static.example",
	))
	g.Expect(replaced).To(ContainElements("controls", "logging", "key rndc-key", `directory "/var/cache/bind";`))
}

// TestImportResolver: a server that only resolves (Forward and Stub zones,
// no data of its own) becomes a Resolver BindCluster.
func TestImportResolver(t *testing.T) {
	g := NewWithT(t)
	res, err := Import(Options{Root: "testdata/resolver", Config: "/etc/bind/named.conf", Namespace: "dns", Cluster: "resolver"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Validate(res.Objects)).To(BeEmpty())
	c := byName[*v1.BindCluster](res.Objects, "resolver")
	g.Expect(c.Spec.Mode).To(Equal(v1.ModeResolver))
	g.Expect(c.Spec.Recursion.AllowRecursion).To(Equal([]v1.AddressMatchElement{{ACLRef: "offices"}, {Builtin: v1.BuiltinLocalhost}}))
	g.Expect(c.Spec.Recursion.Forwarders).To(Equal([]v1.Forwarder{{Address: "192.0.2.1"}, {Address: "192.0.2.2"}}))
	g.Expect(c.Spec.Recursion.ForwardPolicy).To(Equal(v1.ForwardFirst))
	g.Expect(c.Spec.Recursion.DNSSECValidation).To(Equal(v1.DNSSECValidationAuto))
	g.Expect(c.Spec.ExtraOptions).To(ContainElement("max-cache-size 256m;"))
	fwd := byName[*v1.BindZone](res.Objects, "corp.example")
	g.Expect(fwd.Spec.Type).To(Equal(v1.ZoneForward))
	g.Expect(fwd.Spec.ForwardPolicy).To(Equal(v1.ForwardOnly))
	g.Expect(byName[*v1.BindZone](res.Objects, "lab.example").Spec.Primaries).To(Equal([]v1.RemoteServer{{Address: "10.30.0.53"}}))
	g.Expect(res.Report.Outcome()).To(Equal(Whole), "%v", res.Report.Findings)

	// The response policy zones are BindPolicies, in named's order, not
	// BindZones (and not what makes the cluster authoritative).
	g.Expect(byName[*v1.BindZone](res.Objects, "rpz.local")).To(BeNil())
	rules := byName[*v1.BindPolicy](res.Objects, "rpz.local")
	g.Expect(rules).NotTo(BeNil())
	g.Expect(rules.Spec.Order).To(Equal(ptr.To[int32](10)))
	g.Expect(rules.Spec.PolicyOverride).To(Equal(v1.RPZOverrideGiven))
	g.Expect(rules.Spec.MaxPolicyTTL).To(Equal(ptr.To[int32](300)))
	g.Expect(rules.Spec.BreakDNSSEC).To(BeTrue())
	g.Expect(rules.Spec.QNameWaitRecurse).To(Equal(ptr.To(false)))
	g.Expect(rules.Spec.Rules).To(Equal([]v1.RPZRule{
		{Match: "ads.example.com", Trigger: v1.TriggerQName, Action: v1.ActionNXDOMAIN},
		{Match: "*.tracker.example", Trigger: v1.TriggerQName, Action: v1.ActionNODATA},
		{Match: "partner.example", Trigger: v1.TriggerQName, Action: v1.ActionPassthru},
		{Match: "phish.example", Trigger: v1.TriggerQName, Action: v1.ActionRedirect, RedirectTo: "walled.garden.example"},
		{Match: "scan.example", Trigger: v1.TriggerQName, Action: v1.ActionDrop},
		{Match: "big.example", Trigger: v1.TriggerQName, Action: v1.ActionTCPOnly},
		{Match: "192.0.2.0/24", Trigger: v1.TriggerClientIP, Action: v1.ActionPassthru},
		{Match: "203.0.113.9", Trigger: v1.TriggerResponseIP, Action: v1.ActionNXDOMAIN},
		{Match: "2001:db8::1", Trigger: v1.TriggerResponseIP, Action: v1.ActionNODATA},
		{Match: "ns.evil.example", Trigger: v1.TriggerNSDName, Action: v1.ActionNXDOMAIN},
		{Match: "198.51.100.66", Trigger: v1.TriggerNSIP, Action: v1.ActionNXDOMAIN},
	}))
	feed := byName[*v1.BindPolicy](res.Objects, "feed.rpz.example")
	g.Expect(feed.Spec.Order).To(Equal(ptr.To[int32](20)))
	g.Expect(feed.Spec.Primaries).To(Equal([]v1.RemoteServer{{Address: "192.0.2.99"}}))
	g.Expect(feed.Spec.Log).To(Equal(ptr.To(false)))
	g.Expect(feed.Spec.Rules).To(BeEmpty())
}

// TestImportPolicyReportsWhatItCannotCarry: local data and actions BindPolicy
// has no counterpart for are reported, the rest of the policy imported.
func TestImportPolicyReportsWhatItCannotCarry(t *testing.T) {
	g := NewWithT(t)
	root := writeTree(t, map[string]string{
		"etc/bind/named.conf": `options { directory "/var/cache/bind"; response-policy { zone "rpz" policy cname x.example; }; };
zone "rpz" { type primary; file "db.rpz"; };
`,
		"var/cache/bind/db.rpz": `$TTL 60
@ SOA localhost. h.localhost. 1 1 1 1 1
@ NS localhost.
ok.example CNAME .
local.example A 192.0.2.1
keep.example CNAME *.elsewhere.example.
`,
	})
	res, err := Import(Options{Root: root, Config: "/etc/bind/named.conf", Namespace: "dns", Cluster: "r"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Validate(res.Objects)).To(BeEmpty())
	p := byName[*v1.BindPolicy](res.Objects, "rpz")
	g.Expect(p.Spec.Rules).To(Equal([]v1.RPZRule{{Match: "ok.example", Trigger: v1.TriggerQName, Action: v1.ActionNXDOMAIN}}))
	var lines []string
	for _, f := range res.Report.Findings {
		lines = append(lines, f.String())
	}
	g.Expect(lines).To(ConsistOf(
		`/etc/bind/named.conf:1: replaced: directory "/var/cache/bind";: it names a file or directory, and the operator owns every file named reads or writes`,
		"/etc/bind/named.conf:1: omitted: response-policy zone rpz: policy cname: BindPolicy's policyOverride has no counterpart (Given, Disabled, Passthru, NXDOMAIN, NODATA, DROP, TCPOnly)",
		"/var/cache/bind/db.rpz:5: omitted: local.example.rpz. A: a policy rule is a CNAME below the zone's name; local data (answers of other types) has no counterpart in BindPolicy rules",
		"/var/cache/bind/db.rpz:6: omitted: keep.example.rpz. CNAME: the action *.elsewhere.example. has no counterpart in BindPolicy (NXDOMAIN, NODATA, PASSTHRU, DROP, TCPOnly, Redirect to a name)",
	))
}

// TestImportCatalog: a catalog zone the server produces becomes a
// BindCatalogZone keyed like its transfers, and its primary members name
// it; a member the cluster would not serve itself is reported.
func TestImportCatalog(t *testing.T) {
	g := NewWithT(t)
	res, err := Import(Options{Root: "testdata/catalog", Config: "/etc/bind/named.conf", Namespace: "dns", Cluster: "hidden"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Validate(res.Objects)).To(BeEmpty())
	g.Expect(byName[*v1.BindZone](res.Objects, "catalog.example")).To(BeNil(), "the operator makes the catalog from its members")
	cat := byName[*v1.BindCatalogZone](res.Objects, "catalog.example")
	g.Expect(cat).NotTo(BeNil())
	g.Expect(cat.Spec.ZoneName).To(BeEquivalentTo("catalog.example"))
	g.Expect(cat.Spec.TransferKeyRef.Name).To(Equal("catalog-xfer"))
	for _, m := range []string{"one.example", "two.example"} {
		g.Expect(byName[*v1.BindZone](res.Objects, m).Spec.CatalogZoneRef).To(Equal(&v1.LocalObjectReference{Name: "catalog.example"}), m)
	}
	g.Expect(byName[*v1.BindZone](res.Objects, "partner.example").Spec.CatalogZoneRef).To(BeNil())
	var lines []string
	for _, f := range res.Report.Findings {
		if f.Kind == Omitted {
			lines = append(lines, f.String())
		}
	}
	g.Expect(lines).To(ConsistOf(
		"/etc/bind/named.conf:23: omitted: zone catalog.example (catalog): member partner.example: it is not a primary zone this import emits; the operator's catalogs list the cluster's own primary zones",
	))

	// The signed zone is signed by its policy, with the server's keys in
	// the Secret the operator restores onto the primary.
	signed := byName[*v1.BindZone](res.Objects, "signed.example")
	g.Expect(signed.Spec.DNSSECPolicyRef).To(Equal(&v1.LocalObjectReference{Name: "standard"}))
	var keys *corev1.Secret
	for _, s := range res.Secrets {
		if s.Name == v1.DNSSECKeysSecretName("signed.example") {
			keys = s
		}
	}
	g.Expect(keys).NotTo(BeNil(), "the keys Secret")
	g.Expect(keys.Labels).To(HaveKeyWithValue(v1.LabelManagedBy, v1.ManagedByValue))
	g.Expect(slices.Sorted(maps.Keys(keys.Data))).To(Equal([]string{"013-32489.key", "013-32489.private", "013-60089.key", "013-60089.private"}))
	g.Expect(string(keys.Data["013-32489.key"])).To(ContainSubstring("signed.example. IN DNSKEY 257 3 13"))
	g.Expect(res.Report.Findings).To(ContainElement(HaveField("Why", HavePrefix("signed by BindDNSSECPolicy standard with its 4 key files from /var/cache/bind, in Secret signed.example-dnssec-keys"))))

	// The signed zone's policy is carried over, setting by setting.
	pol := byName[*v1.BindDNSSECPolicy](res.Objects, "standard")
	g.Expect(pol).NotTo(BeNil())
	g.Expect(pol.Spec).To(Equal(v1.BindDNSSECPolicySpec{
		Keys: []v1.DNSSECKey{
			{Role: v1.RoleKSK, Algorithm: v1.DNSSECECDSAP256SHA256, Lifetime: "unlimited"},
			{Role: v1.RoleZSK, Algorithm: v1.DNSSECECDSAP256SHA256, Lifetime: "P90D"},
		},
		DNSKEYTTL: "3600", MaxZoneTTL: "1d", SignaturesRefresh: "5d",
		NSEC3: &v1.NSEC3Spec{Iterations: ptr.To[int32](0), SaltLength: ptr.To[int32](0)},
	}))

	// Transferred by address only: no key for the catalog's secondaries.
	root := writeTree(t, map[string]string{
		"etc/bind/named.conf": `zone "cat" { type primary; file "/db.cat"; allow-transfer { 10.0.0.0/8; }; };`,
		"db.cat":              "$TTL 0\n@ SOA invalid. invalid. 1 1 1 1 0\n@ NS invalid.\nversion TXT \"2\"\n",
	})
	res, err = Import(Options{Root: root, Config: "/etc/bind/named.conf", Namespace: "dns", Cluster: "hidden"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(byName[*v1.BindCatalogZone](res.Objects, "cat")).To(BeNil())
	g.Expect(byName[*v1.BindZone](res.Objects, "cat")).To(BeNil())
	g.Expect(res.Report.Findings).To(ContainElement(HaveField("Why", ContainSubstring("its allow-transfer names no single key"))))

	// Consumed from another server: reported for what it is.
	root = writeTree(t, map[string]string{
		"etc/bind/named.conf": `options { recursion no; catalog-zones { zone "cat.example" default-primaries { 192.0.2.1; }; }; };`,
	})
	res, err = Import(Options{Root: root, Config: "/etc/bind/named.conf", Namespace: "dns", Cluster: "hidden"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Report.Findings).To(ConsistOf(HaveField("Why", catalogConsumerWhy)))
}

// TestRPZRulesReadBackWhatRenderWrites: every trigger and action, written
// by render.PolicyRecords as the cluster serves it, reads back into the
// rule it was.
func TestRPZRulesReadBackWhatRenderWrites(t *testing.T) {
	g := NewWithT(t)
	rules := []v1.RPZRule{
		{Match: "ads.example.com", Trigger: v1.TriggerQName, Action: v1.ActionNXDOMAIN},
		{Match: "*.tracker.example", Trigger: v1.TriggerQName, Action: v1.ActionNODATA},
		{Match: "ok.example", Trigger: v1.TriggerQName, Action: v1.ActionPassthru},
		{Match: "scan.example", Trigger: v1.TriggerQName, Action: v1.ActionDrop},
		{Match: "big.example", Trigger: v1.TriggerQName, Action: v1.ActionTCPOnly},
		{Match: "phish.example", Trigger: v1.TriggerQName, Action: v1.ActionRedirect, RedirectTo: "walled.garden.example"},
		{Match: "192.0.2.0/24", Trigger: v1.TriggerClientIP, Action: v1.ActionPassthru},
		{Match: "203.0.113.9", Trigger: v1.TriggerResponseIP, Action: v1.ActionNXDOMAIN},
		{Match: "2001:db8::1", Trigger: v1.TriggerResponseIP, Action: v1.ActionNODATA},
		{Match: "2001:db8::/48", Trigger: v1.TriggerNSIP, Action: v1.ActionDrop},
		{Match: "ns.evil.example", Trigger: v1.TriggerNSDName, Action: v1.ActionNXDOMAIN},
	}
	recs, err := render.PolicyRecords(&v1.BindPolicy{Spec: v1.BindPolicySpec{Rules: rules}})
	g.Expect(err).NotTo(HaveOccurred())
	var back []v1.RPZRule
	for _, r := range recs {
		rule, why := rpzRule(r.Owner, dns.CanonicalName(r.Target))
		g.Expect(why).To(BeEmpty(), r.Owner)
		back = append(back, rule)
	}
	g.Expect(back).To(ConsistOf(rules))
}

func TestRPZAddress(t *testing.T) {
	g := NewWithT(t)
	for in, want := range map[string]string{
		"32.1.2.0.192":           "192.0.2.1",
		"24.0.2.0.192":           "192.0.2.0/24",
		"128.1.zz.db8.2001":      "2001:db8::1",
		"48.zz.db8.2001":         "2001:db8::/48",
		"128.1.zz":               "::1",
		"64.zz.1.0.0.0.db8.2001": "",
		"33.1.2.0.192":           "",
		"24.1.2.0.192":           "",
		"x.1.2.0.192":            "",
		"32":                     "",
	} {
		got, why := rpzAddress(in)
		if want == "" {
			g.Expect(why).NotTo(BeEmpty(), in)
			continue
		}
		g.Expect(why).To(BeEmpty(), in)
		g.Expect(got).To(Equal(want), in)
	}
}

// TestImportKeepsKeyMaterialInSecrets: the material is in the Secrets and
// nowhere else: not in the objects, not in the report.
func TestImportKeepsKeyMaterialInSecrets(t *testing.T) {
	g := NewWithT(t)
	res := importFixture(t)
	g.Expect(res.Secrets).To(HaveLen(2))
	var report bytes.Buffer
	res.Report.Write(&report)
	objs, err := yaml.Marshal(res.Objects)
	g.Expect(err).NotTo(HaveOccurred())
	for _, s := range res.Secrets {
		material := string(s.Data[v1.TSIGSecretKey])
		g.Expect(material).NotTo(BeEmpty())
		g.Expect(string(objs)).NotTo(ContainSubstring(material))
		g.Expect(report.String()).NotTo(ContainSubstring(material))
	}
	// Nor the rndc key's, which is not imported.
	g.Expect(report.String()).NotTo(ContainSubstring("cm5kYy1rZXk="))
}

// TestImportReportsWhatItCannotRead: a zone whose file does not parse is
// an omission with the file and line (named would not load it either),
// and the other zones still import.
func TestImportReportsWhatItCannotRead(t *testing.T) {
	g := NewWithT(t)
	res := importTree(t, map[string]string{
		"named.conf": "options { recursion no; };\nzone \"a.example\" { type primary; file \"db.a\"; };\nzone \"b.example\" { type primary; file \"db.b\"; };\n",
		"db.a":       "$TTL 60\n@ SOA ns hm 1 2 3 4 5\n@ NS ns.example.net.\nbad A not-an-address\n",
		"db.b":       "$TTL 60\n@ SOA ns.example.net. hm 1 2 3 4 5\n@ NS ns.example.net.\n",
	})
	g.Expect(res.Report.Findings).To(HaveLen(1))
	f := res.Report.Findings[0]
	g.Expect(f.String()).To(And(HavePrefix("named.conf:2: omitted: zone a.example: its zone file cannot be read"), ContainSubstring("/db.a"), ContainSubstring("line: 4")))
	g.Expect(Validate(res.Objects)).To(BeEmpty())
	b := byName[*v1.BindZone](res.Objects, "b.example")
	g.Expect(b.Spec.Records).To(HaveLen(1))
	g.Expect(byName[*v1.BindZone](res.Objects, "a.example")).To(BeNil(), "a zone named could not load is not served empty")
}

// TestImportInheritsLists: a zone without its own allow-transfer or
// allow-query takes its view's, else (allow-transfer) the options', as
// named does; a secondary zone too.
func TestImportInheritsLists(t *testing.T) {
	g := NewWithT(t)
	res := importTree(t, map[string]string{
		"named.conf": `options { recursion no; allow-transfer { key "k"; }; };
key "k" { algorithm hmac-sha256; secret "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0IQ=="; };
view "v" {
	allow-transfer { 192.0.2.0/24; };
	allow-query { 198.51.100.0/24; };
	zone "a.example" { type primary; file "db"; };
	zone "b.example" { type primary; file "db"; allow-transfer { none; }; allow-query { any; }; };
};
view "w" {
	zone "c.example" { type secondary; primaries { 192.0.2.1; }; };
};
`,
		"db": "$TTL 60\n@ SOA ns.example.net. hm 1 2 3 4 5\n@ NS ns.example.net.\n",
	})
	g.Expect(Validate(res.Objects)).To(BeEmpty())
	a := byName[*v1.BindZone](res.Objects, "a.example")
	g.Expect(a.Spec.AllowTransfer).To(Equal([]v1.AddressMatchElement{{Address: "192.0.2.0/24"}}), "the view's")
	g.Expect(a.Spec.AllowQuery).To(Equal([]v1.AddressMatchElement{{Address: "198.51.100.0/24"}}), "the view's")
	b := byName[*v1.BindZone](res.Objects, "b.example")
	g.Expect(b.Spec.AllowTransfer).To(Equal([]v1.AddressMatchElement{{Builtin: v1.BuiltinNone}}), "its own")
	g.Expect(b.Spec.AllowQuery).To(Equal([]v1.AddressMatchElement{{Builtin: v1.BuiltinAny}}), "its own")
	c := byName[*v1.BindZone](res.Objects, "c.example")
	g.Expect(c.Spec.AllowTransfer).To(Equal([]v1.AddressMatchElement{{KeyRef: "k"}}), "the options'")
	g.Expect(res.Report.Outcome()).To(Equal(Whole), "%v", res.Report.Findings)
}

// TestImportReportsOptionsExtraOptionsRefuses: an option the operator
// neither sets nor admits in extraOptions is omitted with the reason,
// once, without the allow-list.
func TestImportReportsOptionsExtraOptionsRefuses(t *testing.T) {
	g := NewWithT(t)
	res := importTree(t, map[string]string{
		"named.conf": "options {\n\trecursion no;\n\tdialup yes;\n\tmax-cache-size 64m;\n};\nzone \"a.example\" { type primary; file \"db\"; };\n",
		"db":         "$TTL 60\n@ SOA ns.example.net. hm 1 2 3 4 5\n@ NS ns.example.net.\n",
	})
	g.Expect(byName[*v1.BindCluster](res.Objects, "c").Spec.ExtraOptions).To(Equal([]string{"max-cache-size 64m;"}))
	g.Expect(res.Report.Findings).To(HaveLen(1))
	f := res.Report.Findings[0]
	g.Expect(f.String()).To(HavePrefix(`named.conf:3: omitted: dialup yes;: "dialup" cannot be set in extraOptions`))
	g.Expect(f.String()).NotTo(ContainSubstring("answer-cookie"), "the allow-list")
}

// TestImportIsDeterministic: the same input gives byte-identical objects
// and report, run after run, for every fixture (the issue: an import kept
// in Git must not change when it is run again).
func TestImportIsDeterministic(t *testing.T) {
	render := func(fixture string) string {
		res, err := Import(Options{Root: filepath.Join("testdata", fixture), Config: "/etc/bind/named.conf", Namespace: "dns", Cluster: "c"})
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		for _, o := range append(res.Objects, toObjects(res.Secrets)...) {
			b, err := yaml.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(b)
		}
		res.Report.Write(&out)
		return out.String()
	}
	for _, fixture := range []string{"server", "resolver", "catalog"} {
		first := render(fixture)
		for range 10 {
			if got := render(fixture); got != first {
				t.Fatalf("%s: a second import differs from the first", fixture)
			}
		}
	}
}

func toObjects(secrets []*corev1.Secret) []client.Object {
	out := make([]client.Object, len(secrets))
	for i, s := range secrets {
		out[i] = s
	}
	return out
}

// TestImportSignedZoneWithoutUsableKeys: a signed zone whose keys cannot
// come along is still imported signed, and the report says the DS at the
// parent must change; a key of an algorithm no policy signs with is
// reported, not guessed.
func TestImportSignedZoneWithoutUsableKeys(t *testing.T) {
	conf := `options { directory "/var/named"; key-directory "keys"; };
dnssec-policy "p" { keys { csk lifetime unlimited algorithm 13; }; };
zone "s.example" { type primary; file "db.s"; dnssec-policy "p"; };
`
	zone := "$TTL 300\n@ SOA ns. h. 1 1 1 1 1\n@ NS ns.\n"
	for _, c := range []struct {
		desc  string
		files map[string]string
		want  string
	}{
		{"no key files", map[string]string{"var/named/keys/README": "x"}, "/var/named/keys holds no key file of it (Ks.example.+*)"},
		{"no key-directory", nil, "its key-directory /var/named/keys cannot be read (no such file or directory)"},
		{"an unknown algorithm", map[string]string{"var/named/keys/Ks.example.+253+00001.key": "x"}, "key file /var/named/keys/Ks.example.+253+00001.key names algorithm 253, which no BindDNSSECPolicy signs with"},
		{"a public key alone", map[string]string{"var/named/keys/Ks.example.+013+00001.key": "x"}, "the key files in /var/named/keys are not usable: files[0]: 013+00001.key: does not parse as a DNSKEY record"},
	} {
		files := map[string]string{"etc/named.conf": conf, "var/named/db.s": zone}
		maps.Copy(files, c.files)
		res, err := Import(Options{Root: writeTree(t, files), Config: "/etc/named.conf", Namespace: "dns", Cluster: "c"})
		if err != nil {
			t.Fatalf("%s: %v", c.desc, err)
		}
		z := byName[*v1.BindZone](res.Objects, "s.example")
		if z == nil || z.Spec.DNSSECPolicyRef == nil || z.Spec.DNSSECPolicyRef.Name != "p" {
			t.Errorf("%s: the zone is not signed by p: %+v", c.desc, z)
		}
		if len(res.Secrets) != 0 {
			t.Errorf("%s: %d Secrets", c.desc, len(res.Secrets))
		}
		NewWithT(t).Expect(res.Report.Findings).To(ContainElement(And(HaveField("Kind", Omitted), HaveField("Why", ContainSubstring(c.want+"; the cluster makes new keys, and the DS at the parent must change to them")))), c.desc)
	}
}

// TestImportSplitHorizonWithRecursiveView: the common hybrid server (zones
// of its own in every view, recursion and a forward zone in the internal
// view only) becomes a Resolver cluster holding the zones, whose views
// recurse exactly where the old server's did; nothing is lost.
func TestImportSplitHorizonWithRecursiveView(t *testing.T) {
	g := NewWithT(t)
	res := importTree(t, map[string]string{
		"named.conf": `options { recursion no; dnssec-validation no; allow-recursion { 10.0.0.0/8; }; };
view "internal" {
	match-clients { 10.0.0.0/8; };
	recursion yes;
	zone "example.com" { type primary; file "db"; };
	zone "corp.example" { type forward; forward only; forwarders { 10.1.1.1 port 5353; }; };
};
view "external" {
	match-clients { any; };
	allow-recursion { any; };
	forwarders { 192.0.2.1; };
	zone "example.com" { type primary; file "db"; };
};
`,
		"db": "$TTL 60\n@ SOA ns.example.net. hm 1 2 3 4 5\n@ NS ns.example.net.\n",
	})
	g.Expect(Validate(res.Objects)).To(BeEmpty())
	c := byName[*v1.BindCluster](res.Objects, "c")
	g.Expect(c.Spec.Mode).To(Equal(v1.ModeResolver), "a view recursed")
	g.Expect(c.Spec.Recursion.AllowRecursion).To(Equal([]v1.AddressMatchElement{{Address: "10.0.0.0/8"}}))
	g.Expect(c.Spec.Recursion.DNSSECValidation).To(Equal(v1.DNSSECValidationNo))
	g.Expect(byName[*v1.BindView](res.Objects, "internal").Spec.Recursion).To(Equal(ptr.To(true)))
	ext := byName[*v1.BindView](res.Objects, "external")
	g.Expect(ext.Spec.Recursion).To(Equal(ptr.To(false)), "named's options said no, and the cluster's options recurse")
	g.Expect(ext.Spec.AllowRecursion).To(BeEmpty())
	fwd := byName[*v1.BindZone](res.Objects, "corp.example")
	g.Expect(fwd.Spec.Type).To(Equal(v1.ZoneForward))
	g.Expect(fwd.Spec.ViewRef).To(Equal(&v1.LocalObjectReference{Name: "internal"}))
	g.Expect(fwd.Spec.Forwarders).To(Equal([]v1.Forwarder{{Address: "10.1.1.1", Port: ptr.To[int32](5353)}}))
	var lines []string
	for _, f := range res.Report.Findings {
		lines = append(lines, f.String())
	}
	g.Expect(lines).To(ConsistOf(
		HavePrefix("named.conf:10: replaced: view external: allow-recursion { any; };: recursion is off in the view"),
		HavePrefix("named.conf:11: replaced: view external: forwarders { 192.0.2.1; };: recursion is off in the view"),
	))
	g.Expect(res.Report.Outcome()).To(Equal(Whole), "%v", res.Report.Findings)
}

// TestImportAuthoritativeViewForwarders: on a server that never recurses,
// a view's forwarders are unused, and reported so rather than refused.
func TestImportAuthoritativeViewForwarders(t *testing.T) {
	g := NewWithT(t)
	res := importTree(t, map[string]string{
		"named.conf": `options { recursion no; };
view "v" { forwarders { 192.0.2.1; }; zone "a.example" { type primary; file "db"; }; };
`,
		"db": "$TTL 60\n@ SOA ns.example.net. hm 1 2 3 4 5\n@ NS ns.example.net.\n",
	})
	g.Expect(Validate(res.Objects)).To(BeEmpty())
	g.Expect(byName[*v1.BindCluster](res.Objects, "c").Spec.Mode).To(Equal(v1.ModeAuthoritative))
	g.Expect(byName[*v1.BindView](res.Objects, "v").Spec.Forwarders).To(BeEmpty())
	g.Expect(res.Report.Findings).To(HaveLen(1))
	g.Expect(res.Report.Findings[0].String()).To(HavePrefix("named.conf:2: replaced: view v: forwarders { 192.0.2.1; };: recursion is off in the view"))
}

// TestImportDefaultRecursion: named recurses unless told not to (for
// localnets and localhost), so a server with zones of its own and no
// recursion statement is imported as the Resolver it was, not silently
// made authoritative.
func TestImportDefaultRecursion(t *testing.T) {
	for name, conf := range map[string]string{
		"options without recursion": "options { querylog no; };\n",
		"no options":                "",
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			res := importTree(t, map[string]string{
				"named.conf": conf + `zone "a.example" { type primary; file "db"; };` + "\n",
				"db":         "$TTL 60\n@ SOA ns.example.net. hm 1 2 3 4 5\n@ NS ns.example.net.\n",
			})
			g.Expect(Validate(res.Objects)).To(BeEmpty())
			c := byName[*v1.BindCluster](res.Objects, "c")
			g.Expect(c.Spec.Mode).To(Equal(v1.ModeResolver))
			g.Expect(c.Spec.Recursion.AllowRecursion).To(BeEmpty(), "named's default (localnets; localhost) is the cluster's")
			g.Expect(byName[*v1.BindZone](res.Objects, "a.example").Spec.Type).To(Equal(v1.ZonePrimary))
			g.Expect(res.Report.Outcome()).To(Equal(Whole), "%v", res.Report.Findings)
		})
	}
}

// TestImportRecursionCorners: named's inheritance where the import must
// follow it, and what admission could not take made admissible.
func TestImportRecursionCorners(t *testing.T) {
	db := "$TTL 60\n@ SOA ns.example.net. hm 1 2 3 4 5\n@ NS ns.example.net.\n"
	t.Run("every view says no", func(t *testing.T) {
		g := NewWithT(t)
		res := importTree(t, map[string]string{"db": db, "named.conf": `options { querylog no; };
view "a" { recursion no; match-recursive-only yes; zone "a.example" { type primary; file "db"; }; };
view "b" { recursion no; zone "b.example" { type primary; file "db"; }; };
`})
		g.Expect(Validate(res.Objects)).To(BeEmpty())
		g.Expect(byName[*v1.BindCluster](res.Objects, "c").Spec.Mode).To(Equal(v1.ModeAuthoritative), "named's default is overridden in every view")
		a := byName[*v1.BindView](res.Objects, "a")
		g.Expect(a.Spec.MatchRecursiveOnly).To(BeTrue())
		g.Expect(a.Spec.Recursion).To(BeNil(), "on an Authoritative cluster unset says no")
		g.Expect(res.Report.Outcome()).To(Equal(Whole), "%v", res.Report.Findings)
	})
	t.Run("allow-recursion follows allow-query", func(t *testing.T) {
		g := NewWithT(t)
		res := importTree(t, map[string]string{"db": db, "named.conf": `options { allow-query { 10.0.0.0/8; }; };
zone "a.example" { type primary; file "db"; };
`})
		g.Expect(Validate(res.Objects)).To(BeEmpty())
		c := byName[*v1.BindCluster](res.Objects, "c")
		g.Expect(c.Spec.Mode).To(Equal(v1.ModeResolver))
		g.Expect(c.Spec.Recursion.AllowRecursion).To(Equal([]v1.AddressMatchElement{{Address: "10.0.0.0/8"}}))
	})
	t.Run("a recursive-only view that does not recurse on a resolver", func(t *testing.T) {
		g := NewWithT(t)
		res := importTree(t, map[string]string{"db": db, "named.conf": `options { recursion no; };
view "a" { recursion yes; match-clients { 10.0.0.0/8; }; allow-recursion { 10.0.0.0/8; }; zone "a.example" { type primary; file "db"; }; };
view "b" { match-recursive-only yes; };
`})
		g.Expect(Validate(res.Objects)).To(BeEmpty())
		b := byName[*v1.BindView](res.Objects, "b")
		g.Expect(b.Spec.Recursion).To(Equal(ptr.To(false)))
		g.Expect(b.Spec.MatchRecursiveOnly).To(BeFalse())
		g.Expect(res.Report.Findings).To(HaveLen(1))
		g.Expect(res.Report.Findings[0].String()).To(HavePrefix("named.conf:3: omitted: view b: match-recursive-only yes;: a BindView that matches only recursive queries must recurse"))
	})
	t.Run("a view's allow-recursion follows its allow-query", func(t *testing.T) {
		g := NewWithT(t)
		res := importTree(t, map[string]string{"db": db, "named.conf": `options { allow-query-cache { 10.0.0.0/8; }; };
view "a" { allow-query { 192.0.2.0/24; }; zone "a.example" { type primary; file "db"; }; };
view "b" { allow-query-cache { 198.51.100.0/24; }; allow-query { 192.0.2.0/24; }; zone "b.example" { type primary; file "db"; }; };
`})
		g.Expect(Validate(res.Objects)).To(BeEmpty())
		g.Expect(byName[*v1.BindCluster](res.Objects, "c").Spec.Recursion.AllowRecursion).To(Equal([]v1.AddressMatchElement{{Address: "10.0.0.0/8"}}))
		g.Expect(byName[*v1.BindView](res.Objects, "a").Spec.AllowRecursion).To(BeEmpty(), "the options' allow-query-cache comes before the view's allow-query")
		g.Expect(byName[*v1.BindView](res.Objects, "b").Spec.AllowRecursion).To(Equal([]v1.AddressMatchElement{{Address: "198.51.100.0/24"}}), "the view's allow-query-cache")
		g.Expect(res.Report.Outcome()).To(Equal(Whole), "%v", res.Report.Findings)
		g.Expect(res.Report.Findings).To(And(HaveLen(2), HaveEach(HaveField("Kind", Converted))), "the options' allow-query-cache and view b's")
	})
	t.Run("also-notify inherited", func(t *testing.T) {
		g := NewWithT(t)
		res := importTree(t, map[string]string{"db": db, "named.conf": `options { recursion no; also-notify { 192.0.2.1; }; };
view "v" {
	also-notify { 192.0.2.2 port 5353; };
	zone "a.example" { type primary; file "db"; };
	zone "b.example" { type primary; file "db"; also-notify { 192.0.2.3; }; };
	zone "c.example" { type secondary; primaries { 192.0.2.9; }; };
};
view "w" { zone "d.example" { type primary; file "db"; }; };
`})
		g.Expect(Validate(res.Objects)).To(BeEmpty())
		g.Expect(byName[*v1.BindZone](res.Objects, "a.example").Spec.ExternalSecondaries).To(Equal([]v1.RemoteServer{{Address: "192.0.2.2", Port: ptr.To[int32](5353)}}), "the view's")
		g.Expect(byName[*v1.BindZone](res.Objects, "b.example").Spec.ExternalSecondaries).To(Equal([]v1.RemoteServer{{Address: "192.0.2.3"}}), "its own")
		g.Expect(byName[*v1.BindZone](res.Objects, "c.example").Spec.ExternalSecondaries).To(BeEmpty(), "a secondary copy")
		g.Expect(byName[*v1.BindZone](res.Objects, "d.example").Spec.ExternalSecondaries).To(Equal([]v1.RemoteServer{{Address: "192.0.2.1"}}), "the options'")
		g.Expect(res.Report.Outcome()).To(Equal(Whole), "%v", res.Report.Findings)
	})
	t.Run("also-notify listed twice", func(t *testing.T) {
		g := NewWithT(t)
		res := importTree(t, map[string]string{"db": db, "named.conf": `options { recursion no; };
primaries "outside" { 192.0.2.10; };
zone "a.example" { type primary; file "db"; also-notify { outside; 192.0.2.10 port 53; 2001:db8::1; }; };
`})
		g.Expect(Validate(res.Objects)).To(BeEmpty())
		g.Expect(byName[*v1.BindZone](res.Objects, "a.example").Spec.ExternalSecondaries).To(Equal([]v1.RemoteServer{{Address: "192.0.2.10"}, {Address: "2001:db8::1"}}))
	})
}
