package controllers

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"git.unkin.net/unkin/bind-operator/agent"
	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/controllers/clusters"
	"git.unkin.net/unkin/bind-operator/test/testkit"
)

func TestClusterOwnsItsObjects(t *testing.T) {
	f := newFixture(t)
	sts := f.statefulSet()

	if got := *sts.Spec.Replicas; got != 3 {
		t.Errorf("replicas = %d, want 3", got)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("want a claim template for the primary's data, got %d", len(sts.Spec.VolumeClaimTemplates))
	}
	names := map[string]bool{}
	for _, c := range sts.Spec.Template.Spec.Containers {
		names[c.Name] = true
	}
	if !names["named"] || !names["agent"] {
		t.Errorf("pod template containers = %v, want named and agent", names)
	}

	var cm corev1.ConfigMap
	testkit.Must(t, k8sClient.Get(ctx, f.key("dns-config"), &cm))
	for _, k := range []string{"named.conf.primary", "named.conf.secondary", "entrypoint.sh"} {
		if cm.Data[k] == "" {
			t.Errorf("ConfigMap lacks %s", k)
		}
	}
	if !strings.Contains(cm.Data["named.conf.secondary"], `allow-notify { key "transfer"; };`) {
		t.Errorf("secondaries must accept NOTIFYs signed with the transfer key:\n%s", cm.Data["named.conf.secondary"])
	}
	var secret corev1.Secret
	testkit.Must(t, k8sClient.Get(ctx, f.key("dns-keys"), &secret))
	if len(secret.Data["keys.conf"]) == 0 || len(secret.Data["control.conf"]) == 0 {
		t.Errorf("keys Secret lacks keys.conf or control.conf: %v", keysOf(secret.Data))
	}
	for _, k := range []string{agent.FileCA, agent.FileServerCert, agent.FileServerKey} {
		if len(secret.Data[k]) == 0 {
			t.Errorf("keys Secret lacks the agent's %s", k)
		}
	}
	for _, k := range []string{agent.FileCAKey, agent.FileClientKey} {
		if len(secret.Data[k]) != 0 {
			t.Errorf("keys Secret, mounted by every BIND pod, must not hold %s", k)
		}
	}
	var caSecret corev1.Secret
	testkit.Must(t, k8sClient.Get(ctx, f.key("dns-agent-ca"), &caSecret))
	if _, err := agent.ClientTLSConfig(caSecret.Data[agent.FileCA], caSecret.Data[agent.FileClientCert], caSecret.Data[agent.FileClientKey]); err != nil {
		t.Errorf("the operator's agent client material is unusable: %v", err)
	}
	for _, k := range []string{"named.conf.primary", "named.conf.secondary"} {
		if strings.Contains(cm.Data[k], "c2VjcmV0") {
			t.Errorf("%s holds key material; it belongs in the Secret only", k)
		}
	}

	cluster := f.getCluster()
	owned := []client.Object{&cm, &secret, &caSecret, sts}
	for _, name := range []string{"dns", "dns-primary", "dns-pods"} {
		var svc corev1.Service
		testkit.Must(t, k8sClient.Get(ctx, f.key(name), &svc))
		owned = append(owned, &svc)
	}
	var pdb policyv1.PodDisruptionBudget
	testkit.Must(t, k8sClient.Get(ctx, f.key("dns"), &pdb))
	var np networkingv1.NetworkPolicy
	testkit.Must(t, k8sClient.Get(ctx, f.key("dns"), &np))
	owned = append(owned, &pdb, &np)
	// Metrics only from the monitoring namespaces, the agent's API only from
	// the operator's pods, DNS from anywhere.
	peers := map[int32][]networkingv1.NetworkPolicyPeer{}
	for _, rule := range np.Spec.Ingress {
		for _, p := range rule.Ports {
			peers[p.Port.IntVal] = rule.From
		}
	}
	f.g.Expect(peers).To(HaveKeyWithValue(int32(v1.DefaultMetricsPort), []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &clusters.DefaultMetricsNamespaces}}))
	f.g.Expect(peers).To(HaveKeyWithValue(int32(v1.DefaultAgentPort), []networkingv1.NetworkPolicyPeer{{
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": "bind-operator"}},
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: "bind-operator-system"}},
	}}))
	f.g.Expect(peers).To(HaveKeyWithValue(int32(53), BeEmpty()))
	for _, o := range owned {
		if !metav1.IsControlledBy(o, cluster) {
			t.Errorf("%T %s is not controlled by the BindCluster", o, o.GetName())
		}
	}

	var primary corev1.Service
	testkit.Must(t, k8sClient.Get(ctx, f.key("dns-primary"), &primary))
	f.g.Eventually(func(g Gomega) {
		c := f.getCluster()
		g.Expect(c.Status.PrimaryAddress).To(Equal(primary.Spec.ClusterIP))
		g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, v1.ConditionConfigValid)).To(BeTrue(), "ConfigValid")
		g.Expect(c.Status.ConfigHash).To(Equal(f.hash()))
		g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
	}).Should(Succeed(), "status.primaryAddress and ConfigValid")
	if !strings.Contains(cm.Data["named.conf.secondary"], primary.Spec.ClusterIP) {
		t.Errorf("secondaries should transfer from the primary Service ClusterIP %s", primary.Spec.ClusterIP)
	}
}

// The seed's permanent guard: a new primary pod IP must never change the
// config, or every roll would cause another.
func TestHashIgnoresPrimaryPodIP(t *testing.T) {
	f := newFixture(t)
	before := f.settle()
	gen := f.statefulSet().Generation

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dns-0", Labels: map[string]string{v1.LabelCluster: "dns", appsv1.StatefulSetPodNameLabel: "dns-0"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "named", Image: "bind"}}},
	}
	f.create(pod)
	for _, ip := range []string{"198.18.0.10", "198.18.0.11", "198.18.7.200"} {
		pod.Status.PodIP = ip
		pod.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		testkit.Must(t, k8sClient.Status().Update(ctx, pod))
		after := f.settle()
		if after != before {
			t.Fatalf("pod IP %s changed the config hash: %s -> %s", ip, before, after)
		}
		var cm corev1.ConfigMap
		testkit.Must(t, k8sClient.Get(ctx, f.key("dns-config"), &cm))
		for k, v := range cm.Data {
			if strings.Contains(v, ip) {
				t.Fatalf("%s names the pod IP %s: restart-scoped config may only name stable addresses", k, ip)
			}
		}
	}
	if g := f.statefulSet().Generation; g != gen {
		t.Fatalf("StatefulSet generation moved from %d to %d while only a pod IP changed", gen, g)
	}
}

// shufflingClient returns every list in a new random order, as the API
// server or a cache may.
type shufflingClient struct {
	client.Client
	rnd *rand.Rand
}

func newShuffler(c client.Client, seed uint64) client.Client {
	return shufflingClient{Client: c, rnd: rand.New(rand.NewPCG(seed, seed))}
}

func (s shufflingClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := s.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	s.rnd.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
	return meta.SetList(list, items)
}

func TestHashStableAcross100ShuffledReconciles(t *testing.T) {
	f := newFixture(t)
	// More objects, so shuffles have something to reorder.
	for _, n := range []string{"b", "c", "a"} {
		f.create(&v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "fwd-" + n}, Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: v1.DomainName(n + ".corp.example"), Type: v1.ZoneForward,
			Forwarders: []v1.Forwarder{{Address: "198.18.1.53"}},
		}})
		f.create(&v1.BindACL{ObjectMeta: metav1.ObjectMeta{Name: "acl-" + n}, Spec: v1.BindACLSpec{
			Entries: []v1.AddressMatchElement{{Address: "198.18.2.0/24"}},
		}})
	}
	want := f.settle()
	sts := f.statefulSet()
	before := f.ownedVersions()

	r := *reconciler
	r.Client = newShuffler(k8sClient, 42)
	for i := range 100 {
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: f.key("dns")}); err != nil {
			t.Fatalf("reconcile %d: %v", i, err)
		}
	}
	after := f.statefulSet()
	if got := after.Spec.Template.Annotations[v1.AnnotationConfigHash]; got != want {
		t.Fatalf("hash changed after shuffled reconciles: %s -> %s", want, got)
	}
	if after.ResourceVersion != sts.ResourceVersion || after.Generation != sts.Generation {
		t.Fatalf("StatefulSet was rewritten by identical reconciles (rv %s -> %s)", sts.ResourceVersion, after.ResourceVersion)
	}
	// Server-side apply of an unchanged object is no write: not one owned
	// object moved.
	if got := f.ownedVersions(); !maps.Equal(got, before) {
		t.Fatalf("identical reconciles rewrote owned objects: resourceVersions %v -> %v", before, got)
	}
}

// ownedVersions returns the resourceVersion of every object the fixture's
// cluster owns, by kind and name.
func (f *fixture) ownedVersions() map[string]string {
	f.t.Helper()
	out := map[string]string{}
	for name, obj := range map[string]client.Object{
		"dns-config": &corev1.ConfigMap{}, "dns-keys": &corev1.Secret{}, "dns-agent-ca": &corev1.Secret{},
		"dns": &corev1.Service{}, "dns-primary": &corev1.Service{}, "dns-pods": &corev1.Service{},
	} {
		testkit.Must(f.t, k8sClient.Get(ctx, f.key(name), obj))
		out[fmt.Sprintf("%T/%s", obj, name)] = obj.GetResourceVersion()
	}
	for _, obj := range []client.Object{&appsv1.StatefulSet{}, &policyv1.PodDisruptionBudget{}, &networkingv1.NetworkPolicy{}} {
		testkit.Must(f.t, k8sClient.Get(ctx, f.key("dns"), obj))
		out[fmt.Sprintf("%T/dns", obj)] = obj.GetResourceVersion()
	}
	return out
}

func TestHashChangesOnceOnKeyOrACLChange(t *testing.T) {
	f := newFixture(t)
	before := f.settle()

	var acl v1.BindACL
	testkit.Must(t, k8sClient.Get(ctx, f.key("clients"), &acl))
	acl.Spec.Entries = append(acl.Spec.Entries, v1.AddressMatchElement{Address: "2001:db8::/32"})
	testkit.Must(t, k8sClient.Update(ctx, &acl))
	afterACL := f.settle()
	if afterACL == before {
		t.Fatal("changing a referenced ACL did not change the config hash")
	}
	gen := f.statefulSet().Generation

	var secret corev1.Secret
	testkit.Must(t, k8sClient.Get(ctx, f.key("transfer-tsig"), &secret))
	secret.Data[v1.TSIGSecretKey] = []byte("bmV3LW5ldy1uZXctbmV3LW5ldy1uZXctbmV3LW5ldy0=")
	testkit.Must(t, k8sClient.Update(ctx, &secret))
	// The imported Secret is not cached (only the operator's own are), so
	// the cluster sees the change at its next re-read (SecretResyncPeriod).
	f.g.Eventually(func(g Gomega) string {
		return f.hashedStatefulSet(g).Spec.Template.Annotations[v1.AnnotationConfigHash]
	}).ShouldNot(Equal(afterACL), "changing the imported TSIG key material changes the config hash")
	afterKey := f.settle()
	if g := f.statefulSet().Generation; g != gen+1 {
		t.Fatalf("a key change should roll exactly once: generation %d -> %d", gen, g)
	}

	// An ACL nobody references changes nothing.
	f.create(&v1.BindACL{ObjectMeta: metav1.ObjectMeta{Name: "unused"}, Spec: v1.BindACLSpec{Entries: []v1.AddressMatchElement{{Builtin: "none"}}}})
	if h := f.settle(); h != afterKey {
		t.Fatal("an unreferenced ACL changed the config hash")
	}
}

func TestRejectedConfigNeverRolls(t *testing.T) {
	f := newFixture(t)
	before := f.settle()
	var cmBefore corev1.ConfigMap
	testkit.Must(t, k8sClient.Get(ctx, f.key("dns-config"), &cmBefore))

	// The schema admits any statement text; only named-checkconf (and the
	// validating webhook, not installed here) knows this one is broken.
	updateLatest(t, f.key("dns"), &v1.BindCluster{}, func(c *v1.BindCluster) { c.Spec.ExtraOptions = []string{"notify-rate fast;"} })

	f.g.Eventually(func(g Gomega) {
		cond := meta.FindStatusCondition(f.getCluster().Status.Conditions, v1.ConditionConfigValid)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(v1.ReasonCheckFailed))
		g.Expect(cond.Message).To(ContainSubstring("notify-rate"))
	}).Should(Succeed(), "ConfigValid=False with the checker's message")
	if h := f.hash(); h != before {
		t.Fatalf("a rejected config reached the StatefulSet: %s -> %s", before, h)
	}
	var cm corev1.ConfigMap
	testkit.Must(t, k8sClient.Get(ctx, f.key("dns-config"), &cm))
	if cm.ResourceVersion != cmBefore.ResourceVersion {
		t.Fatal("a rejected config replaced the ConfigMap")
	}
	f.g.Eventually(func(g Gomega) []corev1.Event {
		var events corev1.EventList
		g.Expect(k8sClient.List(ctx, &events, client.InNamespace(f.ns))).To(Succeed())
		return events.Items
	}).Should(ContainElement(And(
		HaveField("Reason", v1.ReasonCheckFailed), HaveField("Type", corev1.EventTypeWarning),
	)), "a warning event")

	// Fixing the option rolls once more and clears the condition.
	updateLatest(t, f.key("dns"), &v1.BindCluster{}, func(c *v1.BindCluster) { c.Spec.ExtraOptions = []string{"tcp-clients 200;"} })
	f.g.Eventually(func() bool {
		return meta.IsStatusConditionTrue(f.getCluster().Status.Conditions, v1.ConditionConfigValid)
	}).Should(BeTrue(), "ConfigValid=True again")
	if f.settle() == before {
		t.Fatal("the fixed option did not reach the StatefulSet")
	}
}

func TestTransferAddressPrefersClusterIP(t *testing.T) {
	f := newFixture(t)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dns-0"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "named", Image: "bind"}}},
	}
	f.create(pod)
	pod.Status.PodIP = "198.18.3.3"
	testkit.Must(t, k8sClient.Status().Update(ctx, pod))
	cluster := f.getCluster()

	got, err := clusters.TransferAddress(ctx, k8sClient, cluster, "198.19.0.77")
	if err != nil || got != "198.19.0.77" {
		t.Errorf("with a ClusterIP: got %q, %v; want the ClusterIP", got, err)
	}
	got, err = clusters.TransferAddress(ctx, k8sClient, cluster, "")
	if err != nil || got != "198.18.3.3" {
		t.Errorf("without a ClusterIP: got %q, %v; want the primary pod IP", got, err)
	}
	testkit.Must(t, k8sClient.Delete(ctx, pod))
	f.g.Eventually(func() (string, error) {
		return clusters.TransferAddress(ctx, k8sClient, cluster, "")
	}).Should(BeEmpty(), "the pod to go")
}

func keysOf(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The agent reloads its certificate per handshake, so reissuing it must not
// restart a pod.
func TestAgentCertificateRenewalDoesNotRoll(t *testing.T) {
	f := newFixture(t)
	before := f.settle()
	var secret corev1.Secret
	testkit.Must(t, k8sClient.Get(ctx, f.key("dns-keys"), &secret))
	oldCert := string(secret.Data[agent.FileServerCert])
	// A reconcile already in flight when the entry is removed writes back
	// the certificate it read, which is still valid: remove it again until
	// one that started after the removal issues a new one.
	f.g.Eventually(func(g Gomega) string {
		g.Expect(k8sClient.Get(ctx, f.key("dns-keys"), &secret)).To(Succeed())
		cert := string(secret.Data[agent.FileServerCert])
		if cert == oldCert {
			delete(secret.Data, agent.FileServerCert)
			_ = k8sClient.Update(ctx, &secret) // a conflict is retried on the next poll
		}
		return cert
	}).Should(And(Not(BeEmpty()), Not(Equal(oldCert))), "a new serving certificate")
	if h := f.settle(); h != before {
		t.Fatalf("reissuing the agent certificate changed the config hash: %s -> %s", before, h)
	}
}

// TestNewClusterStartsWithWhatWasAppliedWithIt: a catalog applied a second
// after its BindCluster (as one kubectl apply of a folder spreads its
// objects) is in the config the pods first start with; the StatefulSet is
// written once, not created and then rolled.
func TestNewClusterStartsWithWhatWasAppliedWithIt(t *testing.T) {
	f := newFixture(t)
	time.Sleep(time.Second) // the gap between two objects of one apply, not a wait for a result
	f.create(&v1.BindCatalogZone{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Spec: v1.BindCatalogZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: "dns"}, ZoneName: "late.example.internal",
		TransferKeyRef: v1.LocalObjectReference{Name: "transfer"},
	}})
	f.settle()
	if g := f.statefulSet().Generation; g != 1 {
		t.Errorf("the StatefulSet of a new cluster was written %d times; the catalog applied with it rolled it", g)
	}
	var cm corev1.ConfigMap
	testkit.Must(t, k8sClient.Get(ctx, f.key("dns-config"), &cm))
	if !strings.Contains(cm.Data["named.conf.secondary"], "late.example.internal") {
		t.Errorf("the first config lacks the catalog applied with the cluster:\n%s", cm.Data["named.conf.secondary"])
	}
}
