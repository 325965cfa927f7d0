package webhooks

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestDNSRecordNameAndTypeAtTheirFields: a bad type or name is refused at
// spec.type or spec.name with a sentence about it, and nothing is said
// about the values, which are only bad because of it (issue 44 item 7:
// they were refused at spec.values[0] as bad rdata). With and without the
// zone: the one call admits a record whose zone does not exist yet.
func TestDNSRecordNameAndTypeAtTheirFields(t *testing.T) {
	zone := &v1alpha1.BindZone{ObjectMeta: objectMeta("example"), Spec: v1alpha1.BindZoneSpec{
		ClusterRef: ref("dns"), ZoneName: "example.com", Type: v1alpha1.ZonePrimary,
	}}
	long := strings.Repeat("a", 64)
	for _, tc := range []struct {
		desc        string
		name        string
		typ         v1alpha1.RecordType
		values      []string
		field, want string
		errType     field.ErrorType
	}{
		// Types.
		{"ANY", "www", "ANY", []string{"192.0.2.1"}, "spec.type", "ANY is a query type, not a record type", field.ErrorTypeInvalid},
		{"any, lowercase", "www", "any", []string{"192.0.2.1"}, "spec.type", "ANY is a query type, not a record type", field.ErrorTypeInvalid},
		{"SOA", "@", "SOA", []string{"ns1.example.com. hostmaster.example.com. 1 300 60 1209600 60"}, "spec.type", "the SOA record belongs to the zone: set it in the BindZone's spec.soa", field.ErrorTypeInvalid},
		{"unknown type", "www", "FOO", []string{"192.0.2.1"}, "spec.type", `record type "FOO" is not supported; use one of A, AAAA, CNAME`, field.ErrorTypeInvalid},
		{"a transfer", "www", "AXFR", []string{"x"}, "spec.type", "AXFR is not a record type a zone holds", field.ErrorTypeInvalid},
		{"DNSSEC data", "www", "RRSIG", []string{"x"}, "spec.type", "made by BIND when the zone is signed", field.ErrorTypeInvalid},
		{"no type", "www", "", []string{"192.0.2.1"}, "spec.type", "name the record type, one of A, AAAA", field.ErrorTypeRequired},
		// Names.
		{"two dots", "a..b", "A", []string{"192.0.2.1"}, "spec.name", `"a..b" has an empty label`, field.ErrorTypeInvalid},
		{"leading dot", ".www", "A", []string{"192.0.2.1"}, "spec.name", `".www" has an empty label`, field.ErrorTypeInvalid},
		{"a space", "my host", "A", []string{"192.0.2.1"}, "spec.name", `"my host" holds a space, which a record name cannot`, field.ErrorTypeInvalid},
		{"a 64-octet label", long + ".x", "A", []string{"192.0.2.1"}, "spec.name", "label \"" + long + "\" is 64 octets long; a DNS label holds at most 63", field.ErrorTypeInvalid},
		{"a semicolon", "www;", "TXT", []string{"x"}, "spec.name", `"www;" holds ";", which a record name cannot`, field.ErrorTypeInvalid},
		{"non-ASCII", "café", "A", []string{"192.0.2.1"}, "spec.name", "holds a non-ASCII character", field.ErrorTypeInvalid},
		{"wildcard not leftmost", "www.*", "A", []string{"192.0.2.1"}, "spec.name", "a wildcard is written *.name", field.ErrorTypeInvalid},
		{"leading hyphen", "-www", "A", []string{"192.0.2.1"}, "spec.name", `label "-www" starts or ends with a hyphen`, field.ErrorTypeInvalid},
		{"the root", ".", "A", []string{"192.0.2.1"}, "spec.name", "use @ for the zone apex", field.ErrorTypeInvalid},
		{"too long in the zone", strings.TrimSuffix(strings.Repeat(strings.Repeat("a", 60)+".", 4), "."), "A", []string{"192.0.2.1"}, "spec.name", "more than the 253 a domain name may hold", field.ErrorTypeInvalid},
	} {
		for _, withZone := range []bool{true, false} {
			desc := tc.desc
			if !withZone {
				desc += ", no zone yet"
				if tc.desc == "too long in the zone" {
					continue // 244 octets fit without the zone's name
				}
			}
			t.Run(desc, func(t *testing.T) {
				g := NewWithT(t)
				var objs []client.Object
				if withZone {
					objs = append(objs, zone)
				}
				w := testWebhooks(t, objs...).record
				r := &v1alpha1.DNSRecord{ObjectMeta: objectMeta("r"), Spec: v1alpha1.DNSRecordSpec{
					ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: v1alpha1.RecordName(tc.name), Type: tc.typ, Values: tc.values}}
				g.Expect(w.Default(context.Background(), r)).To(Succeed())
				_, err := w.ValidateCreate(context.Background(), r)
				got := causes(t, err)
				g.Expect(got).To(HaveLen(1), "one refusal, at the field at fault: %v", got)
				g.Expect(got[0].Field).To(Equal(tc.field))
				g.Expect(got[0].Type).To(Equal(tc.errType))
				g.Expect(got[0].Detail).To(ContainSubstring(tc.want))
			})
		}
	}
	// Still accepted: what the CRD's pattern and enum take.
	for _, name := range []string{"@", "*", "*.apps", "_sip._tcp", "www", "WWW.example.com.", "a-b_c", strings.Repeat("a", 63)} {
		t.Run("accepted "+name, func(t *testing.T) {
			w := testWebhooks(t, zone).record
			r := &v1alpha1.DNSRecord{ObjectMeta: objectMeta("r"), Spec: v1alpha1.DNSRecordSpec{
				ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: v1alpha1.RecordName(name), Type: "TXT", Values: []string{"hello"}}}
			NewWithT(t).Expect(w.Default(context.Background(), r)).To(Succeed())
			_, err := w.ValidateCreate(context.Background(), r)
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
		})
	}
	// Bad data at a good name and type is still the values'.
	t.Run("bad data", func(t *testing.T) {
		w := testWebhooks(t, zone).record
		r := &v1alpha1.DNSRecord{ObjectMeta: objectMeta("r"), Spec: v1alpha1.DNSRecordSpec{
			ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "www", Type: "A", Values: []string{"2001:db8::1"}}}
		NewWithT(t).Expect(w.Default(context.Background(), r)).To(Succeed())
		_, err := w.ValidateCreate(context.Background(), r)
		got := causes(t, err)
		NewWithT(t).Expect(got).To(HaveLen(1))
		NewWithT(t).Expect(got[0].Field).To(Equal("spec.values[0]"))
	})
}

// TestCNAMERuleOnlyBetweenAdmittedRecords: a DNSRecord of another
// namespace that the zone does not admit (or, before the zone exists,
// any of another namespace than the zone's) never holds a name against
// the zone's own records; one it admits does, and is not named to the
// requester.
func TestCNAMERuleOnlyBetweenAdmittedRecords(t *testing.T) {
	in := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	closed := &v1alpha1.BindZone{ObjectMeta: in("ns", "example"), Spec: v1alpha1.BindZoneSpec{
		ClusterRef: ref("dns"), ZoneName: "example.com", Type: v1alpha1.ZonePrimary,
	}}
	open := closed.DeepCopy()
	open.Spec.AllowedRecords = &v1alpha1.AllowedRecords{Namespaces: metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}}
	squatter := &v1alpha1.DNSRecord{ObjectMeta: in("team-b", "grab"), Spec: v1alpha1.DNSRecordSpec{
		ZoneRef: v1alpha1.ZoneReference{Namespace: "ns", Name: "example"}, Name: "www", Type: "CNAME", Values: []string{"evil.example.net."}}}
	teamB := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-b", Labels: map[string]string{"team": "b"}}}
	owners := &v1alpha1.DNSRecord{ObjectMeta: in("ns", "www"), Spec: v1alpha1.DNSRecordSpec{
		ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "www", Type: "A", Values: []string{"192.0.2.1"}}}
	for _, tc := range []struct {
		desc string
		zone *v1alpha1.BindZone // nil: not created yet
		want string             // "" for admitted
	}{
		{"the zone admits no other namespace", closed, ""},
		{"the zone does not exist yet", nil, ""},
		{"the zone admits the other namespace", open,
			`Invalid value: "A": a DNSRecord in another namespace is a CNAME at www, and a CNAME cannot coexist with other records at a name; put the A record at the CNAME's target`},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			g := NewWithT(t)
			objs := []client.Object{squatter, teamB, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}}
			if tc.zone != nil {
				objs = append(objs, tc.zone)
			}
			w := testWebhooks(t, objs...).record
			r := owners.DeepCopy()
			g.Expect(w.Default(context.Background(), r)).To(Succeed())
			_, err := w.ValidateCreate(context.Background(), r)
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(causes(t, err)).To(Equal(field.ErrorList{{Type: field.ErrorTypeInvalid, Field: "spec.type", Detail: tc.want}}))
			g.Expect(err.Error()).NotTo(ContainSubstring("grab"))
			g.Expect(err.Error()).NotTo(ContainSubstring("team-b"))
		})
	}
}
