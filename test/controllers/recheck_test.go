package controllers

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/reconcileutil"
	"git.unkin.net/unkin/bind-operator/test/testkit"
	"git.unkin.net/unkin/bind-operator/webhooks"
)

// recheckPrefix starts the namespaces whose objects the suite's
// reconcilers re-check with the webhooks' rules. The other tests store,
// on purpose, objects those rules refuse (this suite runs without the
// webhooks) to reach named-checkconf and the controllers' own checks.
const recheckPrefix = "recheck-"

// suiteRechecks is what cmd wires: webhooks.Rechecker's rules, here only
// in recheckPrefix namespaces.
var suiteRechecks = func() *reconcileutil.Rechecks {
	rc, err := webhooks.NewRechecker(webhooks.Options{})
	if err != nil {
		panic(err)
	}
	return reconcileutil.NewRechecks(func(o client.Object) field.ErrorList {
		if !strings.HasPrefix(o.GetNamespace(), recheckPrefix) {
			return nil
		}
		return rc.Recheck(o)
	})
}()

// invalidObjects is the bind_operator_invalid_objects gauge over the
// suite manager's cache.
var invalidObjects prometheus.Collector

// invalidCount reads the gauge of kind; it counts every namespace, and
// only recheckPrefix ones can hold objects it refuses.
func invalidCount(g Gomega, kind string) float64 {
	reg := prometheus.NewRegistry()
	g.Expect(reg.Register(invalidObjects)).To(Succeed())
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != reconcileutil.InvalidObjectsMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == kind {
				return m.GetGauge().GetValue()
			}
		}
	}
	g.Expect(kind).To(BeEmpty(), "no sample for this kind")
	return -1
}

// newRecheckFixture is a namespace whose objects are re-checked, with an
// authoritative cluster "dns", its transfer key, and secondary zone
// "good" (secondary zones live in named.conf, so the ConfigMap shows
// which zones a render holds).
func newRecheckFixture(t *testing.T) *fixture {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s%d", recheckPrefix, seq.Add(1))}}
	testkit.Must(t, k8sClient.Create(ctx, ns))
	t.Cleanup(func() { _ = k8sClient.Delete(ctx, ns) })
	f := &fixture{t: t, g: NewWithT(t), ns: ns.Name}
	f.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "transfer-tsig"},
		Data:       map[string][]byte{v1.TSIGSecretKey: []byte("c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3I=")},
	})
	f.create(&v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: "transfer"}, Spec: v1.BindTSIGKeySpec{Algorithm: "hmac-sha256", ImportExisting: true, SecretName: "transfer-tsig"}})
	f.cluster = &v1.BindCluster{ObjectMeta: metav1.ObjectMeta{Name: "dns"}, Spec: v1.BindClusterSpec{
		Mode: v1.ModeAuthoritative, Replicas: ptr.To[int32](2), TransferKeyRef: &v1.LocalObjectReference{Name: "transfer"},
	}}
	f.create(f.cluster)
	f.create(secondaryZone("good", nil))
	return f
}

func secondaryZone(name string, allowQuery []v1.AddressMatchElement) *v1.BindZone {
	return &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: v1.DomainName(name + ".example"), Type: v1.ZoneSecondary,
		Primaries: []v1.RemoteServer{{Address: "192.0.2.53"}}, AllowQuery: allowQuery,
	}}
}

func (f *fixture) namedConf(g Gomega) string {
	var cm corev1.ConfigMap
	g.Expect(k8sClient.Get(ctx, f.key("dns-config"), &cm)).To(Succeed())
	return cm.Data["named.conf.primary"]
}

func (f *fixture) invalidEvent(name, sentence string) {
	f.t.Helper()
	f.g.Eventually(func(g Gomega) []corev1.Event {
		var events corev1.EventList
		g.Expect(k8sClient.List(ctx, &events, client.InNamespace(f.ns))).To(Succeed())
		return events.Items
	}).Should(ContainElement(And(
		HaveField("Reason", v1.ReasonInvalid), HaveField("Type", corev1.EventTypeWarning),
		HaveField("InvolvedObject.Name", name), HaveField("Message", ContainSubstring(sentence)),
	)), "a warning event for %s", name)
}

// TestStoredZoneRefusedByTodaysRulesIsLeftOut: a zone stored without the
// webhook (as one stored before a rule tightened) whose allowQuery BIND
// refuses would make named-checkconf reject the whole cluster's config;
// re-checked, it is left out, and the cluster serves the others.
func TestStoredZoneRefusedByTodaysRulesIsLeftOut(t *testing.T) {
	f := newRecheckFixture(t)
	f.create(secondaryZone("bad", []v1.AddressMatchElement{{Address: "10.0.0.1/8"}}))
	// A primary zone with a record the webhook would refuse: primary
	// zones are not in named.conf, but the gauge counts it.
	f.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "records"}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: "records.example", Type: v1.ZonePrimary,
		Records: []v1.RecordSet{{Name: "www", Type: "A", Values: []string{"not-an-address"}}},
	}})
	f.settle()
	f.g.Eventually(func(g Gomega) {
		conf := f.namedConf(g)
		g.Expect(conf).To(ContainSubstring(`zone "good.example"`))
		g.Expect(conf).NotTo(ContainSubstring("bad.example"), "the refused zone is left out")
		g.Expect(meta.IsStatusConditionTrue(f.getCluster().Status.Conditions, v1.ConditionConfigValid)).To(BeTrue(), "the rest is checked and runs")
	}).Should(Succeed())
	f.g.Eventually(func(g Gomega) float64 { return invalidCount(g, "BindZone") }).Should(BeNumerically(">=", 2))
	zonesBefore := invalidCount(f.g, "BindZone")

	// Fixed, it is rendered again; deleted, it leaves the gauge.
	updateLatest(t, f.key("bad"), &v1.BindZone{}, func(z *v1.BindZone) {
		z.Spec.AllowQuery = []v1.AddressMatchElement{{Address: "10.0.0.0/8"}}
	})
	f.g.Eventually(func(g Gomega) string { return f.namedConf(g) }).Should(ContainSubstring(`zone "bad.example"`))
	f.g.Eventually(func(g Gomega) float64 { return invalidCount(g, "BindZone") }).Should(Equal(zonesBefore - 1))
	testkit.Must(t, k8sClient.Delete(ctx, &v1.BindZone{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "records"}}))
	f.g.Eventually(func(g Gomega) float64 { return invalidCount(g, "BindZone") }).Should(Equal(zonesBefore - 2))
}

// TestStoredClusterRefusedByTodaysRulesKeepsRunning: a cluster whose
// extraOptions the allow-list refuses today reports Invalid with the
// webhook's sentence and an event, counts in the gauge, and keeps its
// ConfigMap and StatefulSet as they run until it is fixed.
func TestStoredClusterRefusedByTodaysRulesKeepsRunning(t *testing.T) {
	f := newRecheckFixture(t)
	before := f.settle()
	var cmBefore corev1.ConfigMap
	testkit.Must(t, k8sClient.Get(ctx, f.key("dns-config"), &cmBefore))
	clustersBefore := invalidCount(f.g, "BindCluster")

	updateLatest(t, f.key("dns"), &v1.BindCluster{}, func(c *v1.BindCluster) {
		c.Spec.ExtraOptions = []string{"tcp-clients 200;", `include "/etc/passwd";`}
	})
	const sentence = `spec.extraOptions[1]: Invalid value: "include \"/etc/passwd\";": "include" cannot be set in extraOptions: it names a file or directory`
	f.g.Eventually(func(g Gomega) {
		c := f.getCluster()
		ready := meta.FindStatusCondition(c.Status.Conditions, v1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(v1.ReasonInvalid))
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring(sentence))
		g.Expect(ready.ObservedGeneration).To(Equal(c.Generation))
	}).Should(Succeed(), "Ready=False (Invalid) with the webhook's sentence")
	f.invalidEvent("dns", sentence)
	f.g.Eventually(func(g Gomega) float64 { return invalidCount(g, "BindCluster") }).Should(Equal(clustersBefore + 1))
	if h := f.hash(); h != before {
		t.Fatalf("a refused cluster rolled: %s -> %s", before, h)
	}
	var cm corev1.ConfigMap
	testkit.Must(t, k8sClient.Get(ctx, f.key("dns-config"), &cm))
	if cm.ResourceVersion != cmBefore.ResourceVersion {
		t.Fatal("a refused cluster's ConfigMap was written")
	}

	// Fixed, it renders the allowed option and leaves the gauge.
	updateLatest(t, f.key("dns"), &v1.BindCluster{}, func(c *v1.BindCluster) { c.Spec.ExtraOptions = []string{"tcp-clients 200;"} })
	f.g.Eventually(func(g Gomega) {
		ready := meta.FindStatusCondition(f.getCluster().Status.Conditions, v1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).NotTo(Equal(v1.ReasonInvalid))
		g.Expect(f.namedConf(g)).To(ContainSubstring("tcp-clients 200;"))
	}).Should(Succeed())
	f.g.Eventually(func(g Gomega) float64 { return invalidCount(g, "BindCluster") }).Should(Equal(clustersBefore))
}

// TestStoredKeyRefusedByTodaysRulesGetsNoMaterial: a key with a name
// reserved today is reported and no Secret is generated for it; a zone
// that names it is left out, not the cluster's render.
func TestStoredKeyRefusedByTodaysRulesGetsNoMaterial(t *testing.T) {
	f := newRecheckFixture(t)
	f.create(&v1.BindTSIGKey{ObjectMeta: metav1.ObjectMeta{Name: "reserved"}, Spec: v1.BindTSIGKeySpec{KeyName: "rndc-key"}})
	f.create(secondaryZone("keyed", []v1.AddressMatchElement{{KeyRef: "reserved"}}))
	const sentence = `spec.keyName: Invalid value: "rndc-key": "rndc-key" is reserved (it is BIND's own control-channel key)`
	f.g.Eventually(func(g Gomega) {
		var k v1.BindTSIGKey
		g.Expect(k8sClient.Get(ctx, f.key("reserved"), &k)).To(Succeed())
		ready := meta.FindStatusCondition(k.Status.Conditions, v1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(v1.ReasonInvalid))
		g.Expect(ready.Message).To(ContainSubstring(sentence))
	}).Should(Succeed())
	f.invalidEvent("reserved", sentence)
	err := k8sClient.Get(ctx, f.key("reserved-tsig"), &corev1.Secret{})
	f.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no material for a refused key: %v", err)
	f.settle()
	f.g.Eventually(func(g Gomega) {
		conf := f.namedConf(g)
		g.Expect(conf).To(ContainSubstring(`zone "good.example"`))
		g.Expect(conf).NotTo(ContainSubstring("keyed.example"), "a zone naming the refused key is left out")
		g.Expect(meta.IsStatusConditionTrue(f.getCluster().Status.Conditions, v1.ConditionConfigValid)).To(BeTrue())
	}).Should(Succeed())
}
