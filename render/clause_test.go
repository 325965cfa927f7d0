package render

import (
	"testing"

	. "github.com/onsi/gomega"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// The zone clause on each pod, for the keys that reach a zone: the view's
// key picks the zone's view and may update and transfer it; the operator's
// key (the view's, else K) may update anything and the update key is
// judged by the agent's owners socket; the update key transfers only when
// the zone says so, and then on the secondaries too, as does whom the
// zone's allowTransfer names.
func TestClauseKeys(t *testing.T) {
	c := cluster(bindv1alpha1.ModeAuthoritative)
	c.Spec.TransferKeyRef = ref("transfer")
	keys := map[string]TSIGKey{
		"transfer": {Name: "transfer", Algorithm: "hmac-sha256", Secret: secret32},
		"updates":  {Name: "updates", Algorithm: "hmac-sha256", Secret: secret32},
	}
	zone := func(view string, transfer bool) *bindv1alpha1.BindZone {
		z := &bindv1alpha1.BindZone{ObjectMeta: meta("z"), Spec: bindv1alpha1.BindZoneSpec{
			ZoneName: "example.com", Type: bindv1alpha1.ZonePrimary, UpdateKeyRef: ref("updates"), AllowUpdateKeyTransfer: transfer,
		}}
		if view != "" {
			z.Spec.ViewRef = ref(view)
		}
		return z
	}
	inside := bindv1alpha1.BindView{ObjectMeta: meta("inside"), Spec: bindv1alpha1.BindViewSpec{MatchClients: []bindv1alpha1.AddressMatchElement{builtin("any")}}}
	for _, tc := range []struct {
		name      string
		views     []bindv1alpha1.BindView
		zone      *bindv1alpha1.BindZone
		primary   string
		secondary string
		noK       bool // the cluster has no transfer key
	}{
		{"no view", nil, zone("", false),
			`{ type primary; file "/var/lib/bind/zones/_default/example.com.db"; update-policy { grant "transfer" zonesub "ANY"; grant "local:owners.sock" external "example.com." "ANY"; }; allow-transfer { key "transfer"; }; };`,
			`{ type secondary; file "/var/lib/bind/secondary/_default/example.com.db"; primaries { 198.19.10.53 key "transfer"; }; };`, false},
		{"update key transfers", nil, zone("", true),
			`{ type primary; file "/var/lib/bind/zones/_default/example.com.db"; update-policy { grant "transfer" zonesub "ANY"; grant "local:owners.sock" external "example.com." "ANY"; }; allow-transfer { key "transfer"; key "updates"; }; };`,
			`{ type secondary; file "/var/lib/bind/secondary/_default/example.com.db"; primaries { 198.19.10.53 key "transfer"; }; allow-transfer { key "updates"; }; };`, false},
		// Who the zone lets transfer it may do so from any pod: clients
		// of the query Service reach the secondaries too.
		{"allowTransfer", nil, func() *bindv1alpha1.BindZone {
			z := zone("", true)
			z.Spec.AllowTransfer = []bindv1alpha1.AddressMatchElement{{KeyRef: "transfer"}, {Address: "192.0.2.0/24"}}
			return z
		}(),
			`{ type primary; file "/var/lib/bind/zones/_default/example.com.db"; update-policy { grant "transfer" zonesub "ANY"; grant "local:owners.sock" external "example.com." "ANY"; }; allow-transfer { key "transfer"; key "updates"; key "transfer"; 192.0.2.0/24; }; };`,
			`{ type secondary; file "/var/lib/bind/secondary/_default/example.com.db"; primaries { 198.19.10.53 key "transfer"; }; allow-transfer { key "updates"; key "transfer"; 192.0.2.0/24; }; };`, false},
		{"in a view", []bindv1alpha1.BindView{inside}, zone("inside", false),
			`{ type primary; file "/var/lib/bind/zones/inside/example.com.db"; update-policy { grant "bind-operator-view-inside" zonesub "ANY"; grant "local:owners.sock" external "example.com." "ANY"; }; allow-transfer { key "bind-operator-view-inside"; }; };`,
			`{ type secondary; file "/var/lib/bind/secondary/inside/example.com.db"; primaries { 198.19.10.53 key "bind-operator-view-inside"; }; };`, false},
		// Without K the operator signs with the update key itself: nothing
		// tells its UPDATEs from a client's.
		{"no transfer key", nil, zone("", false),
			`{ type primary; file "/var/lib/bind/zones/_default/example.com.db"; allow-update { key "updates"; }; allow-transfer { none; }; };`,
			"", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := c.DeepCopy()
			if tc.noK {
				c.Spec.TransferKeyRef = nil
			}
			in := Input{Cluster: c, PrimaryAddress: "198.19.10.53", ControlKey: controlKey(), Keys: keys, Views: tc.views, ViewKeys: viewKeysFor(tc.views), Paths: DefaultPaths()}
			zc, err := NewZoneClauses(in)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(zc.Clause(tc.zone, ZoneRolePrimary, nil)).To(Equal(tc.primary))
			if tc.secondary != "" {
				g.Expect(zc.Clause(tc.zone, ZoneRoleSecondary, nil)).To(Equal(tc.secondary))
			}
		})
	}
}
