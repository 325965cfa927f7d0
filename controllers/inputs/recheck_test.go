package inputs

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/rechecktest"
)

// A render leaves out what the current rules refuse, and what names it,
// and keeps everything else.
func TestGatherLeavesOutRefusedObjects(t *testing.T) {
	ns := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: "ns", Name: name} }
	zone := func(name string, mut func(*bindv1alpha1.BindZoneSpec)) *bindv1alpha1.BindZone {
		z := &bindv1alpha1.BindZone{ObjectMeta: ns(name), Spec: bindv1alpha1.BindZoneSpec{
			ClusterRef: bindv1alpha1.LocalObjectReference{Name: "dns"}, ZoneName: bindv1alpha1.DomainName(name + ".example"), Type: bindv1alpha1.ZonePrimary}}
		if mut != nil {
			mut(&z.Spec)
		}
		return z
	}
	f := newInputsFixture(t,
		rechecktest.Refused(zone("refused", nil), "records"),
		rechecktest.Refused(&bindv1alpha1.BindACL{ObjectMeta: ns("bad"), Spec: bindv1alpha1.BindACLSpec{Entries: []bindv1alpha1.AddressMatchElement{{Address: "10.0.0.0/8"}}}}, "entries"),
		&bindv1alpha1.BindACL{ObjectMeta: ns("outer"), Spec: bindv1alpha1.BindACLSpec{Entries: []bindv1alpha1.AddressMatchElement{{ACLRef: "bad"}}}},
		&bindv1alpha1.BindACL{ObjectMeta: ns("good"), Spec: bindv1alpha1.BindACLSpec{Entries: []bindv1alpha1.AddressMatchElement{{Address: "192.0.2.0/24"}}}},
		zone("guarded", func(s *bindv1alpha1.BindZoneSpec) {
			s.AllowQuery = []bindv1alpha1.AddressMatchElement{{ACLRef: "outer"}}
		}),
		zone("open", func(s *bindv1alpha1.BindZoneSpec) {
			s.AllowQuery = []bindv1alpha1.AddressMatchElement{{ACLRef: "good"}}
		}),
		rechecktest.Refused(&bindv1alpha1.BindDNSSECPolicy{ObjectMeta: ns("sign")}, "signaturesRefresh"),
		zone("signed", func(s *bindv1alpha1.BindZoneSpec) {
			s.DNSSECPolicyRef = &bindv1alpha1.LocalObjectReference{Name: "sign"}
		}),
	)
	rc := reconcileutil.NewRechecks(rechecktest.LabelRules(nil))
	g := NewWithT(t)
	in, err := GatherInput(context.Background(), f.c, rc, f.cluster, "198.19.0.10", f.controlKey, render.DefaultPaths())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(zoneNames(in.Zones)).To(ConsistOf("a", "b", "c", "open"))
	var acls []string
	for _, a := range in.ACLs {
		acls = append(acls, a.Name)
	}
	g.Expect(acls).To(ConsistOf("good"))
	g.Expect(in.DNSSECPolicies).To(BeEmpty())
	_, err = render.Render(in)
	g.Expect(err).NotTo(HaveOccurred(), "the rest renders")

	// Without Rechecks nothing is left out (and the render says what is
	// missing: nothing here).
	all, err := GatherInput(context.Background(), f.c, nil, f.cluster, "198.19.0.10", f.controlKey, render.DefaultPaths())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(zoneNames(all.Zones)).To(ConsistOf("a", "b", "c", "open", "guarded", "signed", "refused"))

	// One zone's clause: a zone that names a left-out object says which.
	var signed bindv1alpha1.BindZone
	g.Expect(f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "signed"}, &signed)).To(Succeed())
	_, err = GatherZoneInput(context.Background(), f.c, rc, f.cluster, &signed, "198.19.0.10", f.controlKey, render.DefaultPaths())
	g.Expect(RenderRefused(err)).To(BeTrue())
	g.Expect(err).To(MatchError(`the zone names BindDNSSECPolicy "sign", which the operator's current admission rules refuse (its status says why); fix that object, or stop naming it`))
	var guarded bindv1alpha1.BindZone
	g.Expect(f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "guarded"}, &guarded)).To(Succeed())
	_, err = GatherZoneInput(context.Background(), f.c, rc, f.cluster, &guarded, "198.19.0.10", f.controlKey, render.DefaultPaths())
	g.Expect(err).To(MatchError(ContainSubstring(`the zone names BindACL "outer", which names BindACL "bad", which the operator's current admission rules refuse`)))
	_, err = GatherZoneInput(context.Background(), f.c, rc, f.cluster, f.zone, "198.19.0.10", f.controlKey, render.DefaultPaths())
	g.Expect(err).NotTo(HaveOccurred(), "a zone that names nothing left out")
}

// A cluster that names a left-out object cannot render: it reports so and
// keeps what runs (RenderRefused is the RenderFailed path).
func TestGatherRefusesAClusterNamingALeftOutKey(t *testing.T) {
	f := newInputsFixture(t)
	var transfer bindv1alpha1.BindTSIGKey
	g := NewWithT(t)
	g.Expect(f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "transfer"}, &transfer)).To(Succeed())
	g.Expect(f.c.Update(context.Background(), rechecktest.Refused(&transfer, "keyName"))).To(Succeed())
	_, err := GatherInput(context.Background(), f.c, reconcileutil.NewRechecks(rechecktest.LabelRules(nil)), f.cluster, "198.19.0.10", f.controlKey, render.DefaultPaths())
	g.Expect(RenderRefused(err)).To(BeTrue())
	g.Expect(err).To(MatchError(`spec.transferKeyRef names BindTSIGKey "transfer", which the operator's current admission rules refuse (its status says why); fix that object, or stop naming it`))
}
