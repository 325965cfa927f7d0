package importer

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"git.unkin.net/unkin/bind-operator/agent/validate"
	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

const (
	seedKey = "ygmp56SYH7rTA11dCaDtNRc6LwdDn+USjp8Z8pSx/cKsaoLu1mUCh+hXoumQKhllXHBrsSC0am9k2tMkcM44PA=="
	seedSig = "ygmp56SYH7rTA11dCaDtNRc6LwdDn+USjp8Z8pSx/cKsaoLu1mUCh+hXoumQKhllXHBrsSC0am9k2tMkcM44PA=="
)

// seedTree is a server with two zones over the bound of one BindZone:
// big.example by its number of sets (20,002, the HINFO set aside),
// signed.example by its bytes, signed by an imported dnssec-policy.
func seedTree() map[string]string {
	pad := strings.Repeat("x", 100)
	return map[string]string{
		"etc/named.conf": `options { directory "/var/named"; recursion no; };
dnssec-policy "p" { keys { csk lifetime unlimited algorithm 13; }; };
zone "big.example" { type primary; file "db.big"; };
zone "signed.example" { type primary; file "db.signed"; dnssec-policy "p"; };
`,
		// The MNAME lies inside the zone without an address: a seeded
		// zone keeps it. The second h1 TXT repeats the $GENERATE's.
		"var/named/db.big": `$TTL 300
@ SOA ns0 hostmaster 2024010101 7200 900 1209600 300
@ NS ns1.example.net.
@ DNSKEY 257 3 13 ` + seedKey + `
$GENERATE 1-20001 h$ TXT "` + pad + `"
h1 RRSIG TXT 13 3 300 20250101000000 20240101000000 12345 big.example. ` + seedSig + `
h1 NSEC h2.big.example. TXT RRSIG NSEC
h1 TXT "` + pad + `"
hinfo 60 HINFO "PC" "Linux"
hinfo 120 HINFO "Mac" "BSD"
private 60 TYPE65280 \# 3 010203
null 60 NULL \# 2 0A0B
@ 0 TYPE65534 \# 5 0D30390001
outside.example.net. A 192.0.2.9
`,
		"var/named/db.signed": `$TTL 60
@ SOA ns.example.net. hostmaster.example.net. 7 3600 600 86400 60
@ NS ns.example.net.
@ DNSKEY 257 3 13 ` + seedKey + `
$GENERATE 1-3000 t$ TXT "` + strings.Repeat("y", 200) + `"
`,
	}
}

// seedFile is the zone file z's ConfigMaps hold, joined in order.
func seedFile(t *testing.T, res *Result, z *v1.BindZone) []byte {
	t.Helper()
	var file bytes.Buffer
	for _, ref := range z.Spec.SeedFrom.ConfigMaps {
		var cm *corev1.ConfigMap
		for _, s := range res.Seeds {
			if s.Name == ref.Name {
				cm = s
			}
		}
		if cm == nil {
			t.Fatalf("zone %s names ConfigMap %s, which is not among the seeds", z.Name, ref.Name)
		}
		file.WriteString(cm.Data[v1.SeedDataKey])
	}
	return file.Bytes()
}

// TestImportSeedsZonesTooLargeForAnObject: a primary zone whose record
// sets one BindZone cannot hold is imported by seed: the BindZone names
// ConfigMaps holding its zone file (every record inside the zone, of any
// type, without the old signer's), and holds no records.
func TestImportSeedsZonesTooLargeForAnObject(t *testing.T) {
	g := NewWithT(t)
	res, err := Import(Options{Root: writeTree(t, seedTree()), Config: "/etc/named.conf", Namespace: "dns", Cluster: "legacy"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Validate(res.Objects)).To(BeEmpty(), "every emitted object passes the admission rules")
	g.Expect(ValidateSeeds(res.Objects, res.Seeds)).To(BeEmpty())

	big := byName[*v1.BindZone](res.Objects, "big.example")
	g.Expect(big).NotTo(BeNil())
	g.Expect(big.Spec.Records).To(BeEmpty())
	g.Expect(big.Spec.SeedFrom).NotTo(BeNil())
	g.Expect(big.Spec.SOA.PrimaryNameServer).To(Equal(v1.DomainName("ns0.big.example")), "the file's MNAME: the file has the zone's NS and glue")
	g.Expect(*big.Spec.SOA.Refresh).To(Equal(int32(7200)))
	g.Expect(*big.Spec.DefaultTTL).To(Equal(v1.TTL(300)))
	g.Expect(big.Spec.DNSSECPolicyRef).To(BeNil())
	var names []string
	for i, ref := range big.Spec.SeedFrom.ConfigMaps {
		names = append(names, ref.Name)
		g.Expect(ref.Name).To(Equal(fmt.Sprintf("big.example-seed-%d", i)))
	}
	g.Expect(len(names)).To(BeNumerically(">", 1), "the file is over one part")

	for _, cm := range res.Seeds {
		g.Expect(cm.Namespace).To(Equal("dns"))
		g.Expect(cm.Labels).To(Equal(map[string]string{LabelImportedFrom: "legacy"}))
		g.Expect(cm.Immutable).To(HaveValue(BeTrue()))
		g.Expect(cm.Data).To(HaveLen(1))
		g.Expect(len(cm.Data[v1.SeedDataKey])).To(BeNumerically("<=", v1.MaxSeedPartBytes))
		g.Expect(cm.Data[v1.SeedDataKey]).To(HaveSuffix("\n"), "parts end at the end of a line")
		g.Expect(cm.TypeMeta.Kind).To(Equal("ConfigMap"))
	}
	file := seedFile(t, res, big)
	g.Expect(validate.SeedDigest(file)).To(Equal(big.Spec.SeedFrom.SHA256))
	st, err := validate.Seed("big.example", bytes.NewReader(file))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Records).To(Equal(1+1+20001+2+2), "SOA, NS, the generated TXTs once each, both HINFOs, the unknown type and NULL")
	g.Expect(st.Serial).To(Equal(uint32(2024010101)))
	text := string(file)
	g.Expect(text).To(HavePrefix("$ORIGIN big.example.\n$TTL 300\nbig.example. 300 IN SOA ns0.big.example. hostmaster.big.example. 2024010101 7200 900 1209600 300\nbig.example. 300 IN NS ns1.example.net.\nh1.big.example. 300 IN TXT"))
	g.Expect(text).To(ContainSubstring("\nhinfo.big.example. 60 IN HINFO \"PC\" \"Linux\"\n"), "a type spec.records does not take")
	g.Expect(text).To(ContainSubstring("\nhinfo.big.example. 120 IN HINFO \"Mac\" \"BSD\"\n"), "named keeps the first TTL, as the old server did")
	g.Expect(text).To(ContainSubstring("\nprivate.big.example. 60 IN TYPE65280 \\# 3 010203\n"), "a type the library does not know, in RFC 3597's form")
	g.Expect(text).To(ContainSubstring("\nnull.big.example. 60 IN NULL \\# 2 0A0B\n"))
	g.Expect(text).NotTo(ContainSubstring("\t"))
	for _, gone := range []string{" RRSIG ", " NSEC ", " DNSKEY ", "outside.example.net.", "TYPE65534"} {
		g.Expect(text).NotTo(ContainSubstring(gone))
	}

	// The signed zone: by seed too, signed by its policy; the old signer's
	// records are replaced, as in a zone of spec.records.
	signed := byName[*v1.BindZone](res.Objects, "signed.example")
	g.Expect(signed.Spec.SeedFrom).NotTo(BeNil())
	g.Expect(signed.Spec.Records).To(BeEmpty())
	g.Expect(signed.Spec.DNSSECPolicyRef).To(Equal(&v1.LocalObjectReference{Name: "p"}))
	g.Expect(signed.Spec.SeedFrom.ConfigMaps).To(Equal([]v1.LocalObjectReference{{Name: "signed.example-seed-0"}}))
	sfile := seedFile(t, res, signed)
	g.Expect(string(sfile)).NotTo(ContainSubstring(" DNSKEY "))
	st, err = validate.Seed("signed.example", bytes.NewReader(sfile))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.Records).To(Equal(1 + 1 + 3000))
	for _, cm := range res.Seeds {
		want := "big.example"
		if strings.HasPrefix(cm.Name, "signed.") {
			want = "signed.example"
		}
		g.Expect(cm.Annotations).To(Equal(map[string]string{v1.AnnotationSeedFor: want}))
	}
	g.Expect(res.Seeds).To(HaveLen(len(names) + 1))

	var lines []string
	for _, f := range res.Report.Findings {
		lines = append(lines, f.String())
	}
	g.Expect(lines).To(ContainElements(
		"/var/named/db.big:4: omitted: big.example. DNSKEY: the signer's record, and the zone is imported unsigned (it names no dnssec-policy the import carries over)",
		"/var/named/db.big:6: omitted: h1.big.example. RRSIG: the signer's record, and the zone is imported unsigned (it names no dnssec-policy the import carries over)",
		"/var/named/db.big:7: omitted: h1.big.example. NSEC: the signer's record, and the zone is imported unsigned (it names no dnssec-policy the import carries over)",
		"/var/named/db.big:14: omitted: outside.example.net. A: it lies outside the zone big.example",
		"/var/named/db.big:13: omitted: big.example. TYPE65534: the signer's record, and the zone is imported unsigned (it names no dnssec-policy the import carries over)",
		"/var/named/db.signed:4: replaced: signed.example. DNSKEY: the signer's record: the cluster signs the zone again with its BindDNSSECPolicy",
		fmt.Sprintf("/etc/named.conf:3: converted: zone big.example: its 20002 record sets (%d bytes) are more than one BindZone holds (5000 sets, 524288 bytes): imported by seed, its 20007 records as a zone file in %d ConfigMaps big.example-seed-0 to %s (seeds.yaml), which the primary loads; spec.records is empty, and the operator leaves the file's records alone (move a set into spec.records or a DNSRecord to manage it)", sizeOf(lines, "zone big.example: its 20002 record sets ("), len(names), names[len(names)-1]),
	))
	g.Expect(lines).To(ContainElement(HavePrefix("/etc/named.conf:4: converted: zone signed.example: its 3001 record sets (")))
	for _, l := range lines {
		g.Expect(l).NotTo(Or(ContainSubstring("HINFO"), ContainSubstring("MNAME"), ContainSubstring("TTL 120")), "nothing of the seed's is lost")
	}

	// The same bytes on every run.
	res2, err := Import(Options{Root: writeTree(t, seedTree()), Config: "/etc/named.conf", Namespace: "dns", Cluster: "legacy"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(seedYAML(t, res2) == seedYAML(t, res)).To(BeTrue(), "a second import differs from the first")
}

// sizeOf is the number after prefix in the line that holds it.
func sizeOf(lines []string, prefix string) int {
	for _, l := range lines {
		if _, rest, ok := strings.Cut(l, prefix); ok {
			var n int
			_, _ = fmt.Sscanf(rest, "%d", &n)
			return n
		}
	}
	return -1
}

// seedYAML is the zones and seeds of an import as YAML.
func seedYAML(t *testing.T, res *Result) string {
	t.Helper()
	var out bytes.Buffer
	for _, o := range res.Objects {
		if z, ok := o.(*v1.BindZone); ok {
			b, err := yaml.Marshal(z)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(b)
		}
	}
	for _, cm := range res.Seeds {
		b, err := yaml.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
	}
	return out.String()
}

// TestSeedTooLargeForASeed: a zone file of more parts than spec.seedFrom
// names is reported, and nothing of it emitted.
func TestSeedTooLargeForASeed(t *testing.T) {
	g := NewWithT(t)
	// 300 records of 51,000 bytes: over 15 MB.
	txt := strings.TrimSpace(strings.Repeat(`"`+strings.Repeat("z", 253)+`" `, 200))
	var db strings.Builder
	db.WriteString("$TTL 60\n@ SOA ns.example.net. h.example.net. 1 1 1 1 1\n@ NS ns.example.net.\n")
	for i := range 300 {
		_, _ = fmt.Fprintf(&db, "t%d TXT %s\n", i, txt)
	}
	res := importTree(t, map[string]string{
		"named.conf": "zone \"huge.example\" { type primary; file \"db\"; };\n",
		"db":         db.String(),
	})
	g.Expect(byName[*v1.BindZone](res.Objects, "huge.example")).To(BeNil())
	g.Expect(res.Seeds).To(BeEmpty())
	g.Expect(res.Report.Findings).To(ContainElement(And(HaveField("Kind", Omitted), HaveField("Why", And(
		HavePrefix("its 301 record sets ("),
		ContainSubstring("more than a seed holds (16 ConfigMaps of 921600 bytes): the zone is not imported"),
	)))))
}

// TestSeedParts: parts end at line ends, hold at most the bound, and join
// into the file.
func TestSeedParts(t *testing.T) {
	g := NewWithT(t)
	file := []byte("aaaa\nbb\ncccccc\nd\n")
	parts := seedParts(file, 8)
	g.Expect(parts).To(Equal([][]byte{[]byte("aaaa\nbb\n"), []byte("cccccc\n"), []byte("d\n")}))
	g.Expect(seedParts(file, len(file))).To(Equal([][]byte{file}))
	g.Expect(len(seedParts([]byte("0123456789\n"), 4))).To(BeNumerically(">", maxSeedParts), "a line longer than a part")
}

// TestSeedConfigMapName: "<zone>-seed-<n>", shortened with a hash when
// too long for an object name.
func TestSeedConfigMapName(t *testing.T) {
	g := NewWithT(t)
	g.Expect(v1.SeedConfigMapName("internal-example.com", 0)).To(Equal("internal-example.com-seed-0"))
	g.Expect(v1.SeedConfigMapName("a", 15)).To(Equal("a-seed-15"))
	long := strings.Repeat("a", 240) + ".-" + strings.Repeat("b", 10)
	seen := map[string]bool{}
	for n := range 16 {
		name := v1.SeedConfigMapName(long, n)
		g.Expect(len(name)).To(BeNumerically("<=", 253))
		g.Expect(validation.NameIsDNSSubdomain(name, false)).To(BeEmpty(), name)
		g.Expect(name).To(HaveSuffix(fmt.Sprintf("-seed-%d", n)))
		g.Expect(seen[name]).To(BeFalse())
		seen[name] = true
	}
	g.Expect(v1.SeedConfigMapName(long, 3)).NotTo(Equal(v1.SeedConfigMapName(long+"c", 3)), "the hash tells long names apart")
}

// TestValidateSeedsRefusesWhatWouldNotLoad: a digest that differs, a part
// without the zone's annotation, a ConfigMap no zone names.
func TestValidateSeedsRefusesWhatWouldNotLoad(t *testing.T) {
	g := NewWithT(t)
	file := "$ORIGIN s.example.\ns.example. 60 IN SOA ns.example.net. h.example.net. 1 1 1 1 1\ns.example. 60 IN NS ns.example.net.\n"
	zone := func() *v1.BindZone {
		z := &v1.BindZone{Spec: v1.BindZoneSpec{ZoneName: "s.example", Type: v1.ZonePrimary, SeedFrom: &v1.ZoneSeed{
			ConfigMaps: []v1.LocalObjectReference{{Name: "s-seed-0"}}, SHA256: validate.SeedDigest([]byte(file)),
		}}}
		z.Name, z.Namespace = "s", "dns"
		return z
	}
	cm := func(name, owner string) *corev1.ConfigMap {
		c := &corev1.ConfigMap{Data: map[string]string{v1.SeedDataKey: file}}
		c.Name, c.Namespace, c.Annotations = name, "dns", map[string]string{v1.AnnotationSeedFor: owner}
		return c
	}
	g.Expect(ValidateSeeds(toClientObjects(zone()), []*corev1.ConfigMap{cm("s-seed-0", "s")})).To(BeEmpty())

	bad := zone()
	bad.Spec.SeedFrom.SHA256 = validate.SeedDigest([]byte("other"))
	g.Expect(ValidateSeeds(toClientObjects(bad), []*corev1.ConfigMap{cm("s-seed-0", "s")})).To(ConsistOf(MatchError(ContainSubstring("sha256 is"))))
	g.Expect(ValidateSeeds(toClientObjects(zone()), []*corev1.ConfigMap{cm("s-seed-0", "t")})).To(ConsistOf(MatchError(ContainSubstring(`has bind.unkin.net/seed-for "t"`))))
	g.Expect(ValidateSeeds(toClientObjects(zone()), []*corev1.ConfigMap{cm("s-seed-0", "s"), cm("x-seed-0", "x")})).To(ConsistOf(MatchError(ContainSubstring("ConfigMap x-seed-0: no zone's spec.seedFrom names it"))))
	g.Expect(ValidateSeeds(toClientObjects(zone()), nil)).To(ConsistOf(MatchError(ContainSubstring("is not among the seeds"))))
}

func toClientObjects(zones ...*v1.BindZone) []client.Object {
	out := make([]client.Object, len(zones))
	for i, z := range zones {
		out[i] = z
	}
	return out
}
