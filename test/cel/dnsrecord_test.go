package cel

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func baseRecord() *v1.DNSRecord {
	return &v1.DNSRecord{Spec: v1.DNSRecordSpec{
		ZoneRef: v1.ZoneReference{Name: "example-com"},
		Name:    "api",
		Type:    "A",
		Values:  []string{"192.0.2.80"},
	}}
}

func TestDNSRecordCreate(t *testing.T) {
	runCreateCases(t, baseRecord, []createCase[*v1.DNSRecord]{
		{desc: "valid"},
		{desc: "valid wildcard", mutate: func(r *v1.DNSRecord) { r.Spec.Name = "*.apps" }},
		{desc: "valid service name", mutate: func(r *v1.DNSRecord) {
			r.Spec.Name, r.Spec.Type, r.Spec.Values = "_sip._tcp", "SRV", []string{"10 60 5060 sip.example.com."}
		}},
		{desc: "missing zoneRef", mutate: func(r *v1.DNSRecord) { r.Spec.ZoneRef.Name = "" },
			wantErrors: []string{"spec.zoneRef.name"}},
		{desc: "unknown type", mutate: func(r *v1.DNSRecord) { r.Spec.Type = "ANY" },
			wantErrors: []string{"spec.type", `Unsupported value: "ANY"`}},
		{desc: "SOA type", mutate: func(r *v1.DNSRecord) { r.Spec.Type = "SOA" },
			wantErrors: []string{"spec.type", `Unsupported value: "SOA"`}},
		{desc: "type nobody knows", mutate: func(r *v1.DNSRecord) { r.Spec.Type = "FOO" },
			wantErrors: []string{"spec.type", `Unsupported value: "FOO"`}},
		{desc: "name with an empty label", mutate: func(r *v1.DNSRecord) { r.Spec.Name = "a..b" },
			wantErrors: []string{"spec.name", "should match"}},
		{desc: "name with a space", mutate: func(r *v1.DNSRecord) { r.Spec.Name = "my host" },
			wantErrors: []string{"spec.name", "should match"}},
		{desc: "name with a 64-octet label", mutate: func(r *v1.DNSRecord) { r.Spec.Name = v1.RecordName(strings.Repeat("a", 64)) },
			wantErrors: []string{"spec.name", "should match"}},
		{desc: "name with a 63-octet label", mutate: func(r *v1.DNSRecord) { r.Spec.Name = v1.RecordName(strings.Repeat("a", 63)) }},
		{desc: "no values", mutate: func(r *v1.DNSRecord) { r.Spec.Values = []string{} },
			wantErrors: []string{"spec.values", "should have at least 1 items"}},
		{desc: "empty value", mutate: func(r *v1.DNSRecord) { r.Spec.Values = []string{""} },
			wantErrors: []string{"spec.values[0]", "should be at least 1 chars long"}},
		{desc: "too many values", mutate: func(r *v1.DNSRecord) {
			r.Spec.Values = make([]string, 101)
			for i := range r.Spec.Values {
				r.Spec.Values[i] = "192.0.2.1"
			}
		}, wantErrors: []string{"spec.values", "must have at most 100 items"}},
		{desc: "wildcard not leftmost", mutate: func(r *v1.DNSRecord) { r.Spec.Name = "www.*" },
			wantErrors: []string{"spec.name", "should match"}},
		{desc: "name with a semicolon", mutate: func(r *v1.DNSRecord) { r.Spec.Name = "www;" },
			wantErrors: []string{"spec.name", "should match"}},
		{desc: "CNAME with two values", mutate: func(r *v1.DNSRecord) {
			r.Spec.Type, r.Spec.Values = "CNAME", []string{"a.example.com.", "b.example.com."}
		}, wantErrors: []string{"a CNAME record set holds exactly one value"}},
		{desc: "CNAME at the apex", mutate: func(r *v1.DNSRecord) {
			r.Spec.Name, r.Spec.Type, r.Spec.Values = "@", "CNAME", []string{"a.example.net."}
		}, wantErrors: []string{"a CNAME cannot be placed at the zone apex"}},
		{desc: "apex NS through a DNSRecord", mutate: func(r *v1.DNSRecord) {
			r.Spec.Name, r.Spec.Type, r.Spec.Values = "@", "NS", []string{"ns3.example.com."}
		}, wantErrors: []string{"apex NS and DS records belong to the BindZone"}},
		{desc: "TTL negative", mutate: func(r *v1.DNSRecord) { r.Spec.TTL = ptr.To[v1.TTL](-1) },
			wantErrors: []string{"spec.ttl", "should be greater than or equal to 0"}},
	})
}

func TestDNSRecordUpdate(t *testing.T) {
	runUpdateCases(t, baseRecord, []updateCase[*v1.DNSRecord]{
		{desc: "values may change", mutate: func(r *v1.DNSRecord) { r.Spec.Values = []string{"192.0.2.81"} }},
		{desc: "name is immutable", mutate: func(r *v1.DNSRecord) { r.Spec.Name = "api2" },
			wantErrors: []string{"spec.name", "name is immutable; create a new DNSRecord"}},
		{desc: "type is immutable", mutate: func(r *v1.DNSRecord) { r.Spec.Type = "AAAA"; r.Spec.Values = []string{"2001:db8::1"} },
			wantErrors: []string{"spec.type", "type is immutable; create a new DNSRecord"}},
		{desc: "zoneRef is immutable", mutate: func(r *v1.DNSRecord) { r.Spec.ZoneRef.Name = "other" },
			wantErrors: []string{"spec.zoneRef", "zoneRef is immutable"}},
	})
}
