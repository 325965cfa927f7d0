package webhooks

import (
	"context"
	"fmt"
	"net/netip"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
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
