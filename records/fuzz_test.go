package records

import (
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// FuzzCanonicalize checks that normalisation never panics and is
// idempotent: the mutating webhook may see its own output again on every
// update, and a second pass that changed anything would make updates
// non-convergent.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []struct{ zone, name, typ, v1, v2 string }{
		{"example.com", "www", "A", "192.0.2.1", "192.0.2.1"},
		{"Example.com.", "WWW.example.COM.", "aaaa", "2001:DB8::1", "::1"},
		{"example.com", "@", "MX", "10 mail", "20 MAIL.example.com."},
		{"example.com", "txt", "TXT", "v=spf1 -all", `"a" "b\"c"`},
		{".", "x.", "TXT", `\"`, `"\\"`},
		{"example.com", "_sip._tcp", "SRV", "10 5 5060 sip", "bad"},
		{"example.com", "h", "HTTPS", "1 . alpn=h2,h3", "0 svc.example.net."},
		{"example.com", "c", "CAA", `0 issue "ca.example"`, `128 iodef "mailto:x@example.com"`},
		{"example.com", "*.apps", "CNAME", "lb", "lb."},
		{"example.com", "loc", "LOC", "52 22 23.000 N 4 53 32.000 E -2.00m 0.00m 10000m 10m", "x"},
	} {
		f.Add(s.zone, s.name, s.typ, s.v1, s.v2)
	}
	f.Fuzz(func(t *testing.T, zone, name, typ, v1, v2 string) {
		sets := []v1alpha1.RecordSet{
			{Name: v1alpha1.RecordName(name), Type: v1alpha1.RecordType(typ), Values: []string{v1, v2}},
			{Name: v1alpha1.RecordName(name), Type: v1alpha1.RecordType(typ), Values: []string{v2}},
		}
		once, _ := Canonicalize(zone, sets, 300, field.NewPath("records"))
		twice, _ := Canonicalize(zone, once, 300, field.NewPath("records"))
		if !reflect.DeepEqual(once, twice) {
			t.Fatalf("not idempotent:\n once  %+v\n twice %+v", once, twice)
		}
		_ = ValidateSets(zone, once, field.NewPath("records"))
		for _, s := range once {
			_, _ = ToRRs(zone, s)
		}
	})
}
