package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// TestConfigKindsReportTheirUse (issue 13 item 6): an ACL nobody names is
// Ready and Unused; one named by a view and a zone of a cluster that does
// not exist counts both users and says which cluster is missing; a DNSSEC
// policy counts its zones; an RPZ policy its rules.
func TestConfigKindsReportTheirUse(t *testing.T) {
	g := NewWithT(t)
	ns := "config-status"
	testkit.Must(t, k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	in := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	ref := func(name string) v1.LocalObjectReference { return v1.LocalObjectReference{Name: name} }
	for _, o := range []client.Object{
		&v1.BindACL{ObjectMeta: in("lonely"), Spec: v1.BindACLSpec{Entries: []v1.AddressMatchElement{{Address: "192.0.2.0/24"}}}},
		&v1.BindACL{ObjectMeta: in("office"), Spec: v1.BindACLSpec{Entries: []v1.AddressMatchElement{{Address: "198.51.100.0/24"}}}},
		&v1.BindView{ObjectMeta: in("inside"), Spec: v1.BindViewSpec{ClusterRef: ref("ghost"), MatchClients: []v1.AddressMatchElement{{ACLRef: "office"}}}},
		&v1.BindDNSSECPolicy{ObjectMeta: in("sign"), Spec: v1.BindDNSSECPolicySpec{Keys: []v1.DNSSECKey{{Role: "CSK", Algorithm: "ecdsap256sha256"}}}},
		&v1.BindZone{ObjectMeta: in("z"), Spec: v1.BindZoneSpec{ClusterRef: ref("ghost"), ZoneName: "z.example", Type: v1.ZonePrimary,
			ViewRef: &v1.LocalObjectReference{Name: "inside"}, DNSSECPolicyRef: &v1.LocalObjectReference{Name: "sign"},
			AllowQuery: []v1.AddressMatchElement{{ACLRef: "office"}}}},
		&v1.BindPolicy{ObjectMeta: in("rpz"), Spec: v1.BindPolicySpec{ClusterRef: ref("ghost"), ZoneName: "rpz.example.internal",
			Rules: []v1.RPZRule{{Match: "bad.example", Action: "NXDOMAIN"}, {Match: "worse.example", Action: "NODATA"}}}},
	} {
		testkit.Must(t, k8sClient.Create(ctx, o))
	}
	ready := func(cs []metav1.Condition) string {
		if c := meta.FindStatusCondition(cs, v1.ConditionReady); c != nil {
			return string(c.Status) + "/" + c.Reason + ": " + c.Message
		}
		return ""
	}
	const missing = `False/` + v1.ReasonClusterNotUpToDate + `: BindCluster "ghost" does not exist; create it or fix the reference.`
	g.Eventually(func(g Gomega) {
		var lonely, office v1.BindACL
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lonely"}, &lonely)).To(Succeed())
		g.Expect(lonely.Status.Users).To(BeZero())
		g.Expect(ready(lonely.Status.Conditions)).To(HavePrefix("True/" + v1.ReasonUnused))
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "office"}, &office)).To(Succeed())
		g.Expect(office.Status.Users).To(BeEquivalentTo(2))
		g.Expect(ready(office.Status.Conditions)).To(Equal(missing))
		var view v1.BindView
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "inside"}, &view)).To(Succeed())
		g.Expect(view.Status.ZoneCount).To(BeEquivalentTo(1))
		g.Expect(ready(view.Status.Conditions)).To(Equal(missing))
		var sign v1.BindDNSSECPolicy
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sign"}, &sign)).To(Succeed())
		g.Expect(sign.Status.ZoneCount).To(BeEquivalentTo(1))
		var rpz v1.BindPolicy
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "rpz"}, &rpz)).To(Succeed())
		g.Expect(rpz.Status.RuleCount).To(BeEquivalentTo(2))
		g.Expect(ready(rpz.Status.Conditions)).To(Equal(missing))
	}).WithTimeout(20 * time.Second).Should(Succeed())
}
