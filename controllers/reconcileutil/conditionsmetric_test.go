package reconcileutil

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	bindv1alpha1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/rechecktest"
)

// conditionCounts gathers bind_operator_conditions as
// "kind/namespace/condition/status/reason" -> value.
func conditionCounts(g Gomega, c prometheus.Collector) map[string]float64 {
	out := map[string]float64{}
	for _, m := range gathered(g, c, ConditionsMetric) {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		out[strings.Join([]string{l["kind"], l["object_namespace"], l["condition"], l["status"], l["reason"]}, "/")] = m.GetGauge().GetValue()
	}
	return out
}

func cond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: "m", LastTransitionTime: metav1.Now()}
}

// The gauge counts the objects of each kind by namespace and condition,
// as the cache holds them at each scrape: a condition that changes moves
// its object to another series, and a series that no object reports any
// more is gone.
func TestConditionsGauge(t *testing.T) {
	g := NewWithT(t)
	om := func(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
	rec := func(ns, name string, conds ...metav1.Condition) *bindv1alpha1.DNSRecord {
		r := &bindv1alpha1.DNSRecord{ObjectMeta: om(ns, name)}
		r.Status.Conditions = conds
		return r
	}
	dns := &bindv1alpha1.BindCluster{ObjectMeta: om("dns", "dns")}
	dns.Status.Conditions = []metav1.Condition{
		cond(bindv1alpha1.ConditionConfigValid, metav1.ConditionFalse, bindv1alpha1.ReasonCheckFailed),
		cond(bindv1alpha1.ConditionReady, metav1.ConditionTrue, bindv1alpha1.ReasonAllReady),
	}
	c := fake.NewClientBuilder().WithScheme(rechecktest.Scheme(t)).WithObjects(
		dns,
		rec("a", "www", cond(bindv1alpha1.ConditionReady, metav1.ConditionTrue, bindv1alpha1.ReasonApplied), cond(bindv1alpha1.ConditionConflict, metav1.ConditionFalse, bindv1alpha1.ReasonNoConflict)),
		rec("a", "api", cond(bindv1alpha1.ConditionReady, metav1.ConditionTrue, bindv1alpha1.ReasonApplied), cond(bindv1alpha1.ConditionConflict, metav1.ConditionFalse, bindv1alpha1.ReasonNoConflict)),
		rec("a", "mx", cond(bindv1alpha1.ConditionReady, metav1.ConditionFalse, bindv1alpha1.ReasonClaimed), cond(bindv1alpha1.ConditionConflict, metav1.ConditionTrue, bindv1alpha1.ReasonClaimed)),
		rec("b", "www", cond(bindv1alpha1.ConditionReady, metav1.ConditionFalse, bindv1alpha1.ReasonUpdateRefused)),
		rec("b", "new"), // no condition yet: counted nowhere
	).Build()
	col := ConditionsCollector(c)
	g.Expect(conditionCounts(g, col)).To(Equal(map[string]float64{
		"BindCluster/dns/ConfigValid/False/ConfigRejected": 1,
		"BindCluster/dns/Ready/True/AllReplicasReady":      1,
		"DNSRecord/a/Ready/True/Applied":                   2,
		"DNSRecord/a/Conflict/False/NoConflict":            2,
		"DNSRecord/a/Ready/False/ClaimedByAnother":         1,
		"DNSRecord/a/Conflict/True/ClaimedByAnother":       1,
		"DNSRecord/b/Ready/False/UpdateRefused":            1,
	}))

	// The cluster's next configuration passes; the refused record is deleted.
	ctx := context.Background()
	var got bindv1alpha1.BindCluster
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(dns), &got)).To(Succeed())
	got.Status.Conditions[0] = cond(bindv1alpha1.ConditionConfigValid, metav1.ConditionTrue, bindv1alpha1.ReasonConfigValid)
	g.Expect(c.Update(ctx, &got)).To(Succeed())
	g.Expect(c.Delete(ctx, rec("b", "www"))).To(Succeed())
	counts := conditionCounts(g, col)
	g.Expect(counts).To(HaveKeyWithValue("BindCluster/dns/ConfigValid/True/Checked", 1.0))
	g.Expect(counts).NotTo(HaveKey("BindCluster/dns/ConfigValid/False/ConfigRejected"))
	g.Expect(counts).NotTo(HaveKey("DNSRecord/b/Ready/False/UpdateRefused"))
}
