package webhooks

import (
	"fmt"
	"testing"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

type badCase struct {
	desc  string
	obj   client.Object
	field string
	msg   string
}

func cluster(name string, mut func(*v1alpha1.BindClusterSpec)) client.Object {
	c := &v1alpha1.BindCluster{ObjectMeta: meta(name)}
	mut(&c.Spec)
	return c
}

func opts(o ...string) client.Object {
	return cluster("bad-cluster", func(s *v1alpha1.BindClusterSpec) { s.ExtraOptions = o })
}

func zone(mut func(*v1alpha1.BindZoneSpec)) client.Object {
	z := &v1alpha1.BindZone{ObjectMeta: meta("bad-zone"), Spec: v1alpha1.BindZoneSpec{ClusterRef: ref("auth"), ZoneName: "bad.example.com"}}
	mut(&z.Spec)
	return z
}

func recs(typ v1alpha1.RecordType, values ...string) client.Object {
	return zone(func(s *v1alpha1.BindZoneSpec) {
		s.Records = []v1alpha1.RecordSet{{Name: "x", Type: typ, Values: values}}
	})
}

func record(zoneRef, name string, typ v1alpha1.RecordType, values ...string) client.Object {
	return &v1alpha1.DNSRecord{ObjectMeta: meta("bad-record"), Spec: v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: zoneRef}, Name: v1alpha1.RecordName(name), Type: typ, Values: values}}
}

func key(mut func(*v1alpha1.BindTSIGKeySpec)) client.Object {
	k := &v1alpha1.BindTSIGKey{ObjectMeta: meta("bad-key")}
	mut(&k.Spec)
	return k
}

func view(clusterName string, mut func(*v1alpha1.BindViewSpec)) client.Object {
	v := &v1alpha1.BindView{ObjectMeta: meta("bad-view"), Spec: v1alpha1.BindViewSpec{ClusterRef: ref(clusterName), MatchClients: []v1alpha1.AddressMatchElement{{Builtin: "any"}}}}
	mut(&v.Spec)
	return v
}

func acl(name string, entries ...v1alpha1.AddressMatchElement) client.Object {
	return &v1alpha1.BindACL{ObjectMeta: meta(name), Spec: v1alpha1.BindACLSpec{Entries: entries}}
}

func policy(mut func(*v1alpha1.BindPolicySpec)) client.Object {
	p := &v1alpha1.BindPolicy{ObjectMeta: meta("bad-policy"), Spec: v1alpha1.BindPolicySpec{ClusterRef: ref("res"), ZoneName: "rpz2.example.internal"}}
	mut(&p.Spec)
	return p
}

func dnssec(mut func(*v1alpha1.BindDNSSECPolicySpec)) client.Object {
	p := &v1alpha1.BindDNSSECPolicy{ObjectMeta: meta("bad-dnssec"), Spec: v1alpha1.BindDNSSECPolicySpec{Keys: []v1alpha1.DNSSECKey{{Role: "CSK", Algorithm: "ecdsap256sha256"}}}}
	mut(&p.Spec)
	return p
}

func addr(a string) v1alpha1.AddressMatchElement { return v1alpha1.AddressMatchElement{Address: a} }

var badCases = []badCase{
	// BindCluster: config injection through extraOptions.
	{"zone injection", opts(`zone "evil" { type primary; file "/etc/passwd"; };`), "spec.extraOptions[0]", "create a BindZone"},
	{"block escape", opts(`}; zone "x" { type primary; }; options {`), "spec.extraOptions[0]", "starts with an option name"},
	{"include", opts(`include "/etc/bind/rndc.key";`), "spec.extraOptions[0]", "owns every file"},
	{"nested include", opts(`also-notify { include "/x"; };`), "spec.extraOptions[0]", "`include`"},
	{"comment //", opts(`minimal-responses yes; // }; zone`), "spec.extraOptions[0]", "comments"},
	{"comment #", opts(`minimal-responses yes; # x`), "spec.extraOptions[0]", "comments"},
	{"comment /*", opts(`minimal-responses /* x */ yes;`), "spec.extraOptions[0]", "comments"},
	{"two statements", opts(`minimal-responses yes; recursion yes;`), "spec.extraOptions[0]", "more than one statement"},
	{"unbalanced", opts(`allow-notify { key "x"; ;`), "spec.extraOptions[0]", "unbalanced"},
	{"no semicolon", opts(`minimal-responses yes`), "spec.extraOptions[0]", "must end with `;`"},
	{"quote trick", opts(`version "a\"; }; zone \"x";`), "spec.extraOptions[0]", "backslashes"},
	{"controls", opts(`controls { inet 127.0.0.1 allow { any; }; };`), "spec.extraOptions[0]", "address and port"},
	{"logging", opts(`logging { category default { null; }; };`), "spec.extraOptions[0]", "logging"},
	{"key", opts(`key "k" { algorithm hmac-sha256; secret "aGk="; };`), "spec.extraOptions[0]", "BindTSIGKey"},
	{"dump-file", opts(`dump-file "/etc/passwd";`), "spec.extraOptions[0]", "names a file or directory"},
	{"directory", opts(`directory "/tmp";`), "spec.extraOptions[0]", "names a file or directory"},
	{"owned option", opts(`notify-delay 5;`), "spec.extraOptions[0]", "spec.tuning.notifyDelay"},
	{"duplicate option", opts(`minimal-responses yes;`, `minimal-responses no;`), "spec.extraOptions[1]", "each option once"},
	// BindCluster: extraOptions is an allowlist (api/v1alpha1/extraoptions.go).
	{"dnstap to a file", opts(`minimal-responses yes;`, `dnstap-output file "/var/cache/bind/tap";`), "spec.extraOptions[1]", "dnstap writes every query"},
	{"tkey keytab", opts(`tkey-gssapi-keytab "/etc/krb5.keytab";`), "spec.extraOptions[0]", "keys come only from BindTSIGKeys"},
	{"listener on the rndc port", opts(`listen-on port 953 { any; };`), "spec.extraOptions[0]", "address and port"},
	{"pod CIDR in also-notify", opts(`also-notify { 198.18.200.1; };`), "spec.extraOptions[0]", "not on the allowlist"},
	{"open dynamic updates", opts(`allow-update { any; };`), "spec.extraOptions[0]", "spec.updateKeyRef"},
	{"open transfers", opts(`allow-transfer { any; };`), "spec.extraOptions[0]", "TSIG key only"},
	{"unknown option", opts(`frobnicate yes;`), "spec.extraOptions[0]", "not on the allowlist"},
	// BindCluster: allowed statements BIND refuses (named-checkconf in the webhook).
	{"bad size", opts(`max-cache-size lots;`), "spec.extraOptions[0]", "named-checkconf says \"/etc/bind-operator/config/named.conf.primary:"},
	{"unknown rate-limit knob", opts(`version none;`, `rate-limit { frobnicate 1; };`), "spec.extraOptions[1]", "unknown option 'frobnicate'"},
	{"bad boolean", opts(`minimal-responses maybe;`), "spec.extraOptions[0]", "boolean expected near 'maybe'"},
	// BindCluster: structure.
	{"ports clash", cluster("bad-cluster", func(s *v1alpha1.BindClusterSpec) { s.Ports = v1alpha1.ClusterPorts{DNS: 8453} }), "spec.ports.dns", "must differ"},
	{"reserved pod annotation", cluster("bad-cluster", func(s *v1alpha1.BindClusterSpec) {
		s.PodAnnotations = map[string]string{v1alpha1.AnnotationConfigHash: "x"}
	}), "spec.podAnnotations[" + v1alpha1.AnnotationConfigHash + "]", "reserved"},
	{"reserved service label", cluster("bad-cluster", func(s *v1alpha1.BindClusterSpec) {
		s.QueryService.Labels = map[string]string{v1alpha1.LabelCluster: "x"}
	}), "spec.queryService.labels[" + v1alpha1.LabelCluster + "]", "reserved"},
	{"allowQuery host bits", cluster("bad-cluster", func(s *v1alpha1.BindClusterSpec) { s.AllowQuery = []v1alpha1.AddressMatchElement{addr("10.0.0.1/8")} }), "spec.allowQuery[0].address", "10.0.0.0/8"},
	{"forward only without forwarders", cluster("bad-cluster", func(s *v1alpha1.BindClusterSpec) {
		s.Mode = v1alpha1.ModeResolver
		s.Recursion = &v1alpha1.RecursionSpec{ForwardPolicy: v1alpha1.ForwardOnly}
	}), "spec.recursion.forwardPolicy", "at least one forwarder"},
	{"duplicate forwarders", cluster("bad-cluster", func(s *v1alpha1.BindClusterSpec) {
		s.Mode = v1alpha1.ModeResolver
		s.Recursion = &v1alpha1.RecursionSpec{Forwarders: []v1alpha1.Forwarder{{Address: "2001:db8::1"}, {Address: "2001:DB8:0::1"}}}
	}), "spec.recursion.forwarders[1]", "Duplicate"},

	// BindZone: record data per type.
	{"A holds IPv6", recs("A", "2001:db8::1"), "spec.records[0].values[0]", "not valid A data"},
	{"AAAA holds IPv4", recs("AAAA", "192.0.2.1"), "spec.records[0].values[0]", "not valid AAAA data"},
	{"MX without preference", recs("MX", "mail.example.com."), "spec.records[0].values[0]", "not valid MX data"},
	{"SRV short", recs("SRV", "10 5 sip.example.com."), "spec.records[0].values[0]", "not valid SRV data"},
	{"CAA bad flag", recs("CAA", `x issue "ca.example"`), "spec.records[0].values[0]", "not valid CAA data"},
	{"NS trailing data", recs("NS", "ns1.example.com. extra"), "spec.records[0].values[0]", "not valid NS data"},
	{"in-zone MNAME without an address", zone(func(s *v1alpha1.BindZoneSpec) {
		s.SOA = &v1alpha1.SOASpec{PrimaryNameServer: "ns1.bad.example.com"}
	}), "spec.soa.primaryNameServer", "lies inside the zone, so BIND needs its address"},
	{"PTR trailing data", recs("PTR", "a.example. b.example."), "spec.records[0].values[0]", "not valid PTR data"},
	{"DS short", recs("DS", "12345 13 2"), "spec.records[0].values[0]", "not valid DS data"},
	{"TLSA words", recs("TLSA", "a b c d"), "spec.records[0].values[0]", "not valid TLSA data"},
	{"SSHFP words", recs("SSHFP", "x y z"), "spec.records[0].values[0]", "not valid SSHFP data"},
	{"HTTPS bad priority", recs("HTTPS", "x . alpn=h2"), "spec.records[0].values[0]", "not valid HTTPS data"},
	{"SVCB bad priority", recs("SVCB", "y svc.example."), "spec.records[0].values[0]", "not valid SVCB data"},
	{"CNAME two names", recs("CNAME", "a.example. b.example."), "spec.records[0].values[0]", "not valid CNAME data"},
	{"TXT newline", recs("TXT", "a\nevil IN A 192.0.2.66"), "spec.records[0].values[0]", "control character"},
	// BindZone: names and rules between sets.
	{"name outside zone", zone(func(s *v1alpha1.BindZoneSpec) {
		s.Records = []v1alpha1.RecordSet{{Name: "www.example.org.", Type: "A", Values: []string{"192.0.2.1"}}}
	}), "spec.records[0].name", "outside the zone"},
	{"CNAME beside A", zone(func(s *v1alpha1.BindZoneSpec) {
		s.Records = []v1alpha1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.1"}}, {Name: "WWW", Type: "CNAME", Values: []string{"x.example.org."}}}
	}), "spec.records[1].name", "cannot coexist"},
	{"DS at apex", zone(func(s *v1alpha1.BindZoneSpec) {
		s.Records = []v1alpha1.RecordSet{{Name: "@", Type: "DS", Values: []string{"12345 13 2 49FD46E6C4B45C55D4AC69CBD3CD34AC1AFE51DE9A5B2F5BA6D5D4A3C0E2D1F0"}}}
	}), "spec.records[0].type", "parent zone"},
	{"below delegation", zone(func(s *v1alpha1.BindZoneSpec) {
		s.Records = []v1alpha1.RecordSet{{Name: "sub", Type: "NS", Values: []string{"ns.example.org."}}, {Name: "www.sub", Type: "TXT", Values: []string{"hi"}}}
	}), "spec.records[1].name", "below the delegation"},
	{"SOA retry above refresh", zone(func(s *v1alpha1.BindZoneSpec) {
		s.SOA = &v1alpha1.SOASpec{Refresh: ptr.To(int32(60)), Retry: ptr.To(int32(600))}
	}), "spec.soa.retry", "must not exceed refresh"},
	{"allowTransfer host bits", zone(func(s *v1alpha1.BindZoneSpec) { s.AllowTransfer = []v1alpha1.AddressMatchElement{addr("192.0.2.1/24")} }), "spec.allowTransfer[0].address", "192.0.2.0/24"},
	// BindZone: other objects.
	{"Forward zone on Authoritative cluster", zone(func(s *v1alpha1.BindZoneSpec) {
		s.Type = v1alpha1.ZoneForward
		s.Forwarders = []v1alpha1.Forwarder{{Address: "192.0.2.53"}}
	}), "spec.type", "Authoritative"},
	{"view of another cluster", zone(func(s *v1alpha1.BindZoneSpec) { s.ViewRef = &v1alpha1.LocalObjectReference{Name: "internal"} }), "spec.viewRef.name", "belongs to cluster"},
	{"cluster with views needs viewRef", zone(func(s *v1alpha1.BindZoneSpec) { s.ClusterRef = ref("viewed") }), "spec.viewRef", "has views"},
	{"zone served twice", zone(func(s *v1alpha1.BindZoneSpec) { s.ZoneName = "Example.COM." }), "spec.zoneName", "already served"},
	{"zone name of a catalog", zone(func(s *v1alpha1.BindZoneSpec) { s.ZoneName = "catalog.example.internal" }), "spec.zoneName", "BindCatalogZone"},
	{"catalog of another cluster", zone(func(s *v1alpha1.BindZoneSpec) { s.CatalogZoneRef = &v1alpha1.LocalObjectReference{Name: "cat-res"} }), "spec.catalogZoneRef.name", "belongs to cluster"},

	// DNSRecord.
	{"record bad A", record("example", "api", "A", "not-an-ip"), "spec.values[0]", "not valid A data"},
	{"record bad MX", record("example", "api", "MX", "mail"), "spec.values[0]", "not valid MX data"},
	{"record in Forward zone", record("fwd", "api", "A", "192.0.2.1"), "spec.zoneRef.name", "Primary zones"},
	{"record duplicates inline set", record("example", "WWW", "A", "192.0.2.9"), "spec.name", "already declared"},
	{"record CNAME beside inline A", record("example", "www", "CNAME", "elsewhere.example.org."), "spec.type", "cannot coexist"},
	{"record A beside inline CNAME", record("example", "alias", "A", "192.0.2.9"), "spec.type", "cannot coexist"},
	{"record outside zone", record("example", "api.example.org.", "A", "192.0.2.1"), "spec.name", "outside the zone"},

	// BindTSIGKey.
	{"reserved key name", key(func(s *v1alpha1.BindTSIGKeySpec) { s.KeyName = "rndc-key" }), "spec.keyName", "reserved"},
	{"view key name", key(func(s *v1alpha1.BindTSIGKeySpec) { s.KeyName = "bind-operator-view-inside" }), "spec.keyName", `key names starting with "bind-operator-view-" are reserved`},
	{"reserved template label", key(func(s *v1alpha1.BindTSIGKeySpec) {
		s.SecretTemplate = &v1alpha1.SecretTemplate{Labels: map[string]string{"bind.unkin.net/x": "y"}}
	}), "spec.secretTemplate.labels[bind.unkin.net/x]", "reserved"},
	{"bad template label value", key(func(s *v1alpha1.BindTSIGKeySpec) {
		s.SecretTemplate = &v1alpha1.SecretTemplate{Labels: map[string]string{"team": "has space"}}
	}), "spec.secretTemplate.labels[team]", "label value"},
	{"bad template annotation key", key(func(s *v1alpha1.BindTSIGKeySpec) {
		s.SecretTemplate = &v1alpha1.SecretTemplate{Annotations: map[string]string{"bad key!": "y"}}
	}), "spec.secretTemplate.annotations[bad key!]", "annotation key"},
	{"Secret shared with another key", key(func(s *v1alpha1.BindTSIGKeySpec) { s.SecretName = "xfr-tsig" }), "spec.secretName", "already used by BindTSIGKey"},

	// BindView.
	{"recursion on Authoritative", view("auth", func(s *v1alpha1.BindViewSpec) { s.Recursion = ptr.To(true) }), "spec.recursion", "Authoritative"},
	{"forwarders without recursion", view("res", func(s *v1alpha1.BindViewSpec) {
		s.Recursion = ptr.To(false)
		s.Forwarders = []v1alpha1.Forwarder{{Address: "192.0.2.53"}}
	}), "spec.forwarders", "only used while recursing"},
	{"forwarders on Authoritative", view("auth", func(s *v1alpha1.BindViewSpec) { s.Forwarders = []v1alpha1.Forwarder{{Address: "192.0.2.53"}} }), "spec.forwarders", "Authoritative"},
	{"view host bits", view("res", func(s *v1alpha1.BindViewSpec) {
		s.MatchClients = []v1alpha1.AddressMatchElement{addr("2001:db8::1/32")}
	}), "spec.matchClients[0].address", "2001:db8::/32"},

	// BindACL.
	{"ACL includes itself", acl("selfish", v1alpha1.AddressMatchElement{ACLRef: "selfish"}), "spec.entries[0].aclRef", "cannot include itself"},
	{"ACL loop", acl("loop-a", v1alpha1.AddressMatchElement{ACLRef: "loop-b"}), "spec.entries", "loop"},
	{"ACL host bits", acl("bits", addr("198.18.0.1/15")), "spec.entries[0].address", "198.18.0.0/15"},
	{"ACL duplicate", acl("dups", addr("192.0.2.1"), addr("192.0.2.1")), "spec.entries[1]", "Duplicate"},

	// BindCatalogZone.
	{"catalog named like a zone", &v1alpha1.BindCatalogZone{ObjectMeta: meta("bad-cat"), Spec: v1alpha1.BindCatalogZoneSpec{ClusterRef: ref("auth"), ZoneName: "example.com.", TransferKeyRef: ref("xfr")}}, "spec.zoneName", "BindZone"},
	{"catalog duplicate primaries", &v1alpha1.BindCatalogZone{ObjectMeta: meta("bad-cat"), Spec: v1alpha1.BindCatalogZoneSpec{ClusterRef: ref("auth"), ZoneName: "cat2.example.internal", TransferKeyRef: ref("xfr"),
		DefaultPrimaries: []v1alpha1.RemoteServer{{Address: "192.0.2.1"}, {Address: "192.0.2.1", Port: ptr.To(int32(53))}}}}, "spec.defaultPrimaries[1]", "Duplicate"},

	// BindPolicy.
	{"policy rules equal once canonical", policy(func(s *v1alpha1.BindPolicySpec) {
		s.Rules = []v1alpha1.RPZRule{{Match: "ads.example", Action: "NXDOMAIN"}, {Match: "ADS.example.", Action: "DROP"}}
	}), "spec.rules[1]", "Duplicate"},
	{"policy prefix host bits", policy(func(s *v1alpha1.BindPolicySpec) {
		s.Rules = []v1alpha1.RPZRule{{Match: "192.0.2.1/24", Trigger: v1alpha1.TriggerClientIP, Action: "DROP"}}
	}), "spec.rules[0].match", "192.0.2.0/24"},
	{"policy view of another cluster", policy(func(s *v1alpha1.BindPolicySpec) { s.ViewRef = &v1alpha1.LocalObjectReference{Name: "internal"} }), "spec.viewRef.name", "belongs to cluster"},
	{"policy zone name taken", policy(func(s *v1alpha1.BindPolicySpec) { s.ZoneName = "corp.internal" }), "spec.zoneName", "already served"},

	// BindDNSSECPolicy.
	{"signatures refreshed after expiry", dnssec(func(s *v1alpha1.BindDNSSECPolicySpec) { s.SignaturesRefresh, s.SignaturesValidity = "P20D", "P14D" }), "spec.signaturesRefresh", "shorter than signaturesValidity"},
	{"DNSKEY signatures refreshed after expiry", dnssec(func(s *v1alpha1.BindDNSSECPolicySpec) { s.SignaturesRefresh, s.SignaturesValidityDNSKEY = "5d", "4d" }), "spec.signaturesRefresh", "signaturesValidityDNSKEY"},
	{"key lifetime shorter than one rollover", dnssec(func(s *v1alpha1.BindDNSSECPolicySpec) { s.Keys[0].Lifetime = "PT5M" }), "spec.keys", "key lifetime is shorter than the time it takes to do a rollover"},
}

// TestBadObjects creates every bad object through the API server and
// asserts the 422, the field path and the message.
func TestBadObjects(t *testing.T) {
	fixtures(t)
	kinds := map[string]int{}
	for _, tc := range badCases {
		kinds[fmt.Sprintf("%T", tc.obj)]++
		t.Run(tc.desc, func(t *testing.T) {
			expectInvalid(t, k8sClient.Create(ctx, tc.obj.DeepCopyObject().(client.Object)), tc.field, tc.msg)
		})
	}
	if len(badCases) < 50 || len(kinds) != 9 {
		t.Fatalf("%d bad cases over %d kinds; want at least 50 over all 9", len(badCases), len(kinds))
	}
	t.Logf("%d bad cases over %d kinds", len(badCases), len(kinds))
}
