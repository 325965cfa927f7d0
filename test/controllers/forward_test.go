package controllers

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestForwardZoneFollowsTheClusterItNames: a resolver's Forward zone that
// names a BindCluster instead of an address waits (ConfigValid=False,
// naming the cluster) until that cluster's query Service has an address,
// then forwards to it; the zone is excepted from DNSSEC validation while
// the target zone is unsigned and trusted by its DS once it is signed.
func TestForwardZoneFollowsTheClusterItNames(t *testing.T) {
	f := newFixture(t) // cluster "dns" serving example.com, unsigned
	g := f.g
	f.create(&v1.BindCluster{ObjectMeta: metav1.ObjectMeta{Name: "resolver"}, Spec: v1.BindClusterSpec{
		Mode: v1.ModeResolver, Replicas: ptr.To[int32](1),
	}})
	forward := func(obj, zone, target string) *v1.BindZone {
		return &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: obj}, Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: "resolver"}, ZoneName: v1.DomainName(zone), Type: v1.ZoneForward,
			Forwarders: []v1.Forwarder{{ClusterRef: &v1.LocalObjectReference{Name: target}}},
		}}
	}
	resolverConf := func(g Gomega) string {
		var cm corev1.ConfigMap
		g.Expect(k8sClient.Get(ctx, f.key("resolver-config"), &cm)).To(Succeed())
		return cm.Data["named.conf.primary"]
	}
	serviceIP := func(name string) string {
		var svc corev1.Service
		testkit.Must(t, k8sClient.Get(ctx, f.key(name), &svc))
		return svc.Spec.ClusterIP
	}

	// A cluster that does not exist yet: the config waits and says why.
	f.create(forward("later-forward", "later.example", "later"))
	g.Eventually(func(g Gomega) {
		var c v1.BindCluster
		g.Expect(k8sClient.Get(ctx, f.key("resolver"), &c)).To(Succeed())
		cond := meta.FindStatusCondition(c.Status.Conditions, v1.ConditionConfigValid)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Message).To(ContainSubstring(`names BindCluster "later", which does not exist or has no query Service address yet`))
	}).Should(Succeed())
	f.create(&v1.BindCluster{ObjectMeta: metav1.ObjectMeta{Name: "later"}, Spec: v1.BindClusterSpec{Mode: v1.ModeAuthoritative, Replicas: ptr.To[int32](1)}})
	g.Eventually(func(g Gomega) {
		g.Expect(resolverConf(g)).To(ContainSubstring("forwarders { " + serviceIP("later") + "; };"))
	}).Should(Succeed(), "the resolver forwards to the new cluster's query Service once it exists")

	// The authoritative cluster's unsigned zone: forwarded, not validated.
	f.create(forward("example-com-forward", "example.com", "dns"))
	g.Eventually(func(g Gomega) {
		conf := resolverConf(g)
		g.Expect(conf).To(ContainSubstring("forwarders { " + serviceIP("dns") + "; };"))
		g.Expect(conf).To(ContainSubstring(`validate-except { "example.com"; "later.example"; };`))
		g.Expect(conf).NotTo(ContainSubstring("trust-anchors"))
	}).Should(Succeed())

	// Signed, with its DS published in status: now a trust anchor.
	f.create(&v1.BindDNSSECPolicy{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Spec: v1.BindDNSSECPolicySpec{Keys: []v1.DNSSECKey{{Role: "CSK", Algorithm: "ecdsap256sha256"}}}})
	var zone v1.BindZone
	testkit.Must(t, k8sClient.Get(ctx, f.key("example-com"), &zone))
	patch := client.MergeFrom(zone.DeepCopy())
	zone.Spec.DNSSECPolicyRef = &v1.LocalObjectReference{Name: "standard"}
	testkit.Must(t, k8sClient.Patch(ctx, &zone, patch))
	patch = client.MergeFrom(zone.DeepCopy())
	zone.Status.DNSSEC = &v1.ZoneDNSSECStatus{DS: []string{"2371 13 2 C988EC423E3880EB8DD8A46FE06CA230EE23F35B578D3E5FD0E6E5AB4F2E0A4B"}}
	testkit.Must(t, k8sClient.Status().Patch(ctx, &zone, patch))
	g.Eventually(func(g Gomega) {
		conf := resolverConf(g)
		g.Expect(conf).To(ContainSubstring(`"example.com" static-ds 2371 13 2 "C988EC423E3880EB8DD8A46FE06CA230EE23F35B578D3E5FD0E6E5AB4F2E0A4B";`))
		g.Expect(conf).To(ContainSubstring(`validate-except { "later.example"; };`))
	}).Should(Succeed(), "the signed zone's DS becomes the resolver's trust anchor")
	if strings.Contains(resolverConf(g), "198.18.") {
		t.Errorf("no pod address may reach the resolver's config")
	}
}
