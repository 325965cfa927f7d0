package render

import (
	"context"
	"strings"
	"testing"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestRenderErrors: input that would make named refuse the config, or
// that could inject statements, fails Render with a sentence naming the
// object and what to do.
func TestRenderErrors(t *testing.T) {
	cases := []renderErrorCase{
		{"missing key material", func(in *Input) {
			k := in.Keys["transfer"]
			k.Secret = ""
			in.Keys["transfer"] = k
		}, `references BindTSIGKey "transfer", whose material is missing`},
		{"unknown key", func(in *Input) { in.Zones[0].Spec.UpdateKeyRef = ref("nope") }, `BindZone example-com spec.updateKeyRef references BindTSIGKey "nope", which does not exist`},
		{"catalog without primary address", func(in *Input) { in.PrimaryAddress = "" }, "primary Service has none yet"},
		{"pod-ish hostname as primary address", func(in *Input) { in.PrimaryAddress = "dns-0.dns" }, "is not an IP address"},
		{"zone without view while views exist", func(in *Input) {
			in.Catalogs = nil
			in.Zones[0].Spec.CatalogZoneRef = nil
			in.Zones[1].Spec.CatalogZoneRef = nil
			in.Views = []bindv1alpha1.BindView{{ObjectMeta: meta("v"), Spec: bindv1alpha1.BindViewSpec{MatchClients: []bindv1alpha1.AddressMatchElement{builtin("any")}}}}
			in.ViewKeys = viewKeysFor(in.Views)
		}, "has no viewRef, but the cluster has views"},
		{"unknown view", func(in *Input) { in.Zones[2].Spec.ViewRef = ref("ghost") }, `names BindView "ghost", which does not exist`},
		// Names arrive canonical (the webhooks store them so), so one zone
		// has one spelling here.
		{"duplicate zone", func(in *Input) { in.Zones = append(in.Zones, primaryZone("again", "example.com")) }, "BindZone again and BindZone example-com both declare zone example.com"},
		{"zone clashes with catalog", func(in *Input) { in.Zones = append(in.Zones, primaryZone("cat", "catalog.dns.internal")) }, "BindCatalogZone catalog and BindZone cat both declare"},
		{"missing dnssec policy", func(in *Input) { in.Zones[0].Spec.DNSSECPolicyRef = ref("gone") }, `BindDNSSECPolicy "gone", which does not exist`},
		{"unknown acl", func(in *Input) {
			in.Cluster.Spec.AllowQuery = []bindv1alpha1.AddressMatchElement{aclRef("nets")}
		}, `BindCluster spec.allowQuery[0] references BindACL "nets"`},
		{"acl loop", func(in *Input) {
			in.ACLs = []bindv1alpha1.BindACL{
				{ObjectMeta: meta("a"), Spec: bindv1alpha1.BindACLSpec{Entries: []bindv1alpha1.AddressMatchElement{aclRef("b")}}},
				{ObjectMeta: meta("b"), Spec: bindv1alpha1.BindACLSpec{Entries: []bindv1alpha1.AddressMatchElement{aclRef("a")}}},
			}
		}, "loop (a -> b -> a)"},
		{"injected key name", func(in *Input) {
			in.Keys["transfer"] = TSIGKey{Name: `x"; }; include "/etc/shadow`, Algorithm: "hmac-sha256", Secret: secret32}
		}, `BindTSIGKey transfer name "x\"; }; include \"/etc/shadow" contains '"', which cannot appear in named.conf`},
		{"key name with space", func(in *Input) {
			in.Keys["transfer"] = TSIGKey{Name: "a b", Algorithm: "hmac-sha256", Secret: secret32}
		}, `BindTSIGKey transfer name "a b" contains whitespace`},
		{"injected zone name", func(in *Input) { in.Zones[2].Spec.ZoneName = "x{y" }, `BindZone partner zone name "x{y" contains '{', which cannot appear in named.conf`},
		{"acl without entries", func(in *Input) {
			in.ACLs = []bindv1alpha1.BindACL{{ObjectMeta: meta("empty")}}
		}, "BindACL empty has no entries"},
		{"acl entry names a missing key", func(in *Input) {
			in.ACLs = []bindv1alpha1.BindACL{{ObjectMeta: meta("nets"), Spec: bindv1alpha1.BindACLSpec{Entries: []bindv1alpha1.AddressMatchElement{addr("198.18.0.0/24"), keyRef("ghost")}}}}
		}, `BindACL nets spec.entries[1] references BindTSIGKey "ghost", which does not exist`},
		{"forwarder that is no address", func(in *Input) {
			in.Zones = append(in.Zones, bindv1alpha1.BindZone{ObjectMeta: meta("fwd"), Spec: bindv1alpha1.BindZoneSpec{
				ZoneName: "fwd.example", Type: bindv1alpha1.ZoneForward,
				Forwarders: []bindv1alpha1.Forwarder{{Address: "198.18.0.1"}, {Address: "resolver.example"}},
			}})
		}, `BindZone fwd spec.forwarders[1] address "resolver.example" is not an IP address`},
		{"unknown zone type", func(in *Input) { in.Zones[1].Spec.Type = "Hint" }, `BindZone example-org has unknown type "Hint"`},
		{"bad algorithm", func(in *Input) {
			in.Keys["transfer"] = TSIGKey{Name: "t", Algorithm: "hmac-md5", Secret: secret32}
		}, "hmac-sha1, hmac-sha224"},
		{"bad material", func(in *Input) {
			in.Keys["transfer"] = TSIGKey{Name: "t", Algorithm: "hmac-sha256", Secret: "not base64!"}
		}, `BindTSIGKey transfer "t" has material that is not valid base64`},
		{"control key clash", func(in *Input) {
			in.Keys["transfer"] = TSIGKey{Name: "rndc-control", Algorithm: "hmac-sha256", Secret: secret32}
		}, "of the rndc control key"},
		{"two keys one name", func(in *Input) {
			in.Keys["partner"] = TSIGKey{Name: "transfer.dns.", Algorithm: "hmac-sha512", Secret: secret64}
		}, `BindTSIGKeys partner and transfer both define BIND key "transfer.dns." with different material`},
		{"catalog with views", func(in *Input) {
			in.Views = []bindv1alpha1.BindView{{ObjectMeta: meta("v"), Spec: bindv1alpha1.BindViewSpec{MatchClients: []bindv1alpha1.AddressMatchElement{builtin("any")}}}}
			in.ViewKeys = viewKeysFor(in.Views)
		}, "cannot be used while the cluster has views"},
		{"contradicting rpz rules", func(in *Input) {
			in.Policies = []bindv1alpha1.BindPolicy{{ObjectMeta: meta("p"), Spec: bindv1alpha1.BindPolicySpec{ZoneName: "rpz", Rules: []bindv1alpha1.RPZRule{
				{Match: "198.18.0.1", Trigger: bindv1alpha1.TriggerClientIP, Action: "DROP"},
				{Match: "198.18.0.1/32", Trigger: bindv1alpha1.TriggerClientIP, Action: "PASSTHRU"},
			}}}}
		}, "matches the same thing as an earlier rule"},
		{"view without its key", func(in *Input) {
			in.Catalogs = nil
			in.Views = []bindv1alpha1.BindView{{ObjectMeta: meta("v"), Spec: bindv1alpha1.BindViewSpec{MatchClients: []bindv1alpha1.AddressMatchElement{builtin("any")}}}}
		}, "the key of BindView v has not been generated yet"},
		{"view key named otherwise", func(in *Input) {
			in.Catalogs = nil
			in.Views = []bindv1alpha1.BindView{{ObjectMeta: meta("v"), Spec: bindv1alpha1.BindViewSpec{MatchClients: []bindv1alpha1.AddressMatchElement{builtin("any")}}}}
			in.ViewKeys = map[string]TSIGKey{"v": {Name: "transfer", Algorithm: "hmac-sha256", Secret: secret32}}
		}, `is named "transfer" instead of "bind-operator-view-v"`},
		{"user key takes a view key's name", func(in *Input) {
			in.Catalogs = nil
			in.Views = []bindv1alpha1.BindView{{ObjectMeta: meta("v"), Spec: bindv1alpha1.BindViewSpec{MatchClients: []bindv1alpha1.AddressMatchElement{builtin("any")}}}}
			in.ViewKeys = viewKeysFor(in.Views)
			in.Keys["partner"] = TSIGKey{Name: "bind-operator-view-v", Algorithm: "hmac-sha256", Secret: secret32}
		}, `a BindTSIGKey uses the key name "bind-operator-view-v"`},
		{"update key in two views", func(in *Input) {
			in.Catalogs = nil
			in.Views = []bindv1alpha1.BindView{
				{ObjectMeta: meta("a"), Spec: bindv1alpha1.BindViewSpec{MatchClients: []bindv1alpha1.AddressMatchElement{addr("198.18.1.0/24")}}},
				{ObjectMeta: meta("b"), Spec: bindv1alpha1.BindViewSpec{MatchClients: []bindv1alpha1.AddressMatchElement{builtin("any")}}},
			}
			in.ViewKeys = viewKeysFor(in.Views)
			in.Zones = []bindv1alpha1.BindZone{
				{ObjectMeta: meta("in-a"), Spec: bindv1alpha1.BindZoneSpec{ZoneName: "example.com", Type: bindv1alpha1.ZonePrimary, ViewRef: ref("a"), UpdateKeyRef: ref("transfer")}},
				{ObjectMeta: meta("in-b"), Spec: bindv1alpha1.BindZoneSpec{ZoneName: "example.com", Type: bindv1alpha1.ZonePrimary, ViewRef: ref("b"), UpdateKeyRef: ref("transfer")}},
			}
		}, `BindZone in-b uses update key "transfer.dns." in BindView b, but zones of BindView a use it too`},
		{"multi-line extra option", func(in *Input) {
			in.Cluster.Spec.ExtraOptions = []string{"a yes;\n}; zone \"x\" {"}
		}, "spanning several lines"},
	}
	runRenderErrors(t, cases, func(t *testing.T, err error, _, want string) {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	})
}

// renderErrorCase is the authoritative scenario broken by mutate, and
// what Render must answer.
type renderErrorCase struct {
	name   string
	mutate func(*Input)
	want   string
}

// runRenderErrors renders each case, which must fail, and hands its error
// and the cluster's name to check.
func runRenderErrors(t *testing.T, cases []renderErrorCase, check func(t *testing.T, err error, cluster, want string)) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := scenarioAuthoritative()
			tc.mutate(&in)
			_, err := Render(in)
			if err == nil {
				t.Fatalf("Render accepted it")
			}
			check(t, err, in.Cluster.Name, tc.want)
		})
	}
}

// TestRenderErrorMessages pins whole messages, where TestRenderErrors
// looks for a part: the subject of a check is put into words apart from
// the check (subject.go), so a subject named twice, or not at all, would
// still contain the part.
func TestRenderErrorMessages(t *testing.T) {
	cases := []renderErrorCase{
		{"forwarder that is no address", func(in *Input) {
			in.Zones = append(in.Zones, bindv1alpha1.BindZone{ObjectMeta: meta("fwd"), Spec: bindv1alpha1.BindZoneSpec{
				ZoneName: "fwd.example", Type: bindv1alpha1.ZoneForward,
				Forwarders: []bindv1alpha1.Forwarder{{Address: "198.18.0.1"}, {Address: "resolver.example"}},
			}})
		}, `BindZone fwd spec.forwarders[1] address "resolver.example" is not an IP address`},
		{"acl entry names a missing key", func(in *Input) {
			in.ACLs = []bindv1alpha1.BindACL{{ObjectMeta: meta("nets"), Spec: bindv1alpha1.BindACLSpec{Entries: []bindv1alpha1.AddressMatchElement{addr("198.18.0.0/24"), keyRef("ghost")}}}}
		}, `BindACL nets spec.entries[1] references BindTSIGKey "ghost", which does not exist; create it or fix the reference`},
		{"unknown key", func(in *Input) { in.Zones[0].Spec.UpdateKeyRef = ref("nope") },
			`BindZone example-com spec.updateKeyRef references BindTSIGKey "nope", which does not exist; create it or fix the reference`},
		{"unknown zone type", func(in *Input) { in.Zones[1].Spec.Type = "Hint" }, `BindZone example-org has unknown type "Hint"`},
		{"bad material", func(in *Input) {
			in.Keys["transfer"] = TSIGKey{Name: "t", Algorithm: "hmac-sha256", Secret: "not base64!"}
		}, `BindTSIGKey transfer "t" has material that is not valid base64; fix the "secret" entry of its Secret`},
		{"forward zone without forwarders", func(in *Input) {
			in.Zones = append(in.Zones, bindv1alpha1.BindZone{ObjectMeta: meta("fwd"), Spec: bindv1alpha1.BindZoneSpec{ZoneName: "fwd.example", Type: bindv1alpha1.ZoneForward}})
		}, "BindZone fwd is a Forward zone without forwarders; add at least one"},
		{"forwarder cluster whose address is no IP", func(in *Input) {
			in.Zones = append(in.Zones, bindv1alpha1.BindZone{ObjectMeta: meta("fwd"), Spec: bindv1alpha1.BindZoneSpec{
				ZoneName: "fwd.example", Type: bindv1alpha1.ZoneForward,
				Forwarders: []bindv1alpha1.Forwarder{{Address: "198.18.0.1"}, {ClusterRef: ref("inside")}},
			}})
			in.Forwardees = map[string]Forwardee{"inside": {Address: "inside.svc"}}
		}, `BindZone fwd spec.forwarders[1] BindCluster "inside" query Service address "inside.svc" is not an IP address`},
		{"forwarder cluster unknown", func(in *Input) {
			in.Zones = append(in.Zones, bindv1alpha1.BindZone{ObjectMeta: meta("fwd"), Spec: bindv1alpha1.BindZoneSpec{
				ZoneName: "fwd.example", Type: bindv1alpha1.ZoneForward,
				Forwarders: []bindv1alpha1.Forwarder{{ClusterRef: ref("elsewhere")}},
			}})
		}, `BindZone fwd spec.forwarders[0] names BindCluster "elsewhere", which does not exist or has no query Service address yet`},
		{"secondary zone without primaries", func(in *Input) {
			in.Zones = append(in.Zones, bindv1alpha1.BindZone{ObjectMeta: meta("sec"), Spec: bindv1alpha1.BindZoneSpec{ZoneName: "sec.example", Type: bindv1alpha1.ZoneSecondary}})
		}, "BindZone sec is a Secondary zone without primaries; add at least one"},
		{"secondary zone primary that is no address", func(in *Input) {
			in.Zones = append(in.Zones, bindv1alpha1.BindZone{ObjectMeta: meta("sec"), Spec: bindv1alpha1.BindZoneSpec{ZoneName: "sec.example", Type: bindv1alpha1.ZoneSecondary,
				Primaries: []bindv1alpha1.RemoteServer{{Address: "198.18.0.1"}, {Address: "ns1.example"}}}})
		}, `BindZone sec spec.primaries[1] address "ns1.example" is not an IP address`},
		{"stub zone primary keyed with a missing key", func(in *Input) {
			in.Zones = append(in.Zones, bindv1alpha1.BindZone{ObjectMeta: meta("stub"), Spec: bindv1alpha1.BindZoneSpec{ZoneName: "stub.example", Type: bindv1alpha1.ZoneStub,
				Primaries: []bindv1alpha1.RemoteServer{{Address: "198.18.0.1", KeyRef: ref("ghost")}}}})
		}, `BindZone stub spec.primaries[0] references BindTSIGKey "ghost", which does not exist; create it or fix the reference`},
		{"secondary zone allow-query that is no address", func(in *Input) {
			in.Zones = append(in.Zones, bindv1alpha1.BindZone{ObjectMeta: meta("sec"), Spec: bindv1alpha1.BindZoneSpec{ZoneName: "sec.example", Type: bindv1alpha1.ZoneSecondary,
				Primaries: []bindv1alpha1.RemoteServer{{Address: "198.18.0.1"}}, AllowQuery: []bindv1alpha1.AddressMatchElement{builtin("localhost"), addr("nets")}}})
		}, `BindZone sec spec.allowQuery[1] address "nets" is neither an IP address nor a CIDR prefix`},
		{"acl entry that is no address", func(in *Input) {
			in.ACLs = []bindv1alpha1.BindACL{{ObjectMeta: meta("nets"), Spec: bindv1alpha1.BindACLSpec{Entries: []bindv1alpha1.AddressMatchElement{addr("198.18.0.0/24"), addr("fe80::1%eth0")}}}}
		}, `BindACL nets spec.entries[1] address "fe80::1%eth0" has an interface zone, which BIND does not accept here`},
	}
	runRenderErrors(t, cases, func(t *testing.T, err error, cluster, want string) {
		if want = "BindCluster " + cluster + ": " + want; err.Error() != want {
			t.Fatalf("error\n%q, want\n%q", err, want)
		}
	})
}

// TestCheckReportsNamedsWords: what Render cannot know (here an extra
// option named refuses) comes back from Check in named-checkconf's words,
// with pod paths instead of temp paths.
func TestCheckReportsNamedsWords(t *testing.T) {
	bin := namedCheckconf(t)
	in := scenarioAuthoritative()
	in.Cluster.Spec.ExtraOptions = []string{"no-such-option yes;"}
	err := Check(context.Background(), in, bin)
	ce, ok := err.(*CheckError)
	if !ok {
		t.Fatalf("Check returned %v, want a *CheckError", err)
	}
	if ce.File != FilePrimaryConf || !strings.Contains(ce.Output, "unknown option 'no-such-option'") {
		t.Fatalf("unexpected complaint: %v", ce)
	}
	if !strings.Contains(ce.Output, DefaultPaths().ConfigDir+"/named.conf.primary") || strings.Contains(ce.Output, "bind-render-check-") {
		t.Fatalf("temp paths leak into the message: %v", ce)
	}
	if err := Check(context.Background(), scenarioAuthoritative(), bin); err != nil {
		t.Fatalf("Check refuses a good config: %v", err)
	}
}

// TestSerialUpdateMethodYieldsToExtraOptions: the operator's default
// (unixtime, so serials never go back when a primary loses its volume) is
// written once, and a cluster that sets serial-update-method itself gets
// its own statement instead: named refuses the option twice.
func TestSerialUpdateMethodYieldsToExtraOptions(t *testing.T) {
	bin := namedCheckconf(t)
	for _, tc := range []struct {
		extra []string
		want  string
	}{
		{nil, "serial-update-method unixtime;"},
		{[]string{"serial-update-method increment;"}, "serial-update-method increment;"},
	} {
		in := scenarioAuthoritative()
		in.Cluster.Spec.ExtraOptions = tc.extra
		out, err := Render(in)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{FilePrimaryConf, FileSecondaryConf} {
			// The options block: catalogs set their own method.
			_, opts, _ := strings.Cut(out.ConfigData[f], "\noptions {")
			opts, _, _ = strings.Cut(opts, "\n};")
			if n := strings.Count(opts, "serial-update-method"); n != 1 || !strings.Contains(opts, tc.want) {
				t.Errorf("extraOptions %q: the options of %s have %d serial-update-method statements, want exactly %q", tc.extra, f, n, tc.want)
			}
		}
		if err := Check(context.Background(), in, bin); err != nil {
			t.Errorf("extraOptions %q: named-checkconf refuses the config: %v", tc.extra, err)
		}
	}
}
