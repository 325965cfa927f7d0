package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/quota"
)

// zoneWith1000Records is a realistic mixed zone: A, AAAA, TXT, MX, SRV
// and CNAME sets, 1,000 records in all, written non-canonically.
func zoneWith1000Records() *v1alpha1.BindZone {
	var sets []v1alpha1.RecordSet
	for i := 0; len(sets) < 1000; i++ {
		switch i % 6 {
		case 0:
			sets = append(sets, v1alpha1.RecordSet{Name: v1alpha1.RecordName(fmt.Sprintf("Host%d", i)), Type: "A", Values: []string{fmt.Sprintf("198.18.%d.%d", i/250, i%250)}})
		case 1:
			sets = append(sets, v1alpha1.RecordSet{Name: v1alpha1.RecordName(fmt.Sprintf("host%d.example.com.", i)), Type: "AAAA", Values: []string{fmt.Sprintf("2001:DB8:0:0::%x", i)}})
		case 2:
			sets = append(sets, v1alpha1.RecordSet{Name: v1alpha1.RecordName(fmt.Sprintf("txt%d", i)), Type: "TXT", Values: []string{fmt.Sprintf("v=spf1 ip4:198.18.0.%d -all", i%250)}})
		case 3:
			sets = append(sets, v1alpha1.RecordSet{Name: v1alpha1.RecordName(fmt.Sprintf("mx%d", i)), Type: "MX", Values: []string{fmt.Sprintf("10 Mail%d", i)}})
		case 4:
			sets = append(sets, v1alpha1.RecordSet{Name: v1alpha1.RecordName(fmt.Sprintf("_sip._tcp.s%d", i)), Type: "SRV", Values: []string{fmt.Sprintf("10 5 5060 sip%d.example.com.", i)}})
		case 5:
			sets = append(sets, v1alpha1.RecordSet{Name: v1alpha1.RecordName(fmt.Sprintf("alias%d", i)), Type: "CNAME", Values: []string{fmt.Sprintf("host%d", i-5)}})
		}
	}
	return &v1alpha1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "ns"}, Spec: v1alpha1.BindZoneSpec{ClusterRef: v1alpha1.LocalObjectReference{Name: "c"}, ZoneName: "Example.com.", Records: sets}}
}

// BenchmarkZoneAdmission1000 is the webhook's work for one BindZone of
// 1,000 records: defaulting (canonicalisation) then validation, without the
// API server round trips.
func BenchmarkZoneAdmission1000(b *testing.B) {
	ctx := context.Background()
	w := &BindZoneWebhook{}
	src := zoneWith1000Records()
	b.ReportAllocs()
	for b.Loop() {
		z := src.DeepCopy()
		_ = w.Default(ctx, z)
		if _, err := w.ValidateCreate(ctx, z); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPolicyRules runs the CEL rules over a realistic extraOptions
// list (parsing included) against a cluster with 3 pod CIDRs and 30 pods.
func BenchmarkPolicyRules(b *testing.B) {
	e, err := NewPolicyEngine(PodIPRules)
	if err != nil {
		b.Fatal(err)
	}
	opts := []string{
		`minimal-responses yes;`,
		`max-cache-size 256m;`,
		`rate-limit { responses-per-second 20; window 5; };`,
		`transfers-out 50;`,
		`check-names primary warn;`,
		`prefetch 2 9;`,
		`version none;`,
		`tcp-clients 200;`,
		`max-cache-ttl 86400;`,
		`edns-udp-size 1232;`,
	}
	net := PodNetwork{CIDRs: []netip.Prefix{netip.MustParsePrefix("10.42.0.0/16"), netip.MustParsePrefix("10.43.0.0/16"), netip.MustParsePrefix("fd00:42::/56")}}
	for i := 0; i < 30; i++ {
		net.IPs = append(net.IPs, netip.AddrFrom4([4]byte{10, 42, byte(i), 5}))
	}
	p := field.NewPath("spec", "extraOptions")
	b.ReportAllocs()
	for b.Loop() {
		sts, errs := ValidateExtraOptions(opts, p)
		if len(errs) > 0 {
			b.Fatal(errs)
		}
		if errs := e.Evaluate(sts, net, p); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}

// BenchmarkDNSRecordAdmission is the webhook server's work for one
// DNSRecord create as the API server sends it (issue 15 item 2): the
// AdmissionReview over HTTP in (with the managedFields the API server has
// already set), the answer out: allowed with no patch, the object being
// canonical. The quota check runs as SetupWithManager registers it, with
// the default limits and the zone counted.
func BenchmarkDNSRecordAdmission(b *testing.B) {
	zone := &v1alpha1.BindZone{ObjectMeta: objectMeta("example"), Spec: v1alpha1.BindZoneSpec{
		ClusterRef: ref("dns"), ZoneName: "example.com", Type: v1alpha1.ZonePrimary, DefaultTTL: ptr.To[v1alpha1.TTL](60),
	}}
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	ws, _ := quotaWebhooks(b, quota.DefaultLimits(), zone)
	w := ws.record
	hook := withOneCall(func() *v1alpha1.DNSRecord { return &v1alpha1.DNSRecord{} }, w, withQuota[*v1alpha1.DNSRecord](w, "DNSRecord", ws.quotas))
	body := dnsRecordCreateReview(b)
	if resp := postReview(b, hook, "application/json", body); !resp.Allowed || resp.Patch != nil || resp.PatchType != nil {
		b.Fatalf("a canonical create was answered %+v: want allowed with no patch", resp)
	}
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, "/mutate-bind-unkin-net-v1alpha1-dnsrecord", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		hook.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"allowed":true`)) {
			b.Fatalf("answer %d: %s", rec.Code, rec.Body)
		}
	}
}

// dnsRecordCreateReview is the AdmissionReview of a canonical DNSRecord
// create, as kube-apiserver 1.37 encodes it.
func dnsRecordCreateReview(b testing.TB) []byte {
	obj := []byte(`{"apiVersion":"bind.unkin.net/v1alpha1","kind":"DNSRecord","metadata":{"creationTimestamp":"2026-12-05T00:16:54Z","generation":1,` +
		`"managedFields":[{"apiVersion":"bind.unkin.net/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{".":{},"f:name":{},"f:ttl":{},"f:type":{},"f:values":{},"f:zoneRef":{".":{},"f:name":{}}}},` +
		`"manager":"kubectl","operation":"Update","time":"2026-12-05T00:16:54Z"}],"name":"r00001","namespace":"bench-x7k2p","uid":"0b1c5f0e-5a3e-4c39-9f51-7d1ac2f0e001"},` +
		`"spec":{"name":"r00001","ttl":60,"type":"A","values":["192.0.2.1"],"zoneRef":{"name":"example"}}}`)
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID: "5d0e7a8c-1f7b-4e55-8f2a-0b6c3d9e7f11", Kind: metav1.GroupVersionKind{Group: "bind.unkin.net", Version: "v1alpha1", Kind: "DNSRecord"},
			Resource:        metav1.GroupVersionResource{Group: "bind.unkin.net", Version: "v1alpha1", Resource: "dnsrecords"},
			RequestKind:     &metav1.GroupVersionKind{Group: "bind.unkin.net", Version: "v1alpha1", Kind: "DNSRecord"},
			RequestResource: &metav1.GroupVersionResource{Group: "bind.unkin.net", Version: "v1alpha1", Resource: "dnsrecords"},
			Name:            "r00001", Namespace: "ns", Operation: admissionv1.Create,
			UserInfo: authenticationv1.UserInfo{Username: "system:serviceaccount:argocd:argocd-application-controller", Groups: []string{"system:serviceaccounts", "system:authenticated"}},
			Object:   runtime.RawExtension{Raw: obj},
			Options:  runtime.RawExtension{Raw: []byte(`{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","fieldManager":"kubectl"}`)},
			DryRun:   ptr.To(false),
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		b.Fatal(err)
	}
	return body
}
