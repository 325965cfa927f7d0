package dataplane

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
)

// TestSignedZoneKeepsItsKeysWhenThePrimaryLosesItsVolume (issue 46 item
// 6): the keys named makes for a signed zone are copied into a Secret the
// BindZone owns; a primary that comes back with an empty volume gets them
// back before the zone is added again, so it publishes the same DNSKEYs
// and the DS in status (the one the parent holds) stays the same. The key
// material is in the Secret only: not in the zone's status or events.
func TestSignedZoneKeepsItsKeysWhenThePrimaryLosesItsVolume(t *testing.T) {
	c := newCluster(t, 2)
	policy := v1.BindDNSSECPolicy{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: c.ns}, Spec: v1.BindDNSSECPolicySpec{
		Keys: []v1.DNSSECKey{
			{Role: "KSK", Algorithm: "ecdsap256sha256", Lifetime: v1.DNSSECLifetimeUnlimited},
			{Role: "ZSK", Algorithm: "ecdsap256sha256", Lifetime: v1.DNSSECLifetimeUnlimited},
		},
	}}
	zone := v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "keyed", Namespace: c.ns}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "keyed.test", Type: v1.ZonePrimary,
		CatalogZoneRef:  &v1.LocalObjectReference{Name: "catalog"},
		DNSSECPolicyRef: &v1.LocalObjectReference{Name: "kept"},
		Records:         []v1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.8"}}},
	}}
	c.Roll([]v1.BindZone{zone}, policy)
	c.create(policy.DeepCopy())
	c.create(zone.DeepCopy())
	c.waitZone("keyed", v1.ReasonServed, 30*time.Second)

	primary := c.Nodes[0]
	var secret corev1.Secret
	var ds []string
	c.g.Eventually(func(g Gomega) {
		z := c.zone("keyed")
		cond := meta.FindStatusCondition(z.Status.Conditions, v1.ConditionDNSSECKeysStored)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(v1.ReasonKeysStored), cond.Message)
		g.Expect(z.Status.DNSSEC.KeysSecret).To(Equal("keyed-dnssec-keys"))
		g.Expect(z.Status.DNSSEC.DS).To(HaveLen(1))
		ds = z.Status.DNSSEC.DS
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "keyed-dnssec-keys"}, &secret)).To(Succeed())
		g.Expect(secret.Data).To(HaveLen(6), "a .key, .private and .state file for each of the two keys")
	}).WithTimeout(30*time.Second).Should(Succeed(), "the zone's keys copied into its Secret")
	g := NewWithT(t)
	g.Expect(secret.Labels).To(HaveKeyWithValue(v1.LabelManagedBy, v1.ManagedByValue))
	g.Expect(metav1.GetControllerOf(&secret)).To(HaveField("Name", "keyed"), "the BindZone owns its keys Secret")
	tags := dnskeyTags(primary.DNSAddr(), "keyed.test")
	g.Expect(tags).To(HaveLen(2))

	// Key material never leaves the Secret.
	st, err := json.Marshal(c.zone("keyed").Status)
	g.Expect(err).NotTo(HaveOccurred())
	var events corev1.EventList
	g.Expect(k8s.List(ctx, &events, client.InNamespace(c.ns))).To(Succeed())
	for name, data := range secret.Data {
		if !strings.HasSuffix(name, ".private") {
			continue
		}
		for line := range strings.SplitSeq(string(data), "\n") {
			if k, v, _ := strings.Cut(line, ": "); k == "PrivateKey" {
				g.Expect(string(st)).NotTo(ContainSubstring(v), "the private key in the zone's status")
				for _, e := range events.Items {
					g.Expect(e.Message).NotTo(ContainSubstring(v), "the private key in event %s", e.Name)
				}
			}
		}
	}

	c.Wipe(primary)
	g.Expect(dnskeyTags(primary.DNSAddr(), "keyed.test")).To(BeEmpty(), "the wiped primary serves the zone no more")
	c.editZone("keyed", func(z *v1.BindZone) { z.Annotations = map[string]string{v1.AnnotationResync: "wiped"} })
	c.waitZone("keyed", v1.ReasonServed, 30*time.Second)
	c.g.Eventually(func() []uint16 { return dnskeyTags(primary.DNSAddr(), "keyed.test") }).WithTimeout(20*time.Second).
		Should(Equal(tags), "the primary signs with the keys it had before it lost its volume")
	c.g.Eventually(func(g Gomega) {
		z := c.zone("keyed")
		g.Expect(z.Status.ObservedResync).To(Equal("wiped"))
		g.Expect(z.Status.DNSSEC.DS).To(Equal(ds), "the DS the parent holds")
	}).WithTimeout(20 * time.Second).Should(Succeed())
	var restored bool
	c.g.Eventually(func() bool {
		g.Expect(k8s.List(ctx, &events, client.InNamespace(c.ns))).To(Succeed())
		restored = slices.ContainsFunc(events.Items, func(e corev1.Event) bool { return e.Reason == "DNSSECKeysRestored" })
		return restored
	}).WithTimeout(10*time.Second).Should(BeTrue(), "an event that says the keys were restored")
	t.Logf("DNSKEYs %v and DS %v kept across the primary's lost volume", tags, ds)
}

// dnskeyTags are the tags of the DNSKEYs addr serves for zone, sorted.
func dnskeyTags(addr, zone string) []uint16 {
	var tags []uint16
	for _, v := range served(addr, zone, dns.TypeDNSKEY) {
		rr, err := dns.NewRR(dns.Fqdn(zone) + " 3600 IN DNSKEY " + v)
		if err == nil {
			tags = append(tags, rr.(*dns.DNSKEY).KeyTag())
		}
	}
	slices.Sort(tags)
	return tags
}

// TestKeysSecretsTheOperatorDoesNotTrust: a keys Secret whose files are not
// the zone's keys keeps the zone off a primary that has none (named would
// sign with new keys) and says which file is at fault; deleting it lets the
// zone in with new keys, copied into a Secret the operator creates. A
// Secret of that name the operator did not create is never written.
func TestKeysSecretsTheOperatorDoesNotTrust(t *testing.T) {
	c := newCluster(t, 2)
	policy := v1.BindDNSSECPolicy{ObjectMeta: metav1.ObjectMeta{Name: "csk", Namespace: c.ns}, Spec: v1.BindDNSSECPolicySpec{
		Keys: []v1.DNSSECKey{{Role: "CSK", Algorithm: "ecdsap256sha256", Lifetime: v1.DNSSECLifetimeUnlimited}},
	}}
	zone := func(name string) v1.BindZone {
		return v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns}, Spec: v1.BindZoneSpec{
			ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: v1.DomainName(name + ".test"), Type: v1.ZonePrimary,
			CatalogZoneRef:  &v1.LocalObjectReference{Name: "catalog"},
			DNSSECPolicyRef: &v1.LocalObjectReference{Name: "csk"},
		}}
	}
	forged, foreign := zone("forged"), zone("foreign")
	c.Roll([]v1.BindZone{forged, foreign}, policy)
	c.create(policy.DeepCopy())
	c.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "forged-dnssec-keys", Labels: map[string]string{v1.LabelManagedBy: v1.ManagedByValue}},
		Data: map[string][]byte{"013-00001.key": []byte("forged.test. IN DNSKEY 257 3 13 AAAA\n"), "013-00001.private": []byte("Private-key-format: v1.3\nAlgorithm: 13 (ECDSAP256SHA256)\n")}})
	c.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "foreign-dnssec-keys"}, StringData: map[string]string{"note": "someone else's"}})
	c.create(forged.DeepCopy())
	c.create(foreign.DeepCopy())

	z := c.waitZone("forged", v1.ReasonDNSSECKeysUnusable, 30*time.Second)
	g := NewWithT(t)
	g.Expect(meta.FindStatusCondition(z.Status.Conditions, v1.ConditionReady).Message).To(ContainSubstring(`the DNSSEC keys in Secret "forged-dnssec-keys" are not usable for zone forged.test: files[0]: 013+00001.key: `))
	_, served := soaRcode(c.Nodes[0].DNSAddr(), "forged.test")
	g.Expect(served).To(BeFalse(), "the primary must not serve the zone with keys of its own making")

	// Not the operator's: neither taken for the zone's keys nor written.
	c.waitZone("foreign", v1.ReasonServed, 30*time.Second)
	c.g.Eventually(func(g Gomega) {
		cond := meta.FindStatusCondition(c.zone("foreign").Status.Conditions, v1.ConditionDNSSECKeysStored)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(v1.ReasonKeysNotStored))
		g.Expect(cond.Message).To(ContainSubstring(`the Secret "foreign-dnssec-keys" exists and was not created by the operator`))
	}).WithTimeout(20 * time.Second).Should(Succeed())
	var s corev1.Secret
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "foreign-dnssec-keys"}, &s)).To(Succeed())
	g.Expect(s.Data).To(Equal(map[string][]byte{"note": []byte("someone else's")}), "a Secret the operator did not create is left as it is")
	g.Expect(s.OwnerReferences).To(BeEmpty())

	// The forged Secret goes: named makes the zone's keys, and the
	// operator keeps them in a Secret of its own.
	g.Expect(k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "forged-dnssec-keys"}})).To(Succeed())
	c.editZone("forged", func(z *v1.BindZone) { z.Annotations = map[string]string{v1.AnnotationResync: "unforged"} })
	c.waitZone("forged", v1.ReasonServed, 30*time.Second)
	c.g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: "forged-dnssec-keys"}, &s)).To(Succeed())
		g.Expect(metav1.GetControllerOf(&s)).To(HaveField("Name", "forged"))
		g.Expect(s.Data).To(HaveLen(3), "the CSK's .key, .private and .state")
	}).WithTimeout(20 * time.Second).Should(Succeed())
}
