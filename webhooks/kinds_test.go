package webhooks

import (
	"context"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

func TestDefaultIdempotent(t *testing.T) {
	ctx := context.Background()
	ws, err := newWebhooks(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	meta := metav1.ObjectMeta{Name: "x", Namespace: "ns"}
	ttl := v1alpha1.TTL(60)
	check := func(kind string, obj runtime.Object, def func()) {
		t.Helper()
		def()
		once := obj.DeepCopyObject()
		def()
		if !reflect.DeepEqual(once, obj) {
			t.Errorf("%s: default not idempotent:\n%+v\n%+v", kind, once, obj)
		}
	}
	c := &v1alpha1.BindCluster{ObjectMeta: meta, Spec: v1alpha1.BindClusterSpec{Mode: v1alpha1.ModeResolver, ExtraOptions: []string{" minimal-responses yes; "}}}
	check("BindCluster", c, func() { _ = ws.cluster.Default(ctx, c) })
	z := &v1alpha1.BindZone{ObjectMeta: meta, Spec: v1alpha1.BindZoneSpec{ZoneName: "Example.COM.", Records: []v1alpha1.RecordSet{
		{Name: "WWW.example.com.", Type: "A", Values: []string{"192.0.2.2", "192.0.2.1"}}, {Name: "www", Type: "A", TTL: &ttl, Values: []string{"192.0.2.1"}}, {Name: "@", Type: "MX", Values: []string{"10 MAIL"}}}}}
	check("BindZone", z, func() { _ = ws.zone.Default(ctx, z) })
	if z.Spec.ZoneName != "example.com" || len(z.Spec.Records) != 2 || z.Spec.Records[1].Name != "www" || *z.Spec.Records[1].TTL != 60 || z.Spec.Records[0].Values[0] != "10 mail.example.com." {
		t.Errorf("zone defaults: %+v", z.Spec)
	}
	r := &v1alpha1.DNSRecord{ObjectMeta: meta, Spec: v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.LocalObjectReference{Name: "z"}, Name: "WWW", Type: "a", Values: []string{"b", "a", "a"}}}
	check("DNSRecord", r, func() { _ = ws.record.Default(ctx, r) })
	zoneObj := &v1alpha1.BindZone{Spec: v1alpha1.BindZoneSpec{ZoneName: "example.com", DefaultTTL: &ttl}}
	r2 := &v1alpha1.DNSRecord{Spec: v1alpha1.DNSRecordSpec{Name: "Host.Example.com.", Type: "AAAA", Values: []string{"2001:DB8::1"}}}
	check("DNSRecord(zone)", r2, func() { defaultDNSRecord(r2, zoneObj) })
	if r2.Spec.Name != "host" || *r2.Spec.TTL != 60 || r2.Spec.Values[0] != "2001:db8::1" {
		t.Errorf("record defaults: %+v", r2.Spec)
	}
	k := &v1alpha1.BindTSIGKey{ObjectMeta: meta, Spec: v1alpha1.BindTSIGKeySpec{SecretTemplate: &v1alpha1.SecretTemplate{Labels: map[string]string{}}}}
	check("BindTSIGKey", k, func() { _ = ws.key.Default(ctx, k) })
	if k.Spec.SecretName != "x-tsig" || k.Spec.KeyName != "x" || k.Spec.Algorithm != "hmac-sha256" || k.Spec.SecretTemplate != nil {
		t.Errorf("key defaults: %+v", k.Spec)
	}
	v := &v1alpha1.BindView{ObjectMeta: meta, Spec: v1alpha1.BindViewSpec{MatchClients: []v1alpha1.AddressMatchElement{{Address: "2001:DB8::/32"}}}}
	check("BindView", v, func() { _ = ws.view.Default(ctx, v) })
	a := &v1alpha1.BindACL{ObjectMeta: meta, Spec: v1alpha1.BindACLSpec{Entries: []v1alpha1.AddressMatchElement{{Address: "2001:DB8:0::1"}}}}
	check("BindACL", a, func() { _ = ws.acl.Default(ctx, a) })
	cat := &v1alpha1.BindCatalogZone{ObjectMeta: meta, Spec: v1alpha1.BindCatalogZoneSpec{ZoneName: "Catalog.Example."}}
	check("BindCatalogZone", cat, func() { _ = ws.catalog.Default(ctx, cat) })
	p := &v1alpha1.BindPolicy{ObjectMeta: meta, Spec: v1alpha1.BindPolicySpec{ZoneName: "RPZ.", Rules: []v1alpha1.RPZRule{{Match: "Bad.Example.", Action: "NXDOMAIN"}}}}
	check("BindPolicy", p, func() { _ = ws.policy.Default(ctx, p) })
	d := &v1alpha1.BindDNSSECPolicy{ObjectMeta: meta, Spec: v1alpha1.BindDNSSECPolicySpec{Keys: []v1alpha1.DNSSECKey{{Role: "CSK", Algorithm: "rsasha256"}}}}
	check("BindDNSSECPolicy", d, func() { _ = ws.dnssec.Default(ctx, d) })
}

func TestPureValidators(t *testing.T) {
	bad := func(desc string, errs field.ErrorList, path, msg string) {
		t.Helper()
		for _, e := range errs {
			if e.Field == path && strings.Contains(e.Error(), msg) {
				return
			}
		}
		t.Errorf("%s: want %q at %s, got %v", desc, msg, path, errs)
	}
	sp := field.NewPath("spec")
	one := int32(20)
	bad("replicas", ValidateBindClusterSpec(&v1alpha1.BindClusterSpec{Image: "x", Replicas: &one}, sp), "spec.replicas", "between 1 and 15")
	bad("ports", ValidateBindClusterSpec(&v1alpha1.BindClusterSpec{Image: "x", Ports: v1alpha1.ClusterPorts{DNS: 53, Agent: 53, Metrics: 9}}, sp), "spec.ports.dns", "must differ")
	bad("host bits", ValidateAddressMatchList([]v1alpha1.AddressMatchElement{{Address: "10.0.0.1/8"}}, sp), "spec[0].address", "10.0.0.0/8")
	bad("zone records", ValidateBindZoneSpec(&v1alpha1.BindZoneSpec{ZoneName: "example.com", Records: []v1alpha1.RecordSet{{Name: "a", Type: "A", Values: []string{"::1"}}}}, sp), "spec.records[0].values[0]", "not valid A data")
	bad("soa retry", ValidateBindZoneSpec(&v1alpha1.BindZoneSpec{ZoneName: "example.com", SOA: &v1alpha1.SOASpec{Refresh: ptr(int32(10)), Retry: ptr(int32(20))}}, sp), "spec.soa.retry", "must not exceed refresh")
	bad("dnssec", ValidateBindDNSSECPolicySpec(&v1alpha1.BindDNSSECPolicySpec{SignaturesRefresh: "P20D", SignaturesValidity: "14d"}, sp), "spec.signaturesRefresh", "shorter than signaturesValidity")
	bad("rpz dup", ValidateBindPolicySpec(&v1alpha1.BindPolicySpec{ZoneName: "rpz", Rules: []v1alpha1.RPZRule{{Match: "a.example", Action: "DROP"}, {Match: "A.example.", Action: "DROP"}}}, sp), "spec.rules[1].match", "same QName rule")
	bad("acl self", ValidateBindACLSpec("me", &v1alpha1.BindACLSpec{Entries: []v1alpha1.AddressMatchElement{{ACLRef: "me"}}}, sp), "spec.entries[0].aclRef", "cannot include itself")
	bad("tsig label", ValidateBindTSIGKeySpec(&v1alpha1.BindTSIGKeySpec{SecretTemplate: &v1alpha1.SecretTemplate{Labels: map[string]string{"bind.unkin.net/x": "y"}}}, sp), "spec.secretTemplate.labels[bind.unkin.net/x]", "reserved")
	bad("record apex ns", ValidateDNSRecordSpec(&v1alpha1.DNSRecordSpec{Name: "@", Type: "NS", Values: []string{"ns1."}}, "example.com", sp), "spec.type", "apex NS")
	f := false
	bad("view fwd", ValidateBindViewSpec(&v1alpha1.BindViewSpec{Recursion: &f, Forwarders: []v1alpha1.Forwarder{{Address: "192.0.2.1"}}}, sp), "spec.forwarders", "only used while recursing")
	if cyc := findCycle(map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"a"}}, "a"); !reflect.DeepEqual(cyc, []string{"a", "b", "c", "a"}) {
		t.Errorf("cycle: %v", cyc)
	}
	for in, want := range map[string]string{"P90D": "2160h0m0s", "PT1H": "1h0m0s", "1h30m": "1h30m0s", "3600": "1h0m0s", "1w": "168h0m0s"} {
		d, err := ParseBINDDuration(in)
		if err != nil || d.String() != want {
			t.Errorf("%s: %v %v", in, d, err)
		}
	}
}
