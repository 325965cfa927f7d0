package webhooks

import (
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// warnings collects the Warning headers the API server relays from the
// webhooks.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) contains(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.msgs {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

func warningClient(t *testing.T) (client.Client, *warnings) {
	t.Helper()
	w := &warnings{}
	cfg := rest.CopyConfig(restCfg)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c, w
}

// stored creates obj and returns what the API server stored: the mutating
// webhook's output. That defaulting its own output changes nothing is
// tested in-process (webhooks/defaults_test.go): through the API server an
// unchanged update never reaches the webhooks (matchConditions).
func stored(t *testing.T, obj client.Object) client.Object {
	t.Helper()
	if err := k8sClient.Create(ctx, obj); err != nil {
		t.Fatalf("create: %v", err)
	}
	got := obj.DeepCopyObject().(client.Object)
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	return got
}

func TestDefaultsStored(t *testing.T) {
	fixtures(t)
	ttl := v1alpha1.TTL(120)

	z := stored(t, &v1alpha1.BindZone{ObjectMeta: meta("normalised"), Spec: v1alpha1.BindZoneSpec{ClusterRef: ref("auth"), ZoneName: "Norm.Example.",
		Records: []v1alpha1.RecordSet{
			{Name: "WWW.norm.example.", Type: "AAAA", Values: []string{"2001:DB8:0:0::1", "2001:db8::1"}},
			{Name: "norm.example.", Type: "MX", Values: []string{"20 Mail2", "10 mail"}},
			{Name: "www", Type: "AAAA", TTL: &ttl, Values: []string{"2001:db8::2"}},
			{Name: "txt", Type: "TXT", Values: []string{"v=spf1 -all"}},
		}}}).(*v1alpha1.BindZone)
	s := z.Spec
	if s.ZoneName != "norm.example" || s.Type != v1alpha1.ZonePrimary || s.DefaultTTL == nil || *s.DefaultTTL != 3600 {
		t.Errorf("zone fields: %+v", s)
	}
	if s.SOA == nil || *s.SOA.Refresh != 300 || *s.SOA.Retry != 60 || *s.SOA.Expire != 1209600 || *s.SOA.Minimum != 60 || s.SOA.PrimaryNameServer != "" {
		t.Errorf("soa: %+v", s.SOA)
	}
	wantRecs := []v1alpha1.RecordSet{
		{Name: "@", Type: "MX", Values: []string{"10 mail.norm.example.", "20 mail2.norm.example."}},
		{Name: "txt", Type: "TXT", Values: []string{`"v=spf1 -all"`}},
		{Name: "www", Type: "AAAA", Values: []string{"2001:db8::1", "2001:db8::2"}},
	}
	if len(s.Records) != len(wantRecs) {
		t.Fatalf("records: %+v", s.Records)
	}
	for i, r := range s.Records {
		if r.Name != wantRecs[i].Name || r.Type != wantRecs[i].Type || !reflect.DeepEqual(r.Values, wantRecs[i].Values) || r.TTL == nil {
			t.Errorf("records[%d] = %+v, want %+v", i, r, wantRecs[i])
		}
	}
	if *s.Records[2].TTL != 120 || *s.Records[0].TTL != 3600 {
		t.Errorf("ttls: %v %v", *s.Records[0].TTL, *s.Records[2].TTL)
	}

	k := stored(t, &v1alpha1.BindTSIGKey{ObjectMeta: meta("upd"), Spec: v1alpha1.BindTSIGKeySpec{SecretTemplate: &v1alpha1.SecretTemplate{Labels: map[string]string{}, Annotations: map[string]string{}}}}).(*v1alpha1.BindTSIGKey)
	if k.Spec.SecretName != "upd-tsig" || k.Spec.KeyName != "upd" || k.Spec.Algorithm != "hmac-sha256" || k.Spec.SecretTemplate != nil {
		t.Errorf("key defaults: %+v", k.Spec)
	}

	c := stored(t, &v1alpha1.BindCluster{ObjectMeta: meta("defaults")}).(*v1alpha1.BindCluster)
	cs := c.Spec
	// No image is written: empty is the operator's current default, so
	// an operator upgrade moves the cluster.
	if cs.Mode != v1alpha1.ModeAuthoritative || *cs.Replicas != 3 || cs.Image != "" || cs.AgentImage != "" || cs.Ports.DNS != 53 || cs.Ports.Agent != 8453 || cs.Ports.Metrics != 9119 ||
		*cs.Tuning.NotifyRate != v1alpha1.DefaultNotifyRate || cs.Storage == nil || !*cs.Storage.Enabled || cs.Storage.Size.String() != "1Gi" {
		t.Errorf("cluster defaults: %+v", cs)
	}

	r := stored(t, &v1alpha1.DNSRecord{ObjectMeta: meta("api"), Spec: v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "API.example.com.", Type: "CNAME", Values: []string{"WWW"}}}).(*v1alpha1.DNSRecord)
	if r.Spec.Name != "api" || r.Spec.Values[0] != "www.example.com." || r.Spec.TTL == nil || *r.Spec.TTL != 3600 {
		t.Errorf("record defaults: %+v", r.Spec)
	}

	p := stored(t, &v1alpha1.BindPolicy{ObjectMeta: meta("rpz-defaults"), Spec: v1alpha1.BindPolicySpec{ClusterRef: ref("res"), ZoneName: "RPZ3.example.internal.",
		Rules: []v1alpha1.RPZRule{{Match: "Ads.Example.", Action: "NXDOMAIN"}, {Match: "2001:DB8::/32", Trigger: v1alpha1.TriggerClientIP, Action: "DROP"}}}}).(*v1alpha1.BindPolicy)
	if p.Spec.ZoneName != "rpz3.example.internal" || p.Spec.Rules[0].Match != "ads.example" || p.Spec.Rules[1].Match != "2001:db8::/32" || p.Spec.Log == nil {
		t.Errorf("policy defaults: %+v", p.Spec)
	}

	d := stored(t, &v1alpha1.BindDNSSECPolicy{ObjectMeta: meta("sign"), Spec: v1alpha1.BindDNSSECPolicySpec{Keys: []v1alpha1.DNSSECKey{{Role: "KSK", Algorithm: "rsasha256"}, {Role: "ZSK", Algorithm: "rsasha256"}}}}).(*v1alpha1.BindDNSSECPolicy)
	if d.Spec.Keys[0].Lifetime != "unlimited" || d.Spec.Keys[0].KeySize == nil || *d.Spec.Keys[0].KeySize != 2048 {
		t.Errorf("dnssec defaults: %+v", d.Spec)
	}

	cat := stored(t, &v1alpha1.BindCatalogZone{ObjectMeta: meta("cat-defaults"), Spec: v1alpha1.BindCatalogZoneSpec{ClusterRef: ref("auth"), ZoneName: "CAT3.Example.Internal.", TransferKeyRef: ref("xfr")}}).(*v1alpha1.BindCatalogZone)
	if cat.Spec.ZoneName != "cat3.example.internal" {
		t.Errorf("catalog defaults: %+v", cat.Spec)
	}
	a := stored(t, &v1alpha1.BindACL{ObjectMeta: meta("v6"), Spec: v1alpha1.BindACLSpec{Entries: []v1alpha1.AddressMatchElement{{Address: "2001:DB8:0::/48"}}}}).(*v1alpha1.BindACL)
	if a.Spec.Entries[0].Address != "2001:db8::/48" {
		t.Errorf("acl defaults: %+v", a.Spec)
	}
	v := stored(t, &v1alpha1.BindView{ObjectMeta: meta("external"), Spec: v1alpha1.BindViewSpec{ClusterRef: ref("viewed"), MatchClients: []v1alpha1.AddressMatchElement{{Address: "2001:DB8::/32", Negate: true}, {Builtin: "any"}}}}).(*v1alpha1.BindView)
	if v.Spec.MatchClients[0].Address != "2001:db8::/32" || ptr.Deref(v.Spec.Order, -1) != 100 {
		t.Errorf("view defaults: %+v", v.Spec)
	}
}

// TestExtraOptionsCheckedByNamed: allowed statements are admitted, and an
// update whose statement BIND refuses is a 422 in named's own words at the
// item; an update of only replicas is not checked again.
func TestExtraOptionsCheckedByNamed(t *testing.T) {
	fixtures(t)
	c := &v1alpha1.BindCluster{ObjectMeta: meta("tuned"), Spec: v1alpha1.BindClusterSpec{ExtraOptions: []string{
		`minimal-responses yes;`,
		`max-cache-size 256m;`,
		"rate-limit {\n  responses-per-second 10;\n  window 5;\n};",
	}}}
	if err := k8sClient.Create(ctx, c); err != nil {
		t.Fatalf("allowed options rejected: %v", err)
	}
	c.Spec.ExtraOptions[1] = `max-cache-size lots;`
	expectInvalid(t, k8sClient.Update(ctx, c.DeepCopy()), "spec.extraOptions[1]", "expected integer and optional unit or percent near 'lots'")
	c.Spec.ExtraOptions[1] = `max-cache-size 512m;`
	c.Spec.Replicas = ptr.To[int32](2)
	if err := k8sClient.Update(ctx, c); err != nil {
		t.Fatalf("valid update rejected: %v", err)
	}
}

func TestMissingReferencesWarn(t *testing.T) {
	fixtures(t)
	c, w := warningClient(t)
	z := &v1alpha1.BindZone{ObjectMeta: meta("orphan"), Spec: v1alpha1.BindZoneSpec{ClusterRef: ref("nope"), ZoneName: "orphan.example",
		UpdateKeyRef: &v1alpha1.LocalObjectReference{Name: "nokey"}}}
	if err := c.Create(ctx, z); err != nil {
		t.Fatalf("a zone with missing references must be accepted with warnings: %v", err)
	}
	for _, want := range []string{`spec.clusterRef: BindCluster "nope" does not exist yet`, `spec.updateKeyRef: BindTSIGKey "nokey" does not exist yet`} {
		if !w.contains(want) {
			t.Errorf("no warning %q in %q", want, w.msgs)
		}
	}
}

func TestImmutableOnUpdate(t *testing.T) {
	fixtures(t)
	var k v1alpha1.BindTSIGKey
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "xfr"}, &k); err != nil {
		t.Fatal(err)
	}
	k.Spec.ImportExisting = true
	k.Spec.SecretName = "other"
	err := k8sClient.Update(ctx, &k)
	expectInvalid(t, err, "spec.secretName", "immutable")

	var c v1alpha1.BindCluster
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "auth"}, &c); err != nil {
		t.Fatal(err)
	}
	c.Spec.Mode = v1alpha1.ModeResolver
	expectInvalid(t, k8sClient.Update(ctx, &c), "spec.mode", "immutable")

	var r v1alpha1.DNSRecord
	rec := &v1alpha1.DNSRecord{ObjectMeta: meta("immut"), Spec: v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "immut", Type: "A", Values: []string{"192.0.2.7"}}}
	if err := k8sClient.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(rec), &r); err != nil {
		t.Fatal(err)
	}
	// The same name written absolutely canonicalises to the stored one:
	// not a change.
	r.Spec.Name = "IMMUT.example.com."
	if err := k8sClient.Update(ctx, &r); err != nil {
		t.Fatalf("absolute spelling of the same name rejected: %v", err)
	}
	r.Spec.Name = "other"
	expectInvalid(t, k8sClient.Update(ctx, &r), "spec.name", "immutable")
}

// TestDNSRecordHasNoFinalizer: a DNSRecord is admitted without a finalizer
// (the controller removes a deleted record's data from the last state its
// informer saw), so a DELETE removes it at once; the finalizers a client
// sets pass through as they are: another tool's is kept, and the one of an
// earlier release is neither removed nor, once removed, added back by an
// update.
func TestDNSRecordHasNoFinalizer(t *testing.T) {
	fixtures(t)
	spec := func(name string) v1alpha1.DNSRecordSpec {
		return v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: v1alpha1.RecordName(name), Type: "A", Values: []string{"192.0.2.8"}}
	}
	// deletedAtOnce deletes rec and expects it gone with the DELETE.
	deletedAtOnce := func(t *testing.T, rec *v1alpha1.DNSRecord) {
		t.Helper()
		if err := k8sClient.Delete(ctx, rec); err != nil {
			t.Fatal(err)
		}
		var got v1alpha1.DNSRecord
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(rec), &got); !apierrors.IsNotFound(err) {
			t.Errorf("the DNSRecord was not deleted at once (finalizers %v): %v", got.Finalizers, err)
		}
	}

	t.Run("created without a finalizer, deleted at once", func(t *testing.T) {
		rec := &v1alpha1.DNSRecord{ObjectMeta: meta("unfinalized"), Spec: spec("unfinalized")}
		if err := k8sClient.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if len(rec.Finalizers) != 0 {
			t.Fatalf("created DNSRecord has finalizers %v, want none", rec.Finalizers)
		}
		deletedAtOnce(t, rec)
	})

	t.Run("another tool's finalizer is kept", func(t *testing.T) {
		rec := &v1alpha1.DNSRecord{ObjectMeta: meta("audited"), Spec: spec("Audited")}
		rec.Finalizers = []string{"example.com/audit"}
		if err := k8sClient.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if rec.Spec.Name != "audited" {
			t.Errorf("the mutating webhook did not run: spec.name %q", rec.Spec.Name)
		}
		if !slices.Equal(rec.Finalizers, []string{"example.com/audit"}) {
			t.Errorf("created DNSRecord has finalizers %v, want [example.com/audit]", rec.Finalizers)
		}
		rec.Finalizers = nil
		if err := k8sClient.Update(ctx, rec); err != nil {
			t.Fatal(err)
		}
		deletedAtOnce(t, rec)
	})

	t.Run("an update keeps the finalizer of an earlier release as sent", func(t *testing.T) {
		// An object of an earlier release: the finalizer came with it.
		rec := &v1alpha1.DNSRecord{ObjectMeta: meta("finalized"), Spec: spec("finalized")}
		rec.Finalizers = []string{v1alpha1.DNSRecordFinalizer}
		if err := k8sClient.Create(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rec.Finalizers, []string{v1alpha1.DNSRecordFinalizer}) {
			t.Fatalf("created DNSRecord has finalizers %v, want [%s]", rec.Finalizers, v1alpha1.DNSRecordFinalizer)
		}
		// A spec change goes through the webhook: the finalizer stays.
		rec.Spec.Values = []string{"192.0.2.9", "192.0.2.1"}
		if err := k8sClient.Update(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rec.Spec.Values, []string{"192.0.2.1", "192.0.2.9"}) {
			t.Errorf("the mutating webhook did not run on the update: values %v", rec.Spec.Values)
		}
		if !slices.Equal(rec.Finalizers, []string{v1alpha1.DNSRecordFinalizer}) {
			t.Errorf("an update removed the finalizer of an earlier release: %v", rec.Finalizers)
		}
		// Removed (as the controller does), it is not put back by a
		// later spec change.
		rec.Finalizers = nil
		if err := k8sClient.Update(ctx, rec); err != nil {
			t.Fatal(err)
		}
		rec.Spec.Values = []string{"192.0.2.7", "192.0.2.3"}
		if err := k8sClient.Update(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rec.Spec.Values, []string{"192.0.2.3", "192.0.2.7"}) {
			t.Errorf("the mutating webhook did not run on the update: values %v", rec.Spec.Values)
		}
		if len(rec.Finalizers) != 0 {
			t.Errorf("an update put the finalizer back: %v", rec.Finalizers)
		}
		deletedAtOnce(t, rec)
	})
}
