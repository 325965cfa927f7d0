package webhooks

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// recheckRules is a policy rule that a statement on the allow-list can
// break, so that the engine's part of Recheck is exercised (the shipped
// PodIPRules concern statements the allow-list already refuses).
var recheckRules = []Rule{{Name: "no-big-cache", Expression: `name != 'max-cache-size'`, Message: "is not allowed on this operator"}}

// TestRecheckGivesTheWebhooksWords stores one object per kind that the
// validating webhook refuses, and checks that Recheck refuses it at the
// same paths with the same sentences.
func TestRecheckGivesTheWebhooksWords(t *testing.T) {
	ctx := context.Background()
	opts := Options{Rules: recheckRules, PodCIDRs: []netip.Prefix{netip.MustParsePrefix("10.244.0.0/16")}}
	ws, err := newWebhooks(nil, opts)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	rc, err := NewRechecker(opts)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: "dns"} }

	for _, tc := range []struct {
		kind     string
		obj      client.Object
		validate func() error
	}{
		{kind: "BindCluster", obj: &v1alpha1.BindCluster{ObjectMeta: meta("dns"), Spec: v1alpha1.BindClusterSpec{
			Mode:         v1alpha1.ModeResolver,
			ExtraOptions: []string{"max-cache-size 256m;", "include \"/etc/passwd\";", "tcp-clients 200;"},
			Recursion:    &v1alpha1.RecursionSpec{Forwarders: []v1alpha1.Forwarder{{ClusterRef: &v1alpha1.LocalObjectReference{Name: "dns"}}}},
			AllowQuery:   []v1alpha1.AddressMatchElement{{Address: "10.0.0.1/8"}},
		}}},
		{kind: "BindZone", obj: &v1alpha1.BindZone{ObjectMeta: meta("example"), Spec: v1alpha1.BindZoneSpec{
			ZoneName:   "example.com",
			Type:       v1alpha1.ZonePrimary,
			ClusterRef: v1alpha1.LocalObjectReference{Name: "dns"},
			Records:    []v1alpha1.RecordSet{{Name: "www", Type: "A", Values: []string{"not-an-address"}}},
		}}},
		{kind: "DNSRecord", obj: &v1alpha1.DNSRecord{ObjectMeta: meta("www"), Spec: v1alpha1.DNSRecordSpec{
			ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "www", Type: "A", Values: []string{"300.1.1.1"},
		}}},
		{kind: "DNSRecord type", obj: &v1alpha1.DNSRecord{ObjectMeta: meta("any"), Spec: v1alpha1.DNSRecordSpec{
			ZoneRef: v1alpha1.ZoneReference{Name: "example"}, Name: "a..b", Type: "ANY", Values: []string{"x"},
		}}},
		{kind: "BindView", obj: &v1alpha1.BindView{ObjectMeta: meta("inside"), Spec: v1alpha1.BindViewSpec{
			ClusterRef:   v1alpha1.LocalObjectReference{Name: "dns"},
			MatchClients: []v1alpha1.AddressMatchElement{{Address: "10.0.0.1/8"}, {Address: "10.0.0.1/8"}},
		}}},
		{kind: "BindTSIGKey", obj: &v1alpha1.BindTSIGKey{ObjectMeta: meta("k"), Spec: v1alpha1.BindTSIGKeySpec{
			KeyName: v1alpha1.ControlKeyName,
		}}},
		{kind: "BindACL", obj: &v1alpha1.BindACL{ObjectMeta: meta("office"), Spec: v1alpha1.BindACLSpec{
			Entries: []v1alpha1.AddressMatchElement{{ACLRef: "office"}},
		}}},
		{kind: "BindCatalogZone", obj: &v1alpha1.BindCatalogZone{ObjectMeta: meta("cat"), Spec: v1alpha1.BindCatalogZoneSpec{
			ZoneName: "catalog.example", ClusterRef: v1alpha1.LocalObjectReference{Name: "dns"},
			TransferKeyRef:   v1alpha1.LocalObjectReference{Name: "k"},
			DefaultPrimaries: []v1alpha1.RemoteServer{{Address: "192.0.2.1"}, {Address: "192.0.2.1", Port: ptr.To[int32](53)}},
		}}},
		{kind: "BindPolicy", obj: &v1alpha1.BindPolicy{ObjectMeta: meta("rpz"), Spec: v1alpha1.BindPolicySpec{
			ZoneName: "rpz.example", ClusterRef: v1alpha1.LocalObjectReference{Name: "dns"},
			Rules: []v1alpha1.RPZRule{{Match: "10.0.0.1/8", Trigger: v1alpha1.TriggerClientIP, Action: v1alpha1.ActionDrop}},
		}}},
		{kind: "BindDNSSECPolicy", obj: &v1alpha1.BindDNSSECPolicy{ObjectMeta: meta("sign"), Spec: v1alpha1.BindDNSSECPolicySpec{
			SignaturesRefresh: "P30D", SignaturesValidity: "P14D",
		}}},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			g := NewWithT(t)
			got := rc.Recheck(tc.obj)
			g.Expect(got).NotTo(BeEmpty(), "Recheck passes an object the webhook refuses")
			want := refusalCauses(g, webhookVerdict(ctx, ws, tc.obj))
			g.Expect(fieldsAndBodies(got)).To(Equal(want), "Recheck's paths and sentences are the webhook's")
		})
	}
}

// TestRecheckPassesWhatTheWebhookAdmits: valid objects of each kind pass,
// and a kind Recheck does not know is no error.
func TestRecheckPassesWhatTheWebhookAdmits(t *testing.T) {
	rc, err := NewRechecker(Options{})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	cluster := &v1alpha1.BindCluster{ObjectMeta: objectMeta("dns"), Spec: v1alpha1.BindClusterSpec{ExtraOptions: []string{"tcp-clients 200;"}}}
	cluster.SetDefaults()
	for _, o := range []client.Object{
		cluster,
		&v1alpha1.BindZone{ObjectMeta: objectMeta("z"), Spec: v1alpha1.BindZoneSpec{ZoneName: "example.com", ClusterRef: v1alpha1.LocalObjectReference{Name: "dns"},
			Records: []v1alpha1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.1"}}}}},
		&v1alpha1.DNSRecord{ObjectMeta: objectMeta("r"), Spec: v1alpha1.DNSRecordSpec{ZoneRef: v1alpha1.ZoneReference{Name: "z"}, Name: "www", Type: "A", Values: []string{"192.0.2.1"}}},
		&v1alpha1.BindACL{ObjectMeta: objectMeta("a"), Spec: v1alpha1.BindACLSpec{Entries: []v1alpha1.AddressMatchElement{{Address: "10.0.0.0/8"}}}},
		&v1alpha1.BindTSIGKey{ObjectMeta: objectMeta("k"), Spec: v1alpha1.BindTSIGKeySpec{KeyName: "k"}},
		&metav1.PartialObjectMetadata{ObjectMeta: objectMeta("other")},
	} {
		NewWithT(t).Expect(rc.Recheck(o)).To(BeEmpty(), "%T", o)
	}
	// A nil Rechecker still runs the rules that need no engine.
	var none *Rechecker
	NewWithT(t).Expect(none.Recheck(&v1alpha1.BindACL{ObjectMeta: objectMeta("a"), Spec: v1alpha1.BindACLSpec{Entries: []v1alpha1.AddressMatchElement{{ACLRef: "a"}}}})).To(HaveLen(1))
}

// webhookVerdict is what the validating webhook of obj's kind answers to
// its creation.
func webhookVerdict(ctx context.Context, ws *webhooks, obj client.Object) error {
	var err error
	switch o := obj.(type) {
	case *v1alpha1.BindCluster:
		_, err = ws.cluster.ValidateCreate(ctx, o)
	case *v1alpha1.BindZone:
		_, err = ws.zone.ValidateCreate(ctx, o)
	case *v1alpha1.DNSRecord:
		_, err = ws.record.ValidateCreate(ctx, o)
	case *v1alpha1.BindView:
		_, err = ws.view.ValidateCreate(ctx, o)
	case *v1alpha1.BindTSIGKey:
		_, err = ws.key.ValidateCreate(ctx, o)
	case *v1alpha1.BindACL:
		_, err = ws.acl.ValidateCreate(ctx, o)
	case *v1alpha1.BindCatalogZone:
		_, err = ws.catalog.ValidateCreate(ctx, o)
	case *v1alpha1.BindPolicy:
		_, err = ws.policy.ValidateCreate(ctx, o)
	case *v1alpha1.BindDNSSECPolicy:
		_, err = ws.dnssec.ValidateCreate(ctx, o)
	}
	return err
}

// refusalCauses are the field errors of a webhook refusal, as "path: body".
func refusalCauses(g Gomega, err error) []string {
	var status *apierrors.StatusError
	g.Expect(errors.As(err, &status)).To(BeTrue(), "the webhook refuses: %v", err)
	var out []string
	for _, c := range status.Status().Details.Causes {
		out = append(out, c.Field+": "+c.Message)
	}
	return out
}

func fieldsAndBodies(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Field+": "+e.ErrorBody())
	}
	return out
}
