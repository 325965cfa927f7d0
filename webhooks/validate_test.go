package webhooks

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Tables of the pure validators, each case with the exact errors it must
// produce (nil: valid). Inputs are what the validating webhook sees: the
// mutating webhook's output. Rules the CRD enforces are not repeated here;
// test/cel holds them.

var spec = field.NewPath("spec")

// expectErrors compares exactly; nil means no error at all.
func expectErrors(t *testing.T, got, want field.ErrorList) {
	t.Helper()
	if want == nil {
		NewWithT(t).Expect(got).To(BeEmpty())
		return
	}
	NewWithT(t).Expect(got).To(Equal(want))
}

func TestValidateBindClusterSpec(t *testing.T) {
	defaulted := func(mut func(*v1alpha1.BindClusterSpec)) *v1alpha1.BindClusterSpec {
		c := &v1alpha1.BindCluster{}
		if mut != nil {
			mut(&c.Spec)
		}
		c.SetDefaults()
		return &c.Spec
	}
	for _, tc := range []struct {
		name string
		in   *v1alpha1.BindClusterSpec
		want field.ErrorList
	}{
		{"valid defaults", defaulted(nil), nil},
		{"valid resolver", defaulted(func(s *v1alpha1.BindClusterSpec) {
			s.Mode = v1alpha1.ModeResolver
			s.AllowQuery = []v1alpha1.AddressMatchElement{{Builtin: v1alpha1.BuiltinLocalnets}, {ACLRef: "office"}}
			s.Recursion = &v1alpha1.RecursionSpec{
				AllowRecursion: []v1alpha1.AddressMatchElement{{Address: "192.0.2.0/24"}},
				Forwarders:     []v1alpha1.Forwarder{{Address: "192.0.2.53"}, {Address: "192.0.2.53", Port: ptr.To[int32](5353)}},
			}
			s.PodAnnotations = map[string]string{"prometheus.io/scrape": "true"}
			s.QueryService.Labels = map[string]string{"team": "dns"}
		}), nil},
		{"reserved pod annotation", defaulted(func(s *v1alpha1.BindClusterSpec) {
			s.PodAnnotations = map[string]string{v1alpha1.AnnotationConfigHash: "x", "team": "dns"}
		}), field.ErrorList{
			field.Invalid(spec.Child("podAnnotations").Key(v1alpha1.AnnotationConfigHash), v1alpha1.AnnotationConfigHash,
				"annotations under bind.unkin.net/ are reserved for the operator (e.g. bind.unkin.net/config-hash); use another prefix"),
		}},
		{"reserved Service labels", defaulted(func(s *v1alpha1.BindClusterSpec) {
			s.PrimaryService.Labels = map[string]string{v1alpha1.LabelCluster: "x"}
			s.QueryService.Labels = map[string]string{v1alpha1.LabelManagedBy: "helm"}
		}), field.ErrorList{
			field.Invalid(spec.Child("primaryService", "labels").Key(v1alpha1.LabelCluster), v1alpha1.LabelCluster,
				"this label is reserved for the operator, which selects its Services by it; use another key"),
			field.Invalid(spec.Child("queryService", "labels").Key(v1alpha1.LabelManagedBy), v1alpha1.LabelManagedBy,
				"this label is reserved for the operator, which selects its Services by it; use another key"),
		}},
		{"valid node selector", defaulted(func(s *v1alpha1.BindClusterSpec) {
			s.NodeSelector = map[string]string{"kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "eu-west-1a", "dns": "", "node.example.com/role.v2": "a_b-c.d"}
		}), nil},
		{"node selector keys and values", defaulted(func(s *v1alpha1.BindClusterSpec) {
			s.NodeSelector = map[string]string{"has space": "x", "example.com/": "y", "-lead": "z", "ok/key": "bad value", "tier": strings.Repeat("v", 64), "a/b/c": "-x"}
		}), field.ErrorList{
			field.Invalid(spec.Child("nodeSelector").Key("-lead"), "-lead", `"-lead" is not a label key (name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')); use the key of a node label, e.g. kubernetes.io/os or topology.kubernetes.io/zone`),
			field.Invalid(spec.Child("nodeSelector").Key("a/b/c"), "a/b/c", `"a/b/c" is not a label key (a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')); use the key of a node label, e.g. kubernetes.io/os or topology.kubernetes.io/zone`),
			field.Invalid(spec.Child("nodeSelector").Key("a/b/c"), "-x", `"-x" is not a label value (a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')); use the value of a node label, e.g. linux`),
			field.Invalid(spec.Child("nodeSelector").Key("example.com/"), "example.com/", `"example.com/" is not a label key (name part must be non-empty; name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')); use the key of a node label, e.g. kubernetes.io/os or topology.kubernetes.io/zone`),
			field.Invalid(spec.Child("nodeSelector").Key("has space"), "has space", `"has space" is not a label key (name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')); use the key of a node label, e.g. kubernetes.io/os or topology.kubernetes.io/zone`),
			field.Invalid(spec.Child("nodeSelector").Key("ok/key"), "bad value", `"bad value" is not a label value (a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')); use the value of a node label, e.g. linux`),
			field.Invalid(spec.Child("nodeSelector").Key("tier"), strings.Repeat("v", 64), `"`+strings.Repeat("v", 64)+`" is not a label value (must be no more than 63 bytes); use the value of a node label, e.g. linux`),
		}},
		{"storage size zero", defaulted(func(s *v1alpha1.BindClusterSpec) {
			s.Storage = &v1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("0"))}
		}), field.ErrorList{
			field.Invalid(spec.Child("storage", "size"), "0", "must be a positive quantity such as 1Gi"),
		}},
		{"emptyDir size limit negative", defaulted(func(s *v1alpha1.BindClusterSpec) {
			s.Storage = &v1alpha1.StorageSpec{Enabled: ptr.To(false), Medium: v1alpha1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("-1Mi"))}
		}), field.ErrorList{
			field.Invalid(spec.Child("storage", "sizeLimit"), "-1Mi", "must be a positive quantity such as 256Mi"),
		}},
		{"address lists", defaulted(func(s *v1alpha1.BindClusterSpec) {
			s.Mode = v1alpha1.ModeResolver
			s.AllowQuery = []v1alpha1.AddressMatchElement{{Address: "10.0.0.1/8"}}
			s.Recursion = &v1alpha1.RecursionSpec{AllowRecursion: []v1alpha1.AddressMatchElement{{Builtin: v1alpha1.BuiltinAny}, {Builtin: v1alpha1.BuiltinAny}}}
		}), field.ErrorList{
			field.Invalid(spec.Child("allowQuery").Index(0).Child("address"), "10.0.0.1/8", "the prefix has host bits set; BIND refuses it, write 10.0.0.0/8"),
			field.Duplicate(spec.Child("recursion", "allowRecursion").Index(1), "any"),
		}},
		{"the same forwarder twice", defaulted(func(s *v1alpha1.BindClusterSpec) {
			s.Mode = v1alpha1.ModeResolver
			s.Recursion = &v1alpha1.RecursionSpec{Forwarders: []v1alpha1.Forwarder{{Address: "2001:db8::1"}, {Address: "2001:DB8:0::1", Port: ptr.To[int32](53)}}}
		}), field.ErrorList{
			field.Duplicate(spec.Child("recursion", "forwarders").Index(1), "2001:db8::1#53"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, ValidateBindClusterSpec(tc.in, spec), tc.want) })
	}
}

func TestMemoryVolumeWarnings(t *testing.T) {
	memory := func(sizeLimit, namedLimit string) *v1alpha1.BindClusterSpec {
		s := &v1alpha1.BindClusterSpec{Storage: &v1alpha1.StorageSpec{Enabled: ptr.To(false), Medium: v1alpha1.StorageMediumMemory}}
		if sizeLimit != "" {
			s.Storage.SizeLimit = ptr.To(resource.MustParse(sizeLimit))
		}
		if namedLimit != "" {
			s.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(namedLimit)}
		}
		return s
	}
	for _, tc := range []struct {
		name string
		spec *v1alpha1.BindClusterSpec
		want admission.Warnings
	}{
		{"claims", &v1alpha1.BindClusterSpec{}, nil},
		{"disk", &v1alpha1.BindClusterSpec{Storage: &v1alpha1.StorageSpec{Enabled: ptr.To(false), Medium: v1alpha1.StorageMediumDisk}}, nil},
		{"memory below named's limit", memory("64Mi", "256Mi"), nil},
		{"memory with a limit and named without one", memory("64Mi", ""), nil},
		{"memory without a size limit", memory("", "256Mi"), admission.Warnings{
			"spec.storage.sizeLimit: a Memory data volume without a size limit may grow to the node's memory, and its files count against named's; set sizeLimit below named's memory limit (spec.resources.limits.memory)",
		}},
		{"memory as large as named's limit", memory("256Mi", "256Mi"), admission.Warnings{
			"spec.storage.sizeLimit: 256Mi is not below named's memory limit 256Mi, and the volume's files count against named's memory, so a full volume gets named OOM-killed; set sizeLimit below the limit, leaving room for named itself",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(memoryVolumeWarnings(tc.spec)).To(Equal(tc.want))
		})
	}
}

func TestValidateBindZoneSpec(t *testing.T) {
	zone := func(mut func(*v1alpha1.BindZoneSpec)) *v1alpha1.BindZoneSpec {
		z := &v1alpha1.BindZone{Spec: v1alpha1.BindZoneSpec{ClusterRef: ref("dns"), ZoneName: "example.com"}}
		if mut != nil {
			mut(&z.Spec)
		}
		z.SetDefaults()
		return &z.Spec
	}
	rs := func(name, typ string, values ...string) v1alpha1.RecordSet {
		return v1alpha1.RecordSet{Name: v1alpha1.RecordName(name), Type: v1alpha1.RecordType(typ), Values: values}
	}
	records := spec.Child("records")
	for _, tc := range []struct {
		name string
		in   *v1alpha1.BindZoneSpec
		want field.ErrorList
	}{
		{"valid empty primary", zone(nil), nil},
		{"valid records", zone(func(s *v1alpha1.BindZoneSpec) {
			s.Records = []v1alpha1.RecordSet{rs("@", "MX", "10 mail.example.com."), rs("mail", "A", "192.0.2.1"), rs("www", "CNAME", "mail.example.com.")}
		}), nil},
		{"valid in-zone MNAME with its address", zone(func(s *v1alpha1.BindZoneSpec) {
			s.SOA = &v1alpha1.SOASpec{PrimaryNameServer: "ns1.example.com"}
			s.Records = []v1alpha1.RecordSet{rs("ns1", "AAAA", "2001:db8::53")}
		}), nil},
		{"valid MNAME outside the zone", zone(func(s *v1alpha1.BindZoneSpec) { s.SOA = &v1alpha1.SOASpec{PrimaryNameServer: "ns.example.net"} }), nil},
		{"valid secondary", zone(func(s *v1alpha1.BindZoneSpec) {
			s.Type = v1alpha1.ZoneSecondary
			s.Primaries = []v1alpha1.RemoteServer{{Address: "192.0.2.1"}, {Address: "192.0.2.1", Port: ptr.To[int32](5353)}}
			s.AllowTransfer = []v1alpha1.AddressMatchElement{{KeyRef: "xfr"}}
		}), nil},
		{"record data that does not parse", zone(func(s *v1alpha1.BindZoneSpec) {
			s.Records = []v1alpha1.RecordSet{rs("a", "A", "::1"), rs("mx", "MX", "mail.example.com.")}
		}), field.ErrorList{
			field.Invalid(records.Index(0).Child("values").Index(0), "::1", `not valid A data: bad A A: "::1" (record a A)`),
			field.Invalid(records.Index(1).Child("values").Index(0), "mail.example.com.", `not valid MX data: bad MX Pref: "mail.example.com." (record mx MX)`),
		}},
		{"record name outside the zone", zone(func(s *v1alpha1.BindZoneSpec) {
			s.Records = []v1alpha1.RecordSet{rs("www.example.org.", "A", "192.0.2.1")}
		}), field.ErrorList{
			field.Invalid(records.Index(0).Child("name"), "www.example.org.",
				`name "www.example.org." is outside the zone "example.com"; use a name relative to the zone or an absolute name ending in .example.com.`),
		}},
		{"record sets that conflict", zone(func(s *v1alpha1.BindZoneSpec) {
			s.Records = []v1alpha1.RecordSet{rs("www", "A", "192.0.2.1"), rs("www", "CNAME", "x.example.org.")}
		}), field.ErrorList{
			field.Invalid(records.Index(1).Child("name"), "www", "a CNAME cannot coexist with other records at the same name (found A); remove the CNAME or the other record sets"),
		}},
		{"in-zone MNAME without an address", zone(func(s *v1alpha1.BindZoneSpec) {
			s.SOA = &v1alpha1.SOASpec{PrimaryNameServer: "ns1.example.com"}
			s.Records = []v1alpha1.RecordSet{rs("ns1", "TXT", `"not an address"`)}
		}), field.ErrorList{
			field.Invalid(spec.Child("soa", "primaryNameServer"), "ns1.example.com",
				`lies inside the zone, so BIND needs its address before it loads the zone: add an A or AAAA record set named "ns1" to spec.records, name a server outside the zone, or leave it unset for the cluster's query Service`),
		}},
		{"address lists and servers", zone(func(s *v1alpha1.BindZoneSpec) {
			s.Type = v1alpha1.ZoneSecondary
			s.AllowTransfer = []v1alpha1.AddressMatchElement{{Address: "192.0.2.1/24"}}
			s.AllowQuery = []v1alpha1.AddressMatchElement{{KeyRef: "k"}, {KeyRef: "k", Negate: true}, {KeyRef: "k"}}
			s.Primaries = []v1alpha1.RemoteServer{{Address: "192.0.2.1"}, {Address: "192.0.2.1", KeyRef: &v1alpha1.LocalObjectReference{Name: "xfr"}}}
		}), field.ErrorList{
			field.Invalid(spec.Child("allowTransfer").Index(0).Child("address"), "192.0.2.1/24", "the prefix has host bits set; BIND refuses it, write 192.0.2.0/24"),
			field.Duplicate(spec.Child("allowQuery").Index(2), "k"),
			field.Duplicate(spec.Child("primaries").Index(1), "192.0.2.1#53"),
		}},
		{"the same forwarder twice", zone(func(s *v1alpha1.BindZoneSpec) {
			s.Type = v1alpha1.ZoneForward
			s.Forwarders = []v1alpha1.Forwarder{{Address: "192.0.2.53", Port: ptr.To[int32](53)}, {Address: "192.0.2.53"}}
		}), field.ErrorList{
			field.Duplicate(spec.Child("forwarders").Index(1), "192.0.2.53#53"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, ValidateBindZoneSpec(tc.in, spec), tc.want) })
	}
}

func TestValidateDNSRecordSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   v1alpha1.DNSRecordSpec
		zone string
		want field.ErrorList
	}{
		{"valid", v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "z"}, Name: "www", Type: "A", Values: []string{"192.0.2.1"}}, "example.com", nil},
		{"valid absolute name in the zone", v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "z"}, Name: "www.example.com.", Type: "A", Values: []string{"192.0.2.1"}}, "example.com", nil},
		{"valid without the zone", v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "z"}, Name: "www.example.com.", Type: "MX", Values: []string{"10 mail"}}, "", nil},
		{"data that does not parse", v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "z"}, Name: "api", Type: "A", Values: []string{"not-an-ip"}}, "example.com", field.ErrorList{
			field.Invalid(spec.Child("values").Index(0), "not-an-ip", `not valid A data: bad A A: "not-an-ip" (record api A)`),
		}},
		{"data that does not parse without the zone", v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "z"}, Name: "api", Type: "MX", Values: []string{"mail"}}, "", field.ErrorList{
			field.Invalid(spec.Child("values").Index(0), "mail", `not valid MX data: bad MX Pref: "mail" (record api MX)`),
		}},
		{"name outside the zone", v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "z"}, Name: "api.example.org.", Type: "A", Values: []string{"192.0.2.1"}}, "example.com", field.ErrorList{
			field.Invalid(spec.Child("name"), "api.example.org.",
				`name "api.example.org." is outside the zone "example.com"; use a name relative to the zone or an absolute name ending in .example.com.`),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, ValidateDNSRecordSpec(&tc.in, tc.zone, spec), tc.want) })
	}
}

func TestValidateBindTSIGKeySpec(t *testing.T) {
	labels, annotations := spec.Child("secretTemplate", "labels"), spec.Child("secretTemplate", "annotations")
	var badAnnotation field.ErrorList
	for _, m := range validation.IsQualifiedName("bad key!") {
		badAnnotation = append(badAnnotation, field.Invalid(annotations.Key("bad key!"), "bad key!", "annotation key: "+m))
	}
	for _, tc := range []struct {
		name string
		in   v1alpha1.BindTSIGKeySpec
		want field.ErrorList
	}{
		{"valid", v1alpha1.BindTSIGKeySpec{KeyName: "xfr", Algorithm: v1alpha1.TSIGHMACSHA256, SecretName: "xfr-tsig"}, nil},
		{"valid template", v1alpha1.BindTSIGKeySpec{KeyName: "xfr", SecretTemplate: &v1alpha1.SecretTemplate{
			Labels: map[string]string{"team": "dns"}, Annotations: map[string]string{"reflector.v1.k8s.emberstack.com/reflection-allowed": "true"},
		}}, nil},
		{"BIND's control key name", v1alpha1.BindTSIGKeySpec{KeyName: "rndc-key"}, field.ErrorList{
			field.Invalid(spec.Child("keyName"), v1alpha1.DomainName("rndc-key"), `"rndc-key" is reserved (it is BIND's own control-channel key); choose another keyName`),
		}},
		{"the operator's control key name", v1alpha1.BindTSIGKeySpec{KeyName: v1alpha1.ControlKeyName}, field.ErrorList{
			field.Invalid(spec.Child("keyName"), v1alpha1.DomainName(v1alpha1.ControlKeyName), `"bind-operator-control" is reserved (it is the operator's control-channel key); choose another keyName`),
		}},
		{"template labels", v1alpha1.BindTSIGKeySpec{KeyName: "xfr", SecretTemplate: &v1alpha1.SecretTemplate{
			Labels: map[string]string{"bind.unkin.net/x": "y", "team": "has space"},
		}}, field.ErrorList{
			field.Invalid(labels.Key("bind.unkin.net/x"), "bind.unkin.net/x", "this label is reserved for the operator, whose own labels always win; use another key"),
			field.Invalid(labels.Key("team"), "has space", "label value: "+validation.IsValidLabelValue("has space")[0]),
		}},
		{"template annotation key", v1alpha1.BindTSIGKeySpec{KeyName: "xfr", SecretTemplate: &v1alpha1.SecretTemplate{
			Annotations: map[string]string{"bad key!": "y"},
		}}, badAnnotation},
	} {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, ValidateBindTSIGKeySpec(&tc.in, spec), tc.want) })
	}
}

func TestValidateBindViewSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   v1alpha1.BindViewSpec
		want field.ErrorList
	}{
		{"valid", v1alpha1.BindViewSpec{ClusterRef: ref("res"), MatchClients: []v1alpha1.AddressMatchElement{{Address: "2001:db8::/32"}},
			Recursion: ptr.To(true), AllowRecursion: []v1alpha1.AddressMatchElement{{Builtin: v1alpha1.BuiltinLocalnets}},
			Forwarders: []v1alpha1.Forwarder{{Address: "192.0.2.53"}}}, nil},
		{"address lists and forwarders", v1alpha1.BindViewSpec{ClusterRef: ref("res"),
			MatchClients:      []v1alpha1.AddressMatchElement{{Address: "2001:db8::1/32"}},
			MatchDestinations: []v1alpha1.AddressMatchElement{{Address: "192.0.2.1"}, {Address: "192.0.2.1"}},
			Recursion:         ptr.To(true),
			Forwarders:        []v1alpha1.Forwarder{{Address: "192.0.2.53"}, {Address: "192.0.2.53"}},
		}, field.ErrorList{
			field.Invalid(spec.Child("matchClients").Index(0).Child("address"), "2001:db8::1/32", "the prefix has host bits set; BIND refuses it, write 2001:db8::/32"),
			field.Duplicate(spec.Child("matchDestinations").Index(1), "192.0.2.1"),
			field.Duplicate(spec.Child("forwarders").Index(1), "192.0.2.53#53"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, ValidateBindViewSpec(&tc.in, spec), tc.want) })
	}
}

func TestValidateBindACLSpec(t *testing.T) {
	entries := spec.Child("entries")
	for _, tc := range []struct {
		name string
		in   []v1alpha1.AddressMatchElement
		want field.ErrorList
	}{
		{"valid", []v1alpha1.AddressMatchElement{{Address: "192.0.2.1", Negate: true}, {Address: "192.0.2.0/24"}, {ACLRef: "other"}, {KeyRef: "k"}}, nil},
		{"includes itself", []v1alpha1.AddressMatchElement{{ACLRef: "me"}}, field.ErrorList{
			field.Invalid(entries.Index(0).Child("aclRef"), "me", "an ACL cannot include itself; list the addresses instead"),
		}},
		{"host bits and duplicates", []v1alpha1.AddressMatchElement{{Address: "198.18.0.1/15"}, {Address: "192.0.2.1"}, {Address: "192.0.2.1"}}, field.ErrorList{
			field.Invalid(entries.Index(0).Child("address"), "198.18.0.1/15", "the prefix has host bits set; BIND refuses it, write 198.18.0.0/15"),
			field.Duplicate(entries.Index(2), "192.0.2.1"),
		}},
		{"negation is another element", []v1alpha1.AddressMatchElement{{Address: "192.0.2.1", Negate: true}, {Address: "192.0.2.1"}, {Address: "192.0.2.1", Negate: true}}, field.ErrorList{
			field.Duplicate(entries.Index(2), "!192.0.2.1"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrors(t, ValidateBindACLSpec("me", &v1alpha1.BindACLSpec{Entries: tc.in}, spec), tc.want)
		})
	}
}

func TestFindCycle(t *testing.T) {
	for _, tc := range []struct {
		name  string
		graph map[string][]string
		want  []string
	}{
		{"no references", map[string][]string{"a": nil}, nil},
		{"a chain", map[string][]string{"a": {"b"}, "b": {"c"}}, nil},
		{"a loop through others", map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}}, []string{"a", "b", "c", "a"}},
		{"a loop that does not pass a", map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"b"}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) { NewWithT(t).Expect(findCycle(tc.graph, "a")).To(Equal(tc.want)) })
	}
}

func TestValidateBindCatalogZoneSpec(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []v1alpha1.RemoteServer
		want field.ErrorList
	}{
		{"valid without primaries", nil, nil},
		{"valid primaries", []v1alpha1.RemoteServer{{Address: "192.0.2.1"}, {Address: "192.0.2.2"}, {Address: "192.0.2.1", Port: ptr.To[int32](5353)}}, nil},
		{"the same primary twice", []v1alpha1.RemoteServer{{Address: "192.0.2.1"}, {Address: "192.0.2.1", Port: ptr.To[int32](53)}}, field.ErrorList{
			field.Duplicate(spec.Child("defaultPrimaries").Index(1), "192.0.2.1#53"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &v1alpha1.BindCatalogZoneSpec{ClusterRef: ref("dns"), ZoneName: "catalog.example.internal", TransferKeyRef: ref("xfr"), DefaultPrimaries: tc.in}
			expectErrors(t, ValidateBindCatalogZoneSpec(in, spec), tc.want)
		})
	}
}

func TestValidateBindPolicySpec(t *testing.T) {
	rules := spec.Child("rules")
	long := strings.Repeat("a.", 126) + "aa" // 254 characters
	for _, tc := range []struct {
		name string
		in   []v1alpha1.RPZRule
		want field.ErrorList
	}{
		{"valid", []v1alpha1.RPZRule{
			{Match: "ads.example", Trigger: v1alpha1.TriggerQName, Action: v1alpha1.ActionNXDOMAIN},
			{Match: "*.ads.example", Trigger: v1alpha1.TriggerQName, Action: v1alpha1.ActionRedirect, RedirectTo: "sinkhole.example.internal"},
			{Match: "ads.example", Trigger: v1alpha1.TriggerNSDName, Action: v1alpha1.ActionDrop},
			{Match: "192.0.2.0/24", Trigger: v1alpha1.TriggerClientIP, Action: v1alpha1.ActionDrop},
			{Match: "2001:db8::1", Trigger: v1alpha1.TriggerResponseIP, Action: v1alpha1.ActionNODATA},
		}, nil},
		{"prefix with host bits", []v1alpha1.RPZRule{{Match: "192.0.2.1/24", Trigger: v1alpha1.TriggerNSIP, Action: v1alpha1.ActionDrop}}, field.ErrorList{
			field.Invalid(rules.Index(0).Child("match"), "192.0.2.1/24", "the prefix has host bits set; write 192.0.2.0/24"),
		}},
		{"name too long", []v1alpha1.RPZRule{{Match: "*." + long, Trigger: v1alpha1.TriggerQName, Action: v1alpha1.ActionDrop}}, field.ErrorList{
			field.Invalid(rules.Index(0).Child("match"), long,
				"must be a domain name such as example.com: labels of letters, digits, hyphens and underscores, at most 63 characters each and 253 in all"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := &v1alpha1.BindPolicySpec{ClusterRef: ref("res"), ZoneName: "rpz.example.internal", Rules: tc.in}
			expectErrors(t, ValidateBindPolicySpec(in, spec), tc.want)
		})
	}
}

func TestValidateBindDNSSECPolicySpec(t *testing.T) {
	keys := func(lifetime string) []v1alpha1.DNSSECKey {
		return []v1alpha1.DNSSECKey{{Role: v1alpha1.RoleCSK, Algorithm: v1alpha1.DNSSECECDSAP256SHA256, Lifetime: lifetime}}
	}
	for _, tc := range []struct {
		name string
		in   v1alpha1.BindDNSSECPolicySpec
		want field.ErrorList
	}{
		{"valid defaults", v1alpha1.BindDNSSECPolicySpec{Keys: keys("unlimited")}, nil},
		{"valid timings", v1alpha1.BindDNSSECPolicySpec{Keys: keys("P90D"), SignaturesRefresh: "5d", SignaturesValidity: "P14D", SignaturesValidityDNSKEY: "14d",
			DNSKEYTTL: "1h", MaxZoneTTL: "86400", PurgeKeys: "P90D", ParentDSTTL: "PT1H"}, nil},
		{"signatures refreshed after they expire", v1alpha1.BindDNSSECPolicySpec{Keys: keys(""), SignaturesRefresh: "P20D", SignaturesValidity: "14d"}, field.ErrorList{
			field.Invalid(spec.Child("signaturesRefresh"), v1alpha1.BINDDuration("P20D"), "must be shorter than signaturesValidity (14d), or signatures expire before they are refreshed"),
		}},
		{"DNSKEY signatures refreshed after they expire", v1alpha1.BindDNSSECPolicySpec{Keys: keys(""), SignaturesRefresh: "5d", SignaturesValidityDNSKEY: "4d"}, field.ErrorList{
			field.Invalid(spec.Child("signaturesRefresh"), v1alpha1.BINDDuration("5d"), "must be shorter than signaturesValidityDNSKEY (4d), or DNSKEY signatures expire before they are refreshed"),
		}},
		// Whether a short lifetime fits one rollover is named-checkconf's
		// call (ConfigChecker.CheckDNSSECPolicy), not this function's.
		{"short key lifetime", v1alpha1.BindDNSSECPolicySpec{Keys: keys("PT5M")}, nil},
		{"numbers too large", v1alpha1.BindDNSSECPolicySpec{Keys: keys("P99999999999D"), DNSKEYTTL: "99999999999"}, field.ErrorList{
			field.Invalid(spec.Child("dnskeyTTL"), v1alpha1.BINDDuration("99999999999"), "number too large in duration; use at most 10 digits"),
			field.Invalid(spec.Child("keys").Index(0).Child("lifetime"), "P99999999999D", "number too large in duration; use at most 10 digits"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { expectErrors(t, ValidateBindDNSSECPolicySpec(&tc.in, spec), tc.want) })
	}
}

func TestParseBINDDuration(t *testing.T) {
	day := 24 * time.Hour
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{"P90D", 90 * day, ""},
		{"PT1H", time.Hour, ""},
		{"P1Y2M", 365*day + 60*day, ""},
		{"P1W", 7 * day, ""},
		{"1h30m", 90 * time.Minute, ""},
		{"3600", time.Hour, ""},
		{"1w", 7 * day, ""},
		{"P", 0, "not a duration; write ISO 8601 such as P90D or PT1H, or BIND's style such as 90d or 3600"},
		{"P1DT", 0, "not a duration; write ISO 8601 such as P90D or PT1H, or BIND's style such as 90d or 3600"},
		{"ninety days", 0, "not a duration; write ISO 8601 such as P90D or PT1H, or BIND's style such as 90d or 3600"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			g := NewWithT(t)
			d, err := ParseBINDDuration(tc.in)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(tc.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(d).To(Equal(tc.want))
		})
	}
}
