package render

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// Test inputs. Addresses come from the documentation and benchmarking
// ranges; the primary Service sits in 198.19.0.0/16 as in the e2e cluster.

func meta(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "dns"} }

func ref(name string) *bindv1alpha1.LocalObjectReference {
	return &bindv1alpha1.LocalObjectReference{Name: name}
}

func addr(a string) bindv1alpha1.AddressMatchElement {
	return bindv1alpha1.AddressMatchElement{Address: a}
}
func builtin(b string) bindv1alpha1.AddressMatchElement {
	return bindv1alpha1.AddressMatchElement{Builtin: bindv1alpha1.BuiltinACL(b)}
}
func aclRef(n string) bindv1alpha1.AddressMatchElement {
	return bindv1alpha1.AddressMatchElement{ACLRef: n}
}
func keyRef(n string) bindv1alpha1.AddressMatchElement {
	return bindv1alpha1.AddressMatchElement{KeyRef: n}
}
func not(e bindv1alpha1.AddressMatchElement) bindv1alpha1.AddressMatchElement {
	e.Negate = true
	return e
}

// Fixed key material: valid base64, never used for anything real.
var (
	secret16 = "YmluZC1vcGVyYXRvci10ZXN0LWtleS0xNg=="                                                         // hmac-sha1
	secret28 = "YmluZC1vcGVyYXRvci10ZXN0LWtleS0yOC1ieXRlcw=="                                                 // hmac-sha224
	secret32 = "YmluZC1vcGVyYXRvci10ZXN0LWtleS0zMi1ieXRlcy0hIQ=="                                             // hmac-sha256
	secret48 = "YmluZC1vcGVyYXRvci10ZXN0LWtleS00OC1ieXRlcy1vZi1tYXRlcmlhbC0tLS0tLQ=="                         // hmac-sha384
	secret64 = "YmluZC1vcGVyYXRvci10ZXN0LWtleS02NC1ieXRlcy1vZi1tYXRlcmlhbC1mb3ItaG1hYy1zaGE1MTItLS0tLS0tLQ==" // hmac-sha512
)

// viewKeysFor gives every view the key the operator would generate (here
// fixed material).
func viewKeysFor(views []bindv1alpha1.BindView) map[string]TSIGKey {
	keys := map[string]TSIGKey{}
	for _, v := range views {
		keys[v.Name] = TSIGKey{Name: bindv1alpha1.ViewKeyName(v.Name), Algorithm: "hmac-sha256", Secret: secret32}
	}
	return keys
}

func controlKey() TSIGKey {
	return TSIGKey{Name: "rndc-control", Algorithm: "hmac-sha256", Secret: secret32}
}

func cluster(mode bindv1alpha1.ClusterMode) *bindv1alpha1.BindCluster {
	return &bindv1alpha1.BindCluster{
		ObjectMeta: meta("dns"),
		Spec: bindv1alpha1.BindClusterSpec{
			Mode:     mode,
			Replicas: ptr.To(int32(3)),
			Ports:    bindv1alpha1.ClusterPorts{DNS: 53, Agent: 8453, Metrics: 9119},
		},
	}
}

func primaryZone(obj, name string) bindv1alpha1.BindZone {
	return bindv1alpha1.BindZone{ObjectMeta: meta(obj), Spec: bindv1alpha1.BindZoneSpec{
		ClusterRef: bindv1alpha1.LocalObjectReference{Name: "dns"},
		ZoneName:   bindv1alpha1.DomainName(name),
		Type:       bindv1alpha1.ZonePrimary,
	}}
}

// scenarioAuthoritative: 3 replicas, a catalog, keyed transfers, dynamic
// zones and an external secondary zone.
func scenarioAuthoritative() Input {
	c := cluster(bindv1alpha1.ModeAuthoritative)
	c.Spec.AllowQuery = []bindv1alpha1.AddressMatchElement{builtin("any")}
	c.Spec.ExtraOptions = []string{"minimal-responses yes;", "max-cache-size 64m;"}
	z1 := primaryZone("example-com", "example.com")
	z1.Spec.CatalogZoneRef = ref("catalog")
	z1.Spec.UpdateKeyRef = ref("external-dns")
	z2 := primaryZone("example-org", "example.org.")
	z2.Spec.CatalogZoneRef = ref("catalog")
	// A hidden primary for two servers outside: one keyed, one by address.
	z2.Spec.ExternalSecondaries = []bindv1alpha1.RemoteServer{
		{Address: "192.0.2.80", Port: ptr.To(int32(5353)), KeyRef: ref("partner")},
		{Address: "2001:db8::80"},
	}
	sec := bindv1alpha1.BindZone{ObjectMeta: meta("partner"), Spec: bindv1alpha1.BindZoneSpec{
		ZoneName: "partner.example", Type: bindv1alpha1.ZoneSecondary,
		Primaries: []bindv1alpha1.RemoteServer{
			{Address: "192.0.2.53", KeyRef: ref("partner")},
			{Address: "2001:DB8::53", Port: ptr.To(int32(5353))},
		},
		AllowTransfer: []bindv1alpha1.AddressMatchElement{keyRef("partner")},
	}}
	return Input{
		Cluster:        c,
		PrimaryAddress: "198.19.10.53",
		ControlKey:     controlKey(),
		Keys: map[string]TSIGKey{
			"transfer":     {Name: "transfer.dns.", Algorithm: "hmac-sha256", Secret: secret32},
			"external-dns": {Name: "external-dns", Algorithm: "hmac-sha512", Secret: secret64},
			"partner":      {Name: "partner-xfr", Algorithm: "hmac-sha256", Secret: secret32},
		},
		Zones: []bindv1alpha1.BindZone{z1, z2, sec},
		Catalogs: []bindv1alpha1.BindCatalogZone{{ObjectMeta: meta("catalog"), Spec: bindv1alpha1.BindCatalogZoneSpec{
			ZoneName: "catalog.dns.internal", TransferKeyRef: bindv1alpha1.LocalObjectReference{Name: "transfer"},
		}}},
		Paths: DefaultPaths(),
	}
}

// scenarioResolver: a resolver with forwarders, forward and stub zones.
func scenarioResolver() Input {
	c := cluster(bindv1alpha1.ModeResolver)
	c.Spec.Replicas = ptr.To(int32(2))
	c.Spec.Recursion = &bindv1alpha1.RecursionSpec{
		AllowRecursion:   []bindv1alpha1.AddressMatchElement{aclRef("clients"), builtin("localhost")},
		Forwarders:       []bindv1alpha1.Forwarder{{Address: "198.18.0.1"}, {Address: "198.18.0.2", Port: ptr.To(int32(5353))}},
		ForwardPolicy:    bindv1alpha1.ForwardOnly,
		DNSSECValidation: "Auto",
	}
	c.Spec.QueryLog = true
	c.Spec.Tuning = bindv1alpha1.ReplicationTuning{NotifyDelay: ptr.To(int32(1)), SerialQueryRate: ptr.To(int32(500))}
	fwd := func(obj, name string, policy bindv1alpha1.ForwardPolicy, fw ...string) bindv1alpha1.BindZone {
		z := bindv1alpha1.BindZone{ObjectMeta: meta(obj), Spec: bindv1alpha1.BindZoneSpec{ZoneName: bindv1alpha1.DomainName(name), Type: bindv1alpha1.ZoneForward, ForwardPolicy: policy}}
		for _, a := range fw {
			z.Spec.Forwarders = append(z.Spec.Forwarders, bindv1alpha1.Forwarder{Address: a})
		}
		return z
	}
	stub := bindv1alpha1.BindZone{ObjectMeta: meta("corp-stub"), Spec: bindv1alpha1.BindZoneSpec{
		ZoneName: "corp.example", Type: bindv1alpha1.ZoneStub,
		Primaries: []bindv1alpha1.RemoteServer{{Address: "198.18.1.10"}},
	}}
	return Input{
		Cluster:    c,
		ControlKey: controlKey(),
		ACLs: []bindv1alpha1.BindACL{
			{ObjectMeta: meta("clients"), Spec: bindv1alpha1.BindACLSpec{Entries: []bindv1alpha1.AddressMatchElement{
				not(addr("198.18.99.0/24")), addr("198.18.0.0/15"), addr("2001:db8:1::/48"), aclRef("pods"),
			}}},
			{ObjectMeta: meta("pods"), Spec: bindv1alpha1.BindACLSpec{Entries: []bindv1alpha1.AddressMatchElement{addr("198.18.128.0/17")}}},
		},
		Zones: []bindv1alpha1.BindZone{
			fwd("cluster-local", "cluster.local", "", "198.19.0.10"),
			fwd("consul", "consul", bindv1alpha1.ForwardFirst, "198.18.2.1", "198.18.2.2"),
			fwd("reverse-10", "10.in-addr.arpa", bindv1alpha1.ForwardOnly, "198.19.0.10"),
			stub,
			// Forwarded to BindClusters: a signed zone (trust anchor), an
			// unsigned one (validate-except), and one that cluster does not
			// serve as a BindZone (validate-except).
			toCluster("example-com", "example.com", "authoritative"),
			toCluster("internal", "internal.example", "authoritative", "authoritative-2"),
			toCluster("elsewhere", "elsewhere.example", "authoritative-2"),
		},
		Forwardees: map[string]Forwardee{
			"authoritative": {Address: "198.19.0.53", Zones: map[string][]string{
				"example.com":      {"2371 13 2 c988ec423e3880eb8dd8a46fe06ca230ee23f35b578d3e5fd0e6e5ab4f2e0a4b", "60485 13 2 2AB0B2E0F4DE1A41F5B8C22CA5AD9C6F5CC3E1D9E8F44D5E2F9A7B5C3D1E0F9A"},
				"internal.example": nil,
			}},
			"authoritative-2": {Address: "198.19.0.54"},
		},
		Paths: DefaultPaths(),
	}
}

func toCluster(obj, name string, clusters ...string) bindv1alpha1.BindZone {
	z := bindv1alpha1.BindZone{ObjectMeta: meta(obj), Spec: bindv1alpha1.BindZoneSpec{ZoneName: bindv1alpha1.DomainName(name), Type: bindv1alpha1.ZoneForward}}
	for _, c := range clusters {
		z.Spec.Forwarders = append(z.Spec.Forwarders, bindv1alpha1.Forwarder{ClusterRef: ref(c)})
	}
	return z
}

// scenarioViews: split horizon, internal first, external second; a zone per
// view, keyed view selection, a policy in one view.
func scenarioViews() Input {
	c := cluster(bindv1alpha1.ModeAuthoritative)
	c.Spec.TransferKeyRef = ref("transfer")
	internal := bindv1alpha1.BindView{ObjectMeta: meta("internal"), Spec: bindv1alpha1.BindViewSpec{
		Order:        ptr.To[int32](10),
		MatchClients: []bindv1alpha1.AddressMatchElement{keyRef("internal-view"), aclRef("internal-nets")},
		Recursion:    ptr.To(true),
		AllowRecursion: []bindv1alpha1.AddressMatchElement{
			aclRef("internal-nets"),
		},
		Forwarders: []bindv1alpha1.Forwarder{{Address: "198.18.0.1"}},
	}}
	external := bindv1alpha1.BindView{ObjectMeta: meta("external"), Spec: bindv1alpha1.BindViewSpec{
		Order:             ptr.To[int32](100),
		MatchClients:      []bindv1alpha1.AddressMatchElement{builtin("any")},
		MatchDestinations: []bindv1alpha1.AddressMatchElement{not(addr("198.18.200.1")), builtin("any")},
		Recursion:         ptr.To(false),
	}}
	guest := bindv1alpha1.BindView{ObjectMeta: meta("guest"), Spec: bindv1alpha1.BindViewSpec{
		Order:              ptr.To[int32](10), // ties with internal: sorts by name, guest first
		MatchClients:       []bindv1alpha1.AddressMatchElement{addr("198.18.50.0/24")},
		MatchRecursiveOnly: true,
	}}
	zi := primaryZone("example-internal", "example.com")
	zi.Spec.ViewRef = ref("internal")
	ze := primaryZone("example-external", "example.com")
	ze.Spec.ViewRef = ref("external")
	fw := bindv1alpha1.BindZone{ObjectMeta: meta("corp"), Spec: bindv1alpha1.BindZoneSpec{
		ZoneName: "corp.example", Type: bindv1alpha1.ZoneForward, ViewRef: ref("internal"),
		Forwarders: []bindv1alpha1.Forwarder{{Address: "198.18.3.3"}},
	}}
	sec := bindv1alpha1.BindZone{ObjectMeta: meta("partner"), Spec: bindv1alpha1.BindZoneSpec{
		ZoneName: "partner.example", Type: bindv1alpha1.ZoneSecondary, ViewRef: ref("external"),
		Primaries: []bindv1alpha1.RemoteServer{{Address: "192.0.2.53"}},
	}}
	return Input{
		Cluster:        c,
		PrimaryAddress: "198.19.10.53",
		ControlKey:     controlKey(),
		Keys: map[string]TSIGKey{
			"transfer":      {Name: "transfer", Algorithm: "hmac-sha256", Secret: secret32},
			"internal-view": {Name: "internal-view", Algorithm: "hmac-sha384", Secret: secret48},
		},
		ACLs: []bindv1alpha1.BindACL{{ObjectMeta: meta("internal-nets"), Spec: bindv1alpha1.BindACLSpec{
			Entries: []bindv1alpha1.AddressMatchElement{addr("198.18.0.0/16"), builtin("localhost")},
		}}},
		Views:    []bindv1alpha1.BindView{external, internal, guest},
		ViewKeys: viewKeysFor([]bindv1alpha1.BindView{external, internal, guest}),
		Zones:    []bindv1alpha1.BindZone{zi, ze, fw, sec},
		Policies: []bindv1alpha1.BindPolicy{{ObjectMeta: meta("block"), Spec: bindv1alpha1.BindPolicySpec{
			ZoneName: "rpz.internal", ViewRef: ref("internal"), Order: ptr.To[int32](100),
			Rules: []bindv1alpha1.RPZRule{{Match: "ads.example", Trigger: bindv1alpha1.TriggerQName, Action: "NXDOMAIN"}},
		}}},
		Paths: DefaultPaths(),
	}
}

// scenarioRPZ: a resolver with two policies, every trigger and action.
func scenarioRPZ() Input {
	in := scenarioResolver()
	in.Zones = nil
	in.Policies = []bindv1alpha1.BindPolicy{
		{ObjectMeta: meta("threats"), Spec: bindv1alpha1.BindPolicySpec{
			ZoneName: "rpz.threats.internal", Order: ptr.To[int32](10), MaxPolicyTTL: ptr.To(int32(300)), BreakDNSSEC: true,
			Rules: []bindv1alpha1.RPZRule{
				{Match: "malware.example", Action: "NXDOMAIN"},
				{Match: "*.malware.example", Action: "NXDOMAIN"},
				{Match: "tracker.example", Trigger: bindv1alpha1.TriggerQName, Action: "NODATA"},
				{Match: "ok.malware.example", Action: "PASSTHRU"},
				{Match: "flood.example", Action: "DROP"},
				{Match: "big.example", Action: "TCPOnly"},
				{Match: "phish.example", Action: "Redirect", RedirectTo: "walled-garden.example"},
				{Match: "198.18.66.0/24", Trigger: bindv1alpha1.TriggerClientIP, Action: "DROP"},
				{Match: "2001:db8::/32", Trigger: bindv1alpha1.TriggerClientIP, Action: "PASSTHRU"},
				{Match: "192.0.2.66", Trigger: bindv1alpha1.TriggerResponseIP, Action: "NXDOMAIN"},
				{Match: "2001:db8:0:0:1::1", Trigger: bindv1alpha1.TriggerResponseIP, Action: "NODATA"},
				{Match: "ns.evil.example", Trigger: bindv1alpha1.TriggerNSDName, Action: "NXDOMAIN"},
				{Match: "198.51.100.0/24", Trigger: bindv1alpha1.TriggerNSIP, Action: "NXDOMAIN"},
			},
		}},
		{ObjectMeta: meta("audit"), Spec: bindv1alpha1.BindPolicySpec{
			ZoneName: "rpz.audit.internal", Order: ptr.To[int32](100), PolicyOverride: "Disabled", Log: ptr.To(true), QNameWaitRecurse: ptr.To(false),
			Rules: []bindv1alpha1.RPZRule{{Match: "*.example.net", Action: "NXDOMAIN"}},
		}},
		{ObjectMeta: meta("quiet"), Spec: bindv1alpha1.BindPolicySpec{
			ZoneName: "rpz.quiet.internal", Order: ptr.To[int32](100), Log: ptr.To(false),
		}},
		// A feed: every pod transfers it from the provider.
		{ObjectMeta: meta("feed"), Spec: bindv1alpha1.BindPolicySpec{
			ZoneName: "rpz.feed.example", Order: ptr.To[int32](200),
			Primaries: []bindv1alpha1.RemoteServer{{Address: "198.18.5.5"}, {Address: "198.18.5.6", Port: ptr.To(int32(5353))}},
		}},
	}
	return in
}

// scenarioDNSSEC: signed primary zones with two policies.
func scenarioDNSSEC() Input {
	in := scenarioAuthoritative()
	in.Zones[0].Spec.DNSSECPolicyRef = ref("ecdsa-csk")
	in.Zones[1].Spec.DNSSECPolicyRef = ref("rsa-split")
	in.DNSSECPolicies = []bindv1alpha1.BindDNSSECPolicy{
		{ObjectMeta: meta("rsa-split"), Spec: bindv1alpha1.BindDNSSECPolicySpec{
			Keys: []bindv1alpha1.DNSSECKey{
				{Role: "KSK", Algorithm: "rsasha256", KeySize: ptr.To(int32(2048)), Lifetime: "unlimited"},
				{Role: "ZSK", Algorithm: "rsasha256", KeySize: ptr.To(int32(2048)), Lifetime: "P90D"},
			},
			DNSKEYTTL: "1h", MaxZoneTTL: "P1D", PublishSafety: "PT1H", RetireSafety: "1h", PurgeKeys: "P90D",
			SignaturesRefresh: "5d", SignaturesValidity: "14d", SignaturesValidityDNSKEY: "14d",
			ZonePropagationDelay: "300", ParentDSTTL: "1d", ParentPropagationDelay: "1h",
		}},
		{ObjectMeta: meta("ecdsa-csk"), Spec: bindv1alpha1.BindDNSSECPolicySpec{
			Keys:  []bindv1alpha1.DNSSECKey{{Role: "CSK", Algorithm: "ecdsap256sha256"}},
			NSEC3: &bindv1alpha1.NSEC3Spec{Iterations: ptr.To(int32(0)), SaltLength: ptr.To(int32(0))},
		}},
		{ObjectMeta: meta("unused"), Spec: bindv1alpha1.BindDNSSECPolicySpec{
			Keys: []bindv1alpha1.DNSSECKey{{Role: "CSK", Algorithm: "ed25519"}},
		}},
	}
	return in
}

// scenarioTSIG: keys of every algorithm, used in ACLs, views of access and
// secondary zones; transferKeyRef set on the cluster.
func scenarioTSIG() Input {
	c := cluster(bindv1alpha1.ModeAuthoritative)
	c.Spec.TransferKeyRef = ref("xfr-sha512")
	c.Spec.Ports.DNS = 5353
	c.Spec.Tuning = bindv1alpha1.ReplicationTuning{
		NotifyDelay: ptr.To(int32(0)), NotifyRate: ptr.To(int32(2000)), StartupNotifyRate: ptr.To(int32(1500)),
		SerialQueryRate: ptr.To(int32(800)), CatalogMinUpdateInterval: ptr.To(int32(1)),
	}
	keys := map[string]TSIGKey{
		"k-sha1":     {Name: "k-sha1", Algorithm: "hmac-sha1", Secret: secret16},
		"k-sha224":   {Name: "k-sha224", Algorithm: "hmac-sha224", Secret: secret28},
		"k-sha256":   {Name: "k-sha256", Algorithm: "hmac-sha256", Secret: secret32},
		"k-sha384":   {Name: "k-sha384.example.", Algorithm: "hmac-sha384", Secret: secret48},
		"xfr-sha512": {Name: "xfr-sha512", Algorithm: "hmac-sha512", Secret: secret64},
		"pending":    {Name: "pending"}, // Secret not created yet: left out, unreferenced
	}
	sec := bindv1alpha1.BindZone{ObjectMeta: meta("upstream"), Spec: bindv1alpha1.BindZoneSpec{
		ZoneName: "upstream.example", Type: bindv1alpha1.ZoneSecondary,
		Primaries:  []bindv1alpha1.RemoteServer{{Address: "192.0.2.1", KeyRef: ref("k-sha1")}, {Address: "192.0.2.2", KeyRef: ref("k-sha224")}},
		AllowQuery: []bindv1alpha1.AddressMatchElement{keyRef("k-sha256"), not(builtin("none")), builtin("localnets")},
	}}
	z := primaryZone("example-com", "example.com")
	z.Spec.CatalogZoneRef = ref("catalog")
	return Input{
		Cluster:        c,
		PrimaryAddress: "2001:db8:ffff::53",
		PrimaryPort:    53,
		ControlKey:     controlKey(),
		Keys:           keys,
		ACLs: []bindv1alpha1.BindACL{{ObjectMeta: meta("signed"), Spec: bindv1alpha1.BindACLSpec{Entries: []bindv1alpha1.AddressMatchElement{
			keyRef("k-sha384"), keyRef("k-sha256"), not(addr("198.18.0.0/15")),
		}}}},
		Zones: []bindv1alpha1.BindZone{sec, z},
		Catalogs: []bindv1alpha1.BindCatalogZone{
			{ObjectMeta: meta("catalog"), Spec: bindv1alpha1.BindCatalogZoneSpec{
				ZoneName: "catalog.dns.internal", TransferKeyRef: bindv1alpha1.LocalObjectReference{Name: "xfr-sha512"},
			}},
			{ObjectMeta: meta("legacy"), Spec: bindv1alpha1.BindCatalogZoneSpec{
				ZoneName: "legacy-catalog.dns.internal", TransferKeyRef: bindv1alpha1.LocalObjectReference{Name: "k-sha256"},
				DefaultPrimaries: []bindv1alpha1.RemoteServer{{Address: "192.0.2.99", Port: ptr.To(int32(5300)), KeyRef: ref("k-sha256")}},
			}},
		},
		Paths: DefaultPaths(),
	}
}

var scenarios = []struct {
	name string
	in   func() Input
}{
	{"authoritative-catalog", scenarioAuthoritative},
	{"resolver-forward", scenarioResolver},
	{"views", scenarioViews},
	{"rpz", scenarioRPZ},
	{"dnssec", scenarioDNSSEC},
	{"tsig-algorithms", scenarioTSIG},
}
