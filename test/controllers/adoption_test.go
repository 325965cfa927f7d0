package controllers

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	. "github.com/onsi/gomega/gstruct"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

// An object that already holds a name a BindCluster needs, and that the
// cluster does not control, is never modified: the cluster reports it
// (Ready=False NameConflict and a warning event), creates nothing, and
// creates its own once the object is gone.
func TestClusterNeverAdoptsExistingObjects(t *testing.T) {
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "someone-else"}}
	// Labelled like the operator's own or not: neither is adopted.
	mine := map[string]string{v1.LabelManagedBy: v1.ManagedByValue}
	for _, tc := range []struct {
		kind     string
		existing client.Object
	}{
		{"Service", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dns"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}},
		{"Service", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dns-primary"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}},
		{"Service", &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dns-pods"}, Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 80}}}}},
		{"ConfigMap", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dns-config"}, Data: map[string]string{"named.conf": "// someone else's"}}},
		{"Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "dns-keys"}, Data: map[string][]byte{"keys.conf": []byte("someone else's")}}},
		{"Secret", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "dns-agent-ca", Labels: mine}, Data: map[string][]byte{"ca.crt": []byte("someone else's")}}},
		{"StatefulSet", &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "dns"}, Spec: appsv1.StatefulSetSpec{
			Selector: selector,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: selector.MatchLabels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app:1"}}},
			},
		}}},
		{"PodDisruptionBudget", &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "dns"}, Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &intstr.IntOrString{IntVal: 2}, Selector: selector,
		}}},
		{"NetworkPolicy", &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "dns", Labels: mine}, Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{}, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		}}},
	} {
		t.Run(tc.kind+"/"+tc.existing.GetName(), func(t *testing.T) {
			f := newFixtureWith(t, tc.existing)
			key := f.key(tc.existing.GetName())
			before := stored(t, key, tc.existing)
			want := fmt.Sprintf("%s %s already exists and is not controlled by this BindCluster; the operator never modifies it and creates nothing for this cluster until it is gone: delete it (or rename this BindCluster), and the operator creates its own.", tc.kind, tc.existing.GetName())

			f.g.Eventually(func(g Gomega) {
				c := f.getCluster()
				cond := meta.FindStatusCondition(c.Status.Conditions, v1.ConditionReady)
				g.Expect(cond).NotTo(BeNil())
				g.Expect(*cond).To(MatchFields(IgnoreExtras, Fields{
					"Status": Equal(metav1.ConditionFalse), "Reason": Equal(v1.ReasonNameConflict), "Message": Equal(want),
				}))
			}).Should(Succeed(), "Ready=False NameConflict naming the object")
			f.g.Eventually(func(g Gomega) []eventsv1.Event {
				var events eventsv1.EventList
				g.Expect(k8sClient.List(ctx, &events, client.InNamespace(f.ns))).To(Succeed())
				return events.Items
			}).Should(ContainElement(MatchFields(IgnoreExtras, Fields{
				"Type": Equal(corev1.EventTypeWarning), "Reason": Equal(v1.ReasonNameConflict), "Note": Equal(want),
				"Regarding": MatchFields(IgnoreExtras, Fields{"Kind": Equal("BindCluster"), "Name": Equal("dns")}),
			})), "a warning event naming the object")

			// Several re-reads (SecretResyncPeriod is 1 s here) change nothing.
			f.g.Consistently(func() string { return stored(t, key, tc.existing) }).
				WithTimeout(3*time.Second).Should(Equal(before), "the existing object was modified")
			var sts appsv1.StatefulSet
			if tc.kind != "StatefulSet" {
				f.g.Expect(k8sClient.Get(ctx, f.key("dns"), &sts)).NotTo(Succeed(), "nothing is created while the name is taken")
			}

			testkit.Must(t, k8sClient.Delete(ctx, tc.existing))
			cluster := f.getCluster()
			f.g.Eventually(func(g Gomega) {
				obj := tc.existing.DeepCopyObject().(client.Object)
				g.Expect(k8sClient.Get(ctx, key, obj)).To(Succeed())
				g.Expect(metav1.IsControlledBy(obj, cluster)).To(BeTrue(), "the new %s is the cluster's", tc.kind)
				c := f.getCluster()
				g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, v1.ConditionConfigValid)).To(BeTrue())
				g.Expect(meta.FindStatusCondition(c.Status.Conditions, v1.ConditionReady).Reason).NotTo(Equal(v1.ReasonNameConflict))
			}).Should(Succeed(), "the cluster creates its own %s once the other one is gone", tc.kind)
		})
	}
}

// stored is the object as the API server holds it, as JSON.
func stored(t *testing.T, key client.ObjectKey, like client.Object) string {
	t.Helper()
	obj := like.DeepCopyObject().(client.Object)
	testkit.Must(t, k8sClient.Get(ctx, key, obj))
	raw, err := json.Marshal(obj)
	testkit.Must(t, err)
	return string(raw)
}
