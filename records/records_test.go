package records

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func TestRelativeName(t *testing.T) {
	for _, tc := range []struct {
		zone, in, want string
		wantErr        bool
	}{
		{"example.com", "@", "@", false},
		{"example.com", "WWW", "www", false},
		{"Example.COM.", "www.example.com.", "www", false},
		{"example.com", "EXAMPLE.com.", "@", false},
		{"example.com", "*.Apps.example.com.", "*.apps", false},
		{"example.com", "www.example.com", "www.example.com", false},
		{"example.com", "www.example.org.", "", true},
		{"example.com", "badexample.com.", "", true},
		{".", "www.", "www", false},
		{"example.com", " ", "", true},
	} {
		got, err := RelativeName(tc.zone, tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("RelativeName(%q, %q) = %q, %v; want %q, err %v", tc.zone, tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestCanonicalValue(t *testing.T) {
	for _, tc := range []struct {
		typ, in, want, wantErr string
	}{
		{"A", "192.0.2.1", "192.0.2.1", ""},
		{"A", "2001:db8::1", "", "not valid A data"},
		{"A", "300.1.1.1", "", "not valid A data"},
		{"A", "192.0.2.1\nevil 3600 IN A 192.0.2.2", "", "control character"},
		{"AAAA", "2001:DB8:0:0:0:0:0:1", "2001:db8::1", ""},
		{"AAAA", "192.0.2.1", "", "not valid AAAA data"},
		{"CNAME", "Target.Example.ORG.", "target.example.org.", ""},
		{"CNAME", "web", "web.example.com.", ""},
		{"MX", "10 Mail", "10 mail.example.com.", ""},
		{"MX", "mail", "", "not valid MX data"},
		{"TXT", "v=spf1 -all", `"v=spf1 -all"`, ""},
		{"TXT", `"a" "b"`, `"a" "b"`, ""},
		{"TXT", strings.Repeat("x", 300), `"` + strings.Repeat("x", 255) + `" "` + strings.Repeat("x", 45) + `"`, ""},
		{"TXT", `say "hi"`, `"say \"hi\""`, ""},
		{"SRV", "10 5 5060 SIP.example.com.", "10 5 5060 sip.example.com.", ""},
		{"SRV", "10 5 sip", "", "not valid SRV data"},
		{"CAA", `0 ISSUE "letsencrypt.org"`, `0 issue "letsencrypt.org"`, ""},
		{"PTR", "host.example.com.", "host.example.com.", ""},
		{"NS", "ns1", "ns1.example.com.", ""},
		{"DS", "12345 13 2 49FD46E6C4B45C55D4AC69CBD3CD34AC1AFE51DE9A5B2F5BA6D5D4A3C0E2D1F0", "12345 13 2 49FD46E6C4B45C55D4AC69CBD3CD34AC1AFE51DE9A5B2F5BA6D5D4A3C0E2D1F0", ""},
		{"TLSA", "3 1 1 ABCDEF0123", "3 1 1 abcdef0123", ""},
		{"SSHFP", "4 2 abcdef", "4 2 ABCDEF", ""},
		{"DS", "12345 13 2", "", "digest is missing"},
		{"TLSA", "3 1 1 abc", "", "hex digits"},
		{"HTTPS", "1 . alpn=h2", `1 . alpn="h2"`, ""},
		{"SVCB", "1 Svc.example.net. port=8443", `1 svc.example.net. port="8443"`, ""},
		{"NS", "192.0.2.1 extra", "", "not valid NS data"},
		{"BOGUS", "x", "", "not supported"},
	} {
		got, err := CanonicalValue("example.com", "www", tc.typ, tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s %q: err %v, want %q", tc.typ, tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %q = %q, %v; want %q", tc.typ, tc.in, got, err, tc.want)
		}
	}
}

func ttl(v int32) *v1alpha1.TTL { t := v1alpha1.TTL(v); return &t }

func TestCanonicalize(t *testing.T) {
	in := []v1alpha1.RecordSet{
		{Name: "WWW.example.com.", Type: "a", Values: []string{"192.0.2.2", "192.0.2.1", "192.0.2.2"}},
		{Name: "example.com.", Type: "MX", Values: []string{"10 mail"}},
		{Name: "www", Type: "A", TTL: ttl(60), Values: []string{"192.0.2.3"}},
		{Name: "mail", Type: "AAAA", Values: []string{"2001:db8:0::1"}},
	}
	got, errs := Canonicalize("Example.com.", in, 300, field.NewPath("records"))
	if len(errs) != 0 {
		t.Fatalf("errors: %v", errs)
	}
	want := []v1alpha1.RecordSet{
		{Name: "@", Type: "MX", TTL: ttl(300), Values: []string{"10 mail.example.com."}},
		{Name: "mail", Type: "AAAA", TTL: ttl(300), Values: []string{"2001:db8::1"}},
		{Name: "www", Type: "A", TTL: ttl(60), Values: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	again, _ := Canonicalize("example.com", got, 300, field.NewPath("records"))
	if !reflect.DeepEqual(again, got) {
		t.Fatalf("not idempotent: %+v", again)
	}
}

func TestCanonicalizeKeepsBadInput(t *testing.T) {
	in := []v1alpha1.RecordSet{{Name: "www.other.org.", Type: "A", Values: []string{"nope"}}, {Name: "x", Type: "A", Values: []string{"nope"}}}
	out, errs := Canonicalize("example.com", in, 0, field.NewPath("spec", "records"))
	if len(errs) != 2 {
		t.Fatalf("want 2 errors, got %v", errs)
	}
	if errs[0].Field != "spec.records[0].name" || errs[1].Field != "spec.records[1].values[0]" {
		t.Fatalf("paths: %q %q", errs[0].Field, errs[1].Field)
	}
	if out[1].Values[0] != "nope" {
		t.Fatalf("bad value not kept: %+v", out)
	}
}

// TestValidateSets: every rule between record sets, with the exact errors;
// the rules of one set alone (CNAME or DS at the apex, one CNAME value) are
// the CRD's and pass here (test/cel holds them).
func TestValidateSets(t *testing.T) {
	p := field.NewPath("records")
	set := func(name, typ string, values ...string) v1alpha1.RecordSet {
		return v1alpha1.RecordSet{Name: v1alpha1.RecordName(name), Type: v1alpha1.RecordType(typ), Values: values}
	}
	long := strings.Repeat("a.", 124) + "a" // 249 characters: over 255 octets with the zone
	for _, tc := range []struct {
		name string
		sets []v1alpha1.RecordSet
		want field.ErrorList
	}{
		{"valid A and MX", []v1alpha1.RecordSet{set("@", "MX", "10 mail.example.com."), set("mail", "A", "192.0.2.1")}, nil},
		{"valid glue below a delegation", []v1alpha1.RecordSet{set("sub", "NS", "ns.sub.example.com."), set("ns.sub", "A", "192.0.2.1")}, nil},
		{"valid DS at a delegation", []v1alpha1.RecordSet{set("sub", "DS", "1 13 2 AB"), set("sub", "NS", "ns.other.org.")}, nil},
		{"CNAME at the apex is the CRD's rule", []v1alpha1.RecordSet{set("@", "CNAME", "x.example.org.")}, nil},
		{"DS at the apex is the CRD's rule", []v1alpha1.RecordSet{set("@", "DS", "1 13 2 AB")}, nil},
		{"CNAME beside A", []v1alpha1.RecordSet{set("www", "A", "192.0.2.1"), set("www", "CNAME", "x.example.com.")}, field.ErrorList{
			field.Invalid(p.Index(1).Child("name"), "www", "a CNAME cannot coexist with other records at the same name (found A); remove the CNAME or the other record sets"),
		}},
		{"DS without NS", []v1alpha1.RecordSet{set("sub", "DS", "1 13 2 AB")}, field.ErrorList{
			field.Invalid(p.Index(0).Child("type"), v1alpha1.RecordType("DS"), "a DS record must sit at a delegation point; add an NS record set at the same name"),
		}},
		{"data below a delegation", []v1alpha1.RecordSet{set("sub", "NS", "ns.other.org."), set("www.sub", "TXT", `"x"`)}, field.ErrorList{
			field.Invalid(p.Index(1).Child("name"), "www.sub", "name is below the delegation sub.example.com. (NS record set) and would never be served; only glue A/AAAA records may sit there"),
		}},
		{"data at a delegation", []v1alpha1.RecordSet{set("sub", "MX", "10 x.org."), set("sub", "NS", "ns.other.org.")}, field.ErrorList{
			field.Invalid(p.Index(0).Child("type"), v1alpha1.RecordType("MX"), "only NS and DS records may sit at the delegation point sub.example.com.; other data there would never be served"),
		}},
		{"data below a DNAME", []v1alpha1.RecordSet{set("old", "DNAME", "new.example.org."), set("a.old", "A", "192.0.2.1")}, field.ErrorList{
			field.Invalid(p.Index(1).Child("name"), "a.old", "name is below the DNAME at old.example.com. and would never be served; remove it or the DNAME"),
		}},
		{"the same set twice", []v1alpha1.RecordSet{set("a", "A", "192.0.2.1"), set("a", "A", "192.0.2.2")}, field.ErrorList{
			field.Duplicate(p.Index(1), "a A"),
		}},
		{"owner name too long", []v1alpha1.RecordSet{set(long, "A", "192.0.2.1")}, field.ErrorList{
			field.Invalid(p.Index(0).Child("name"), long, "the absolute name is longer than 255 octets or has a label over 63; shorten it"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := ValidateSets("example.com", tc.sets, p)
			if tc.want == nil {
				g.Expect(got).To(BeEmpty())
				return
			}
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestToRRs(t *testing.T) {
	rrs, err := ToRRs("example.com", v1alpha1.RecordSet{Name: "www", Type: "A", TTL: ttl(60), Values: []string{"192.0.2.1", "192.0.2.2"}})
	if err != nil || len(rrs) != 2 {
		t.Fatalf("%v %v", rrs, err)
	}
	if got := rrs[0].String(); got != "www.example.com.\t60\tIN\tA\t192.0.2.1" {
		t.Fatalf("got %q", got)
	}
	if _, err := ToRRs("example.com", v1alpha1.RecordSet{Name: "www", Type: "A", Values: []string{"x"}}); err == nil {
		t.Fatal("want error")
	}
}

// TestCanonicalizeTTLConflict: two items for one record set with different
// TTLs are an error at the second one's ttl (exact error), whatever the
// spelling of name and type, and they are not merged (no TTL is dropped);
// the same TTL, or one unset, still merges.
func TestCanonicalizeTTLConflict(t *testing.T) {
	p := field.NewPath("spec", "records")
	conflict := func(i int, name, typ string, got int32, first int, want int32) field.ErrorList {
		return field.ErrorList{field.Invalid(p.Index(i).Child("ttl"), v1alpha1.TTL(got), fmt.Sprintf(
			"record set %s %s is also declared by spec.records[%d] with TTL %d, and a record set has one TTL; give both the same TTL or merge them into one item", name, typ, first, want))}
	}
	for _, tc := range []struct {
		desc string
		in   []v1alpha1.RecordSet
		want field.ErrorList
		sets int
	}{
		{"A, same spelling", []v1alpha1.RecordSet{
			{Name: "www", Type: "A", TTL: ttl(300), Values: []string{"192.0.2.1"}},
			{Name: "www", Type: "A", TTL: ttl(60), Values: []string{"192.0.2.2"}},
		}, conflict(1, "www", "A", 60, 0, 300), 2},
		{"TXT at the apex, absolute and relative, case", []v1alpha1.RecordSet{
			{Name: "mail", Type: "MX", Values: []string{"10 mx"}},
			{Name: "@", Type: "txt", TTL: ttl(3600), Values: []string{`"v=spf1 -all"`}},
			{Name: "Example.COM.", Type: "TXT", TTL: ttl(120), Values: []string{`"x"`}},
		}, conflict(2, "@", "TXT", 120, 1, 3600), 3},
		{"third item conflicts with the first", []v1alpha1.RecordSet{
			{Name: "srv", Type: "AAAA", TTL: ttl(10), Values: []string{"2001:db8::1"}},
			{Name: "srv", Type: "AAAA", Values: []string{"2001:db8::2"}},
			{Name: "SRV.example.com.", Type: "AAAA", TTL: ttl(20), Values: []string{"2001:db8::3"}},
		}, conflict(2, "srv", "AAAA", 20, 0, 10), 2},
		{"same TTL merges", []v1alpha1.RecordSet{
			{Name: "www", Type: "A", TTL: ttl(60), Values: []string{"192.0.2.1"}},
			{Name: "www", Type: "A", TTL: ttl(60), Values: []string{"192.0.2.2"}},
		}, nil, 1},
		{"one TTL unset merges", []v1alpha1.RecordSet{
			{Name: "www", Type: "A", Values: []string{"192.0.2.1"}},
			{Name: "www", Type: "A", TTL: ttl(60), Values: []string{"192.0.2.2"}},
		}, nil, 1},
		{"same name, other type", []v1alpha1.RecordSet{
			{Name: "www", Type: "A", TTL: ttl(60), Values: []string{"192.0.2.1"}},
			{Name: "www", Type: "AAAA", TTL: ttl(600), Values: []string{"2001:db8::1"}},
		}, nil, 2},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			out, errs := Canonicalize("example.com", tc.in, 300, p)
			g := NewWithT(t)
			if tc.want == nil {
				g.Expect(errs).To(BeEmpty())
			} else {
				g.Expect(errs).To(Equal(tc.want))
			}
			g.Expect(out).To(HaveLen(tc.sets))
		})
	}
}
