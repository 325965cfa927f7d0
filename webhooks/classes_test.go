package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// causes are the field errors of a 422, or nil.
func causes(t *testing.T, err error) field.ErrorList {
	t.Helper()
	if err == nil {
		return nil
	}
	var se *apierrors.StatusError
	if !asStatus(err, &se) {
		t.Fatalf("not a StatusError: %v", err)
	}
	var out field.ErrorList
	for _, c := range se.ErrStatus.Details.Causes {
		out = append(out, &field.Error{Type: field.ErrorType(c.Type), Field: c.Field, Detail: c.Message})
	}
	return out
}

func asStatus(err error, se **apierrors.StatusError) bool {
	return errors.As(err, se)
}

// TestPortZeroIsNotDefaulted: spec.ports.X written as 0 stays 0 through
// the mutating webhook (the CRD's 1–65535 bound refuses it at
// spec.ports.X); unset ports still get their defaults.
func TestPortZeroIsNotDefaulted(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want v1alpha1.ClusterPorts
	}{
		{`{"spec":{"ports":{"dns":0}}}`, v1alpha1.ClusterPorts{DNS: 0, Agent: v1alpha1.DefaultAgentPort, Metrics: v1alpha1.DefaultMetricsPort}},
		{`{"spec":{"ports":{"agent":0,"metrics":0}}}`, v1alpha1.ClusterPorts{DNS: v1alpha1.DefaultDNSPort, Agent: 0, Metrics: 0}},
		{`{"spec":{"ports":{"metrics":0,"dns":5353}}}`, v1alpha1.ClusterPorts{DNS: 5353, Agent: v1alpha1.DefaultAgentPort, Metrics: 0}},
		{`{"spec":{"ports":{}}}`, v1alpha1.ClusterPorts{DNS: v1alpha1.DefaultDNSPort, Agent: v1alpha1.DefaultAgentPort, Metrics: v1alpha1.DefaultMetricsPort}},
		{`{"spec":{}}`, v1alpha1.ClusterPorts{DNS: v1alpha1.DefaultDNSPort, Agent: v1alpha1.DefaultAgentPort, Metrics: v1alpha1.DefaultMetricsPort}},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			c := &v1alpha1.BindCluster{ObjectMeta: objectMeta("dns")}
			var raw struct {
				Spec struct {
					Ports v1alpha1.ClusterPorts `json:"ports"`
				} `json:"spec"`
			}
			NewWithT(t).Expect(json.Unmarshal([]byte(tc.raw), &raw)).To(Succeed())
			c.Spec.Ports = raw.Spec.Ports
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
				Operation: admissionv1.Create, Object: runtime.RawExtension{Raw: []byte(tc.raw)},
			}})
			NewWithT(t).Expect((&BindClusterWebhook{}).Default(ctx, c)).To(Succeed())
			NewWithT(t).Expect(c.Spec.Ports).To(Equal(tc.want))
		})
	}
}

// label of n octets.
func label(c byte, n int) string { return strings.Repeat(string(c), n) }

// TestLongZoneNames: a zone name of exactly 253 octets is valid and gets
// an SOA RNAME that fits (the zone's own name); a shorter one keeps
// hostmaster.<zone>; a 254-octet one gets no derived RNAME, so only
// spec.zoneName's own rule (CRD) refuses it.
func TestLongZoneNames(t *testing.T) {
	z253 := strings.Join([]string{label('a', 63), label('b', 63), label('c', 63), label('d', 61)}, ".")
	z242 := strings.Join([]string{label('a', 63), label('b', 63), label('c', 63), label('d', 50)}, ".")
	z243 := z242 + "e"
	z254 := z253 + "e"
	for _, tc := range []struct {
		zone, rname string
	}{
		{z253, z253},
		{z243, z243},
		{z242, "hostmaster." + z242},
		{"example.com", "hostmaster.example.com"},
		{z254, ""},
	} {
		t.Run(fmt.Sprint(len(tc.zone)), func(t *testing.T) {
			NewWithT(t).Expect(len(tc.rname)).To(BeNumerically("<=", 253))
			z := &v1alpha1.BindZone{ObjectMeta: objectMeta("long"), Spec: v1alpha1.BindZoneSpec{ClusterRef: ref("dns"), ZoneName: v1alpha1.DomainName(strings.ToUpper(tc.zone) + ".")}}
			w := testWebhooks(t).zone
			NewWithT(t).Expect(w.Default(context.Background(), z)).To(Succeed())
			NewWithT(t).Expect(string(z.Spec.SOA.ResponsiblePerson)).To(Equal(tc.rname))
			if len(tc.zone) <= 253 {
				_, err := w.ValidateCreate(context.Background(), z)
				NewWithT(t).Expect(err).NotTo(HaveOccurred())
			}
		})
	}
}

// TestInlineRecordSetTTLConflict: two inline record sets for one name and
// type with different TTLs survive the mutating webhook apart and are
// refused at the second one's ttl.
func TestInlineRecordSetTTLConflict(t *testing.T) {
	w := testWebhooks(t).zone
	for _, tc := range []struct {
		desc string
		sets []v1alpha1.RecordSet
		want field.ErrorList
	}{
		{"A www", []v1alpha1.RecordSet{
			{Name: "www", Type: "A", TTL: ptr.To[v1alpha1.TTL](300), Values: []string{"192.0.2.1"}},
			{Name: "WWW.example.com.", Type: "a", TTL: ptr.To[v1alpha1.TTL](60), Values: []string{"192.0.2.2"}},
		}, field.ErrorList{{Type: field.ErrorTypeInvalid, Field: "spec.records[1].ttl", Detail: "Invalid value: 60: record set www A is also declared by spec.records[0] with TTL 300, and a record set has one TTL; give both the same TTL or merge them into one item"}}},
		{"MX at the apex after other sets", []v1alpha1.RecordSet{
			{Name: "@", Type: "MX", TTL: ptr.To[v1alpha1.TTL](3600), Values: []string{"10 mail"}},
			{Name: "mail", Type: "A", Values: []string{"192.0.2.25"}},
			{Name: "example.com.", Type: "MX", TTL: ptr.To[v1alpha1.TTL](600), Values: []string{"20 mail2"}},
		}, field.ErrorList{{Type: field.ErrorTypeInvalid, Field: "spec.records[1].ttl", Detail: "Invalid value: 600: record set @ MX is also declared by spec.records[0] with TTL 3600, and a record set has one TTL; give both the same TTL or merge them into one item"}}},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			z := &v1alpha1.BindZone{ObjectMeta: objectMeta("z"), Spec: v1alpha1.BindZoneSpec{ClusterRef: ref("dns"), ZoneName: "example.com", Records: tc.sets}}
			NewWithT(t).Expect(w.Default(context.Background(), z)).To(Succeed())
			_, err := w.ValidateCreate(context.Background(), z)
			NewWithT(t).Expect(causes(t, err)).To(Equal(tc.want))
		})
	}
}

// TestCNAMEAcrossDNSRecords: a CNAME DNSRecord where another DNSRecord of
// the zone holds data, and data where a CNAME DNSRecord is, are refused at
// spec.type; other zones, other names, the same type (ownership, not
// admission) and deleted records are not in the way.
func TestCNAMEAcrossDNSRecords(t *testing.T) {
	zone := &v1alpha1.BindZone{ObjectMeta: objectMeta("example"), Spec: v1alpha1.BindZoneSpec{
		ClusterRef: ref("dns"), ZoneName: "example.com", Type: v1alpha1.ZonePrimary, UpdateKeyRef: &v1alpha1.LocalObjectReference{Name: "upd"},
	}}
	other := &v1alpha1.BindZone{ObjectMeta: objectMeta("other"), Spec: v1alpha1.BindZoneSpec{
		ClusterRef: ref("dns"), ZoneName: "example.org", Type: v1alpha1.ZonePrimary, UpdateKeyRef: &v1alpha1.LocalObjectReference{Name: "upd"},
	}}
	rec := func(name, zoneRef, owner string, typ v1alpha1.RecordType, values ...string) *v1alpha1.DNSRecord {
		return &v1alpha1.DNSRecord{ObjectMeta: objectMeta(name), Spec: v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: zoneRef}, Name: v1alpha1.RecordName(owner), Type: typ, Values: values}}
	}
	existing := []*v1alpha1.DNSRecord{
		rec("www-a", "example", "www", "A", "192.0.2.1"),
		rec("www-txt", "example", "www", "TXT", `"x"`),
		rec("alias", "example", "alias", "CNAME", "www.example.com."),
		rec("org-cname", "other", "host", "CNAME", "www.example.org."),
	}
	for _, tc := range []struct {
		desc string
		r    *v1alpha1.DNSRecord
		want string // error detail at spec.type, "" for accepted
	}{
		{"CNAME over A and TXT", rec("new", "example", "www", "CNAME", "web.example.net."),
			`Invalid value: "CNAME": DNSRecord "www-a" already holds A data at www, and a CNAME cannot coexist with other records at a name; choose another name for the alias or delete DNSRecord "www-a"`},
		{"CNAME over A, absolute owner", rec("new", "example", "WWW.example.com.", "CNAME", "web.example.net."),
			`Invalid value: "CNAME": DNSRecord "www-a" already holds A data at www, and a CNAME cannot coexist with other records at a name; choose another name for the alias or delete DNSRecord "www-a"`},
		{"AAAA at a CNAME", rec("new", "example", "alias", "AAAA", "2001:db8::1"),
			`Invalid value: "AAAA": DNSRecord "alias" is a CNAME at alias, and a CNAME cannot coexist with other records at a name; put the AAAA record at the CNAME's target or delete DNSRecord "alias"`},
		{"MX at a CNAME", rec("new", "example", "Alias", "MX", "10 mail.example.com."),
			`Invalid value: "MX": DNSRecord "alias" is a CNAME at alias, and a CNAME cannot coexist with other records at a name; put the MX record at the CNAME's target or delete DNSRecord "alias"`},
		{"CNAME in another zone", rec("new", "other", "www", "CNAME", "x.example.net."), ""},
		{"data in another zone at a CNAME's name there", rec("new", "example", "host", "A", "192.0.2.9"), ""},
		{"another CNAME at a CNAME (ownership)", rec("new", "example", "alias", "CNAME", "other.example.net."), ""},
		{"data next to data", rec("new", "example", "www", "AAAA", "2001:db8::5"), ""},
		{"the record itself", rec("alias", "example", "alias", "CNAME", "web.example.net."), ""},
	} {
		t.Run(tc.desc, func(t *testing.T) {
			w := testWebhooks(t, zone, other, existing[0], existing[1], existing[2], existing[3]).record
			r := tc.r.DeepCopy()
			NewWithT(t).Expect(w.Default(context.Background(), r)).To(Succeed())
			_, err := w.ValidateCreate(context.Background(), r)
			if tc.want == "" {
				NewWithT(t).Expect(err).NotTo(HaveOccurred())
				return
			}
			NewWithT(t).Expect(causes(t, err)).To(Equal(field.ErrorList{{Type: field.ErrorTypeInvalid, Field: "spec.type", Detail: tc.want}}))
		})
	}
}
