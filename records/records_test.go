package records

import (
	"reflect"
	"strings"
	"testing"

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

func TestValidateSets(t *testing.T) {
	for _, tc := range []struct {
		desc    string
		sets    []v1alpha1.RecordSet
		wantErr string
		field   string
	}{
		{"cname beside A", []v1alpha1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.1"}}, {Name: "www", Type: "CNAME", Values: []string{"x.example.com."}}}, "cannot coexist", "records[1].name"},
		{"cname at apex", []v1alpha1.RecordSet{{Name: "@", Type: "CNAME", Values: []string{"x.example.org."}}}, "apex", "records[0].type"},
		{"ds at apex", []v1alpha1.RecordSet{{Name: "@", Type: "DS", Values: []string{"1 13 2 AB"}}}, "parent zone", "records[0].type"},
		{"ds without ns", []v1alpha1.RecordSet{{Name: "sub", Type: "DS", Values: []string{"1 13 2 AB"}}}, "delegation point", "records[0].type"},
		{"below delegation", []v1alpha1.RecordSet{{Name: "sub", Type: "NS", Values: []string{"ns.other.org."}}, {Name: "www.sub", Type: "TXT", Values: []string{`"x"`}}}, "below the delegation", "records[1].name"},
		{"at delegation", []v1alpha1.RecordSet{{Name: "sub", Type: "MX", Values: []string{"10 x.org."}}, {Name: "sub", Type: "NS", Values: []string{"ns.other.org."}}}, "delegation point", "records[0].type"},
		{"below dname", []v1alpha1.RecordSet{{Name: "old", Type: "DNAME", Values: []string{"new.example.org."}}, {Name: "a.old", Type: "A", Values: []string{"192.0.2.1"}}}, "below the DNAME", "records[1].name"},
		{"duplicate", []v1alpha1.RecordSet{{Name: "a", Type: "A", Values: []string{"192.0.2.1"}}, {Name: "a", Type: "A", Values: []string{"192.0.2.2"}}}, "Duplicate", "records[1]"},
		{"glue ok", []v1alpha1.RecordSet{{Name: "sub", Type: "NS", Values: []string{"ns.sub.example.com."}}, {Name: "ns.sub", Type: "A", Values: []string{"192.0.2.1"}}}, "", ""},
	} {
		errs := ValidateSets("example.com", tc.sets, field.NewPath("records"))
		if tc.wantErr == "" {
			if len(errs) != 0 {
				t.Errorf("%s: unexpected %v", tc.desc, errs)
			}
			continue
		}
		if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.wantErr) || errs[0].Field != tc.field {
			t.Errorf("%s: got %v, want %q at %s", tc.desc, errs, tc.wantErr, tc.field)
		}
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
