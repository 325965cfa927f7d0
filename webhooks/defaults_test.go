package webhooks

import (
	"context"
	"fmt"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/internal/version"
)

// These tests call the Defaulter and then the Validator in-process, as the
// API server would on create, without it: through the API server an
// unchanged update never reaches the webhooks (matchConditions), so only an
// in-process call can show that defaulting its own output changes nothing.

// kindWebhook is one kind's defaulter and validator.
type kindWebhook[T runtime.Object] interface {
	admission.Defaulter[T]
	admission.Validator[T]
}

// defaultThenValidate defaults obj, checks that the result validates on
// create, that defaulting it again changes nothing, and that the update
// from the once-defaulted to the twice-defaulted object validates too.
// It returns the defaulted object.
func defaultThenValidate[T runtime.Object](t *testing.T, ctx context.Context, w kindWebhook[T], obj T) T {
	t.Helper()
	g := NewWithT(t)
	g.Expect(w.Default(ctx, obj)).To(Succeed())
	warns, err := w.ValidateCreate(ctx, obj)
	g.Expect(err).NotTo(HaveOccurred(), "the defaulted object does not validate")
	g.Expect(warns).To(BeEmpty())
	again := obj.DeepCopyObject().(T)
	g.Expect(w.Default(ctx, again)).To(Succeed())
	g.Expect(again).To(Equal(obj), "defaulting is not idempotent")
	_, err = w.ValidateUpdate(ctx, obj, again)
	g.Expect(err).NotTo(HaveOccurred())
	return obj
}

func objectMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "ns"}
}

func ref(name string) v1alpha1.LocalObjectReference { return v1alpha1.LocalObjectReference{Name: name} }

// testWebhooks are the webhooks as SetupWithManager builds them, reading
// objs (nil: no reader, so nothing is looked up).
func testWebhooks(t testing.TB, objs ...client.Object) *webhooks {
	t.Helper()
	var r client.Reader
	if objs != nil {
		scheme := runtime.NewScheme()
		NewWithT(t).Expect(v1alpha1.AddToScheme(scheme)).To(Succeed())
		NewWithT(t).Expect(corev1.AddToScheme(scheme)).To(Succeed())
		// The API server filters BindZones by spec.zoneName (a selectable
		// field of the CRD); the fake client needs it as an index.
		r = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
			WithIndex(&v1alpha1.BindZone{}, v1alpha1.BindZoneZoneNameField, func(o client.Object) []string {
				return []string{string(o.(*v1alpha1.BindZone).Spec.ZoneName)}
			}).Build()
	}
	ws, err := newWebhooks(r, Options{Reader: r})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return ws
}

func TestBindClusterDefaultThenValidate(t *testing.T) {
	ctx := context.Background()
	w := testWebhooks(t).cluster
	t.Run("minimal", func(t *testing.T) {
		c := defaultThenValidate(t, ctx, w, &v1alpha1.BindCluster{ObjectMeta: objectMeta("dns")})
		NewWithT(t).Expect(c.Spec).To(Equal(v1alpha1.BindClusterSpec{
			Mode:            v1alpha1.ModeAuthoritative,
			Replicas:        ptr.To[int32](3),
			ImagePullPolicy: corev1.PullIfNotPresent,
			Ports:           v1alpha1.ClusterPorts{DNS: 53, Agent: 8453, Metrics: 9119},
			Storage:         &v1alpha1.StorageSpec{Enabled: ptr.To(true), Size: ptr.To(resource.MustParse("1Gi"))},
			PrimaryService:  v1alpha1.ServiceSpec{Type: corev1.ServiceTypeClusterIP},
			QueryService:    v1alpha1.ServiceSpec{Type: corev1.ServiceTypeClusterIP},
			Tuning: v1alpha1.ReplicationTuning{NotifyDelay: ptr.To[int32](0), NotifyRate: ptr.To[int32](10000),
				StartupNotifyRate: ptr.To[int32](10000), SerialQueryRate: ptr.To[int32](10000), CatalogMinUpdateInterval: ptr.To[int32](0)},
		}))
	})
	t.Run("resolver", func(t *testing.T) {
		c := defaultThenValidate(t, ctx, w, &v1alpha1.BindCluster{ObjectMeta: objectMeta("res"), Spec: v1alpha1.BindClusterSpec{
			Mode:         v1alpha1.ModeResolver,
			AllowQuery:   []v1alpha1.AddressMatchElement{{Address: "2001:DB8:0::/32"}},
			Recursion:    &v1alpha1.RecursionSpec{Forwarders: []v1alpha1.Forwarder{{Address: "2001:DB8::53"}}},
			Storage:      &v1alpha1.StorageSpec{Enabled: ptr.To(false)},
			ExtraOptions: []string{" minimal-responses yes; "},
		}})
		NewWithT(t).Expect(c.Spec.Recursion).To(Equal(&v1alpha1.RecursionSpec{
			Forwarders: []v1alpha1.Forwarder{{Address: "2001:db8::53"}}, ForwardPolicy: v1alpha1.ForwardFirst, DNSSECValidation: v1alpha1.DNSSECValidationAuto,
		}))
		NewWithT(t).Expect(c.Spec.AllowQuery).To(Equal([]v1alpha1.AddressMatchElement{{Address: "2001:db8::/32"}}))
		NewWithT(t).Expect(c.Spec.Storage).To(Equal(&v1alpha1.StorageSpec{Enabled: ptr.To(false)}))
		NewWithT(t).Expect(c.Spec.ExtraOptions).To(Equal([]string{"minimal-responses yes;"}))
	})
	// Images are not defaulted: empty is the operator's current default,
	// so an operator upgrade moves the cluster; a pinned image is kept.
	t.Run("images", func(t *testing.T) {
		c := defaultThenValidate(t, ctx, w, &v1alpha1.BindCluster{ObjectMeta: objectMeta("dns")})
		NewWithT(t).Expect([]string{c.Spec.Image, c.Spec.AgentImage}).To(Equal([]string{"", ""}))
		pinned := version.BindImage() + "-pinned"
		c = defaultThenValidate(t, ctx, w, &v1alpha1.BindCluster{ObjectMeta: objectMeta("dns"), Spec: v1alpha1.BindClusterSpec{Image: pinned}})
		NewWithT(t).Expect([]string{c.Spec.Image, c.Spec.AgentImage}).To(Equal([]string{pinned, ""}))
	})
}

func TestBindZoneDefaultThenValidate(t *testing.T) {
	ctx := context.Background()
	w := testWebhooks(t).zone
	t.Run("minimal", func(t *testing.T) {
		z := defaultThenValidate(t, ctx, w, &v1alpha1.BindZone{ObjectMeta: objectMeta("z"), Spec: v1alpha1.BindZoneSpec{ClusterRef: ref("dns"), ZoneName: "example.com"}})
		NewWithT(t).Expect(z.Spec).To(Equal(v1alpha1.BindZoneSpec{
			ClusterRef: ref("dns"), ZoneName: "example.com", Type: v1alpha1.ZonePrimary, DefaultTTL: ptr.To[v1alpha1.TTL](3600),
			SOA: &v1alpha1.SOASpec{ResponsiblePerson: "hostmaster.example.com", Refresh: ptr.To[int32](300), Retry: ptr.To[int32](60), Expire: ptr.To[int32](1209600), Minimum: ptr.To[int32](60)},
		}))
	})
	t.Run("names and records canonicalised", func(t *testing.T) {
		ttl := ptr.To[v1alpha1.TTL](60)
		z := defaultThenValidate(t, ctx, w, &v1alpha1.BindZone{ObjectMeta: objectMeta("z"), Spec: v1alpha1.BindZoneSpec{
			ClusterRef: ref("dns"), ZoneName: "Example.COM.",
			SOA: &v1alpha1.SOASpec{PrimaryNameServer: "NS.Example.NET.", ResponsiblePerson: "DNS.Example.COM."},
			Records: []v1alpha1.RecordSet{
				{Name: "WWW.example.com.", Type: "A", Values: []string{"192.0.2.2", "192.0.2.1"}},
				{Name: "www", Type: "A", TTL: ttl, Values: []string{"192.0.2.1"}},
				{Name: "@", Type: "MX", Values: []string{"10 MAIL"}},
			},
		}})
		g := NewWithT(t)
		g.Expect(z.Spec.ZoneName).To(Equal(v1alpha1.DomainName("example.com")))
		g.Expect([]v1alpha1.DomainName{z.Spec.SOA.PrimaryNameServer, z.Spec.SOA.ResponsiblePerson}).To(Equal([]v1alpha1.DomainName{"ns.example.net", "dns.example.com"}))
		g.Expect(z.Spec.Records).To(Equal([]v1alpha1.RecordSet{
			{Name: "@", Type: "MX", TTL: ptr.To[v1alpha1.TTL](3600), Values: []string{"10 mail.example.com."}},
			{Name: "www", Type: "A", TTL: ttl, Values: []string{"192.0.2.1", "192.0.2.2"}},
		}))
	})
	t.Run("forward", func(t *testing.T) {
		z := defaultThenValidate(t, ctx, w, &v1alpha1.BindZone{ObjectMeta: objectMeta("f"), Spec: v1alpha1.BindZoneSpec{
			ClusterRef: ref("res"), ZoneName: "corp.internal", Type: v1alpha1.ZoneForward, Forwarders: []v1alpha1.Forwarder{{Address: "2001:DB8::53"}},
		}})
		NewWithT(t).Expect(z.Spec).To(Equal(v1alpha1.BindZoneSpec{
			ClusterRef: ref("res"), ZoneName: "corp.internal", Type: v1alpha1.ZoneForward, ForwardPolicy: v1alpha1.ForwardOnly,
			Forwarders: []v1alpha1.Forwarder{{Address: "2001:db8::53"}},
		}))
	})
	t.Run("secondary", func(t *testing.T) {
		z := defaultThenValidate(t, ctx, w, &v1alpha1.BindZone{ObjectMeta: objectMeta("s"), Spec: v1alpha1.BindZoneSpec{
			ClusterRef: ref("dns"), ZoneName: "partner.example", Type: v1alpha1.ZoneSecondary, Primaries: []v1alpha1.RemoteServer{{Address: "2001:DB8::1"}},
		}})
		NewWithT(t).Expect(z.Spec.Primaries).To(Equal([]v1alpha1.RemoteServer{{Address: "2001:db8::1"}}))
	})
}

func TestDNSRecordDefaultThenValidate(t *testing.T) {
	zone := &v1alpha1.BindZone{ObjectMeta: objectMeta("example"), Spec: v1alpha1.BindZoneSpec{
		ClusterRef: ref("dns"), ZoneName: "example.com", Type: v1alpha1.ZonePrimary, DefaultTTL: ptr.To[v1alpha1.TTL](60),
		UpdateKeyRef: &v1alpha1.LocalObjectReference{Name: "upd"},
	}}
	t.Run("zone not created yet", func(t *testing.T) {
		r := defaultThenValidate(t, context.Background(), testWebhooks(t).record, &v1alpha1.DNSRecord{ObjectMeta: objectMeta("r"), Spec: v1alpha1.DNSRecordSpec{
			ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: " WWW ", Type: "a", Values: []string{"192.0.2.2", "192.0.2.1", "192.0.2.2"},
		}})
		NewWithT(t).Expect(r.Spec).To(Equal(v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "www", Type: "A", Values: []string{"192.0.2.1", "192.0.2.2"}}))
	})
	t.Run("with its zone", func(t *testing.T) {
		w := testWebhooks(t, zone).record
		r := defaultThenValidate(t, context.Background(), w, &v1alpha1.DNSRecord{ObjectMeta: objectMeta("r"), Spec: v1alpha1.DNSRecordSpec{
			ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "Host.Example.com.", Type: "AAAA", Values: []string{"2001:DB8::1"},
		}})
		NewWithT(t).Expect(r.Spec).To(Equal(v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "host", Type: "AAAA", TTL: ptr.To[v1alpha1.TTL](60), Values: []string{"2001:db8::1"}}))
	})
	// A DNSRecord carries no finalizer: a create gets none, and the
	// finalizers a client sent (another tool's, or the one of an earlier
	// release on an UPDATE) are left as they are.
	for _, c := range []struct {
		op         admissionv1.Operation
		finalizers []string
	}{
		{admissionv1.Create, nil},
		{admissionv1.Create, []string{"example.com/audit"}},
		{admissionv1.Update, []string{v1alpha1.DNSRecordFinalizer}},
		{admissionv1.Update, nil},
	} {
		t.Run(fmt.Sprintf("%s with finalizers %v", c.op, c.finalizers), func(t *testing.T) {
			g := NewWithT(t)
			ctx := admission.NewContextWithRequest(context.Background(), admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: c.op}})
			in := &v1alpha1.DNSRecord{ObjectMeta: objectMeta("r"), Spec: v1alpha1.DNSRecordSpec{
				ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "api", Type: "CNAME", Values: []string{"WWW"},
			}}
			in.Finalizers = slices.Clone(c.finalizers)
			r := defaultThenValidate(t, ctx, testWebhooks(t, zone).record, in)
			g.Expect(r.Finalizers).To(Equal(c.finalizers))
			g.Expect(r.Spec.Values).To(Equal([]string{"www.example.com."}))
		})
	}
}

func TestBindTSIGKeyDefaultThenValidate(t *testing.T) {
	w := testWebhooks(t).key
	t.Run("minimal", func(t *testing.T) {
		k := defaultThenValidate(t, context.Background(), w, &v1alpha1.BindTSIGKey{ObjectMeta: objectMeta("xfr")})
		NewWithT(t).Expect(k.Spec).To(Equal(v1alpha1.BindTSIGKeySpec{KeyName: "xfr", Algorithm: v1alpha1.TSIGHMACSHA256, SecretName: "xfr-tsig"}))
	})
	t.Run("key name canonicalised, empty template dropped", func(t *testing.T) {
		k := defaultThenValidate(t, context.Background(), w, &v1alpha1.BindTSIGKey{ObjectMeta: objectMeta("upd"), Spec: v1alpha1.BindTSIGKeySpec{
			KeyName: "Update.Example.COM.", SecretTemplate: &v1alpha1.SecretTemplate{Labels: map[string]string{}, Annotations: map[string]string{}},
		}})
		NewWithT(t).Expect(k.Spec).To(Equal(v1alpha1.BindTSIGKeySpec{KeyName: "update.example.com", Algorithm: v1alpha1.TSIGHMACSHA256, SecretName: "upd-tsig"}))
	})
	t.Run("imported", func(t *testing.T) {
		k := defaultThenValidate(t, context.Background(), w, &v1alpha1.BindTSIGKey{ObjectMeta: objectMeta("legacy"), Spec: v1alpha1.BindTSIGKeySpec{
			ImportExisting: true, SecretName: "legacy-key", Algorithm: v1alpha1.TSIGHMACSHA512,
		}})
		NewWithT(t).Expect(k.Spec).To(Equal(v1alpha1.BindTSIGKeySpec{KeyName: "legacy", Algorithm: v1alpha1.TSIGHMACSHA512, SecretName: "legacy-key", ImportExisting: true}))
	})
}

func TestBindViewDefaultThenValidate(t *testing.T) {
	v := defaultThenValidate(t, context.Background(), testWebhooks(t).view, &v1alpha1.BindView{ObjectMeta: objectMeta("internal"), Spec: v1alpha1.BindViewSpec{
		ClusterRef: ref("res"), MatchClients: []v1alpha1.AddressMatchElement{{Address: "2001:DB8::/32", Negate: true}, {Builtin: v1alpha1.BuiltinAny}},
	}})
	NewWithT(t).Expect(v.Spec).To(Equal(v1alpha1.BindViewSpec{
		ClusterRef: ref("res"), Order: ptr.To[int32](100), MatchClients: []v1alpha1.AddressMatchElement{{Address: "2001:db8::/32", Negate: true}, {Builtin: v1alpha1.BuiltinAny}},
	}))
}

func TestBindACLDefaultThenValidate(t *testing.T) {
	a := defaultThenValidate(t, context.Background(), testWebhooks(t).acl, &v1alpha1.BindACL{ObjectMeta: objectMeta("office"), Spec: v1alpha1.BindACLSpec{
		Entries: []v1alpha1.AddressMatchElement{{Address: "2001:DB8:0::1"}, {Address: "192.0.2.0/24"}},
	}})
	// Order is kept: BIND stops at the first element that matches.
	NewWithT(t).Expect(a.Spec.Entries).To(Equal([]v1alpha1.AddressMatchElement{{Address: "2001:db8::1"}, {Address: "192.0.2.0/24"}}))
}

func TestBindCatalogZoneDefaultThenValidate(t *testing.T) {
	c := defaultThenValidate(t, context.Background(), testWebhooks(t).catalog, &v1alpha1.BindCatalogZone{ObjectMeta: objectMeta("cat"), Spec: v1alpha1.BindCatalogZoneSpec{
		ClusterRef: ref("dns"), ZoneName: "Catalog.Example.Internal.", TransferKeyRef: ref("xfr"),
		DefaultPrimaries: []v1alpha1.RemoteServer{{Address: "2001:DB8::1"}},
	}})
	NewWithT(t).Expect(c.Spec).To(Equal(v1alpha1.BindCatalogZoneSpec{
		ClusterRef: ref("dns"), ZoneName: "catalog.example.internal", TransferKeyRef: ref("xfr"),
		DefaultPrimaries: []v1alpha1.RemoteServer{{Address: "2001:db8::1"}},
	}))
}

func TestBindPolicyDefaultThenValidate(t *testing.T) {
	p := defaultThenValidate(t, context.Background(), testWebhooks(t).policy, &v1alpha1.BindPolicy{ObjectMeta: objectMeta("rpz"), Spec: v1alpha1.BindPolicySpec{
		ClusterRef: ref("res"), ZoneName: "RPZ.Example.Internal.",
		Rules: []v1alpha1.RPZRule{
			{Match: "Ads.Example.", Action: v1alpha1.ActionNXDOMAIN},
			{Match: "2001:DB8::/32", Trigger: v1alpha1.TriggerClientIP, Action: v1alpha1.ActionDrop},
			{Match: "*.Tracker.Example", Action: v1alpha1.ActionRedirect, RedirectTo: "Sinkhole.Example.Internal."},
		},
	}})
	NewWithT(t).Expect(p.Spec).To(Equal(v1alpha1.BindPolicySpec{
		ClusterRef: ref("res"), ZoneName: "rpz.example.internal", Order: ptr.To[int32](100), PolicyOverride: v1alpha1.RPZOverrideGiven, Log: ptr.To(true),
		Rules: []v1alpha1.RPZRule{
			{Match: "ads.example", Trigger: v1alpha1.TriggerQName, Action: v1alpha1.ActionNXDOMAIN},
			{Match: "2001:db8::/32", Trigger: v1alpha1.TriggerClientIP, Action: v1alpha1.ActionDrop},
			{Match: "*.tracker.example", Trigger: v1alpha1.TriggerQName, Action: v1alpha1.ActionRedirect, RedirectTo: "sinkhole.example.internal"},
		},
	}))
}

func TestBindDNSSECPolicyDefaultThenValidate(t *testing.T) {
	p := defaultThenValidate(t, context.Background(), testWebhooks(t).dnssec, &v1alpha1.BindDNSSECPolicy{ObjectMeta: objectMeta("sign"), Spec: v1alpha1.BindDNSSECPolicySpec{
		Keys: []v1alpha1.DNSSECKey{{Role: v1alpha1.RoleKSK, Algorithm: v1alpha1.DNSSECRSASHA256}, {Role: v1alpha1.RoleZSK, Algorithm: v1alpha1.DNSSECECDSAP256SHA256, Lifetime: "P90D"}},
	}})
	NewWithT(t).Expect(p.Spec.Keys).To(Equal([]v1alpha1.DNSSECKey{
		{Role: v1alpha1.RoleKSK, Algorithm: v1alpha1.DNSSECRSASHA256, KeySize: ptr.To[int32](2048), Lifetime: "unlimited"},
		{Role: v1alpha1.RoleZSK, Algorithm: v1alpha1.DNSSECECDSAP256SHA256, Lifetime: "P90D"},
	}))
}
