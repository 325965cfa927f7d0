package dataplane

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "git.unkin.net/unkin/bind-operator/api/v1alpha1"
	"git.unkin.net/unkin/bind-operator/records"
)

// TestSignedZoneShowsItsDSAndValidates (issue 13 item 3, in part): a zone a
// BindDNSSECPolicy signs reports in status.dnssec.ds the DS record its
// parent needs, equal to the DS of the key-signing key the primary
// publishes; and an answer from the primary and from every secondary
// carries an RRSIG that verifies with that key.
func TestSignedZoneShowsItsDSAndValidates(t *testing.T) {
	c := newCluster(t, 2)
	policy := v1.BindDNSSECPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fast", Namespace: c.ns}, Spec: v1.BindDNSSECPolicySpec{
		Keys: []v1.DNSSECKey{{Role: "CSK", Algorithm: "ecdsap256sha256", Lifetime: v1.DNSSECLifetimeUnlimited}},
	}}
	zone := v1.BindZone{ObjectMeta: metav1.ObjectMeta{Name: "signed", Namespace: c.ns}, Spec: v1.BindZoneSpec{
		ClusterRef: v1.LocalObjectReference{Name: c.name}, ZoneName: "signed.test", Type: v1.ZonePrimary,
		CatalogZoneRef:  &v1.LocalObjectReference{Name: "catalog"},
		DNSSECPolicyRef: &v1.LocalObjectReference{Name: "fast"},
		Records:         []v1.RecordSet{{Name: "www", Type: "A", Values: []string{"192.0.2.7"}}},
	}}
	// dnssec-policy statements live in named.conf.
	c.Roll([]v1.BindZone{zone}, policy)
	c.create(policy.DeepCopy())
	c.create(zone.DeepCopy())
	c.waitZone("signed", v1.ReasonServed, 30*time.Second)

	primary := c.Nodes[0]
	var key *dns.DNSKEY
	c.g.Eventually(func(g Gomega) {
		key = nil
		for _, v := range served(primary.DNSAddr(), "signed.test", dns.TypeDNSKEY) {
			rr, err := dns.NewRR(fmt.Sprintf("signed.test. 3600 IN DNSKEY %s", v))
			g.Expect(err).NotTo(HaveOccurred())
			if k := rr.(*dns.DNSKEY); k.Flags&dns.SEP != 0 {
				key = k
			}
		}
		g.Expect(key).NotTo(BeNil(), "a key-signing key published by the primary")
		z := c.zone("signed")
		g.Expect(z.Status.DNSSEC).NotTo(BeNil())
		g.Expect(z.Status.DNSSEC.DS).To(Equal([]string{records.Rdata(key.ToDS(dns.SHA256))}))
	}).WithTimeout(30*time.Second).Should(Succeed(), "status.dnssec.ds to hold the DS of the primary's key")
	t.Logf("status.dnssec.ds: %v", c.zone("signed").Status.DNSSEC.DS)

	for _, n := range c.Nodes {
		c.g.Eventually(func(g Gomega) {
			m := new(dns.Msg)
			m.SetQuestion("www.signed.test.", dns.TypeA)
			m.SetEdns0(4096, true)
			m.RecursionDesired = false
			in, _, err := (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(m, n.DNSAddr())
			g.Expect(err).NotTo(HaveOccurred())
			var set []dns.RR
			var sig *dns.RRSIG
			for _, rr := range in.Answer {
				switch r := rr.(type) {
				case *dns.A:
					set = append(set, r)
				case *dns.RRSIG:
					if r.TypeCovered == dns.TypeA && r.KeyTag == key.KeyTag() {
						sig = r
					}
				}
			}
			g.Expect(set).To(HaveLen(1), "www A from %s", n.Name)
			g.Expect(sig).NotTo(BeNil(), "an RRSIG by key %d from %s: %s", key.KeyTag(), n.Name, strings.ReplaceAll(in.String(), "\n", " | "))
			g.Expect(sig.Verify(key, set)).To(Succeed(), "the RRSIG from %s verifies with the DS'd key", n.Name)
			g.Expect(sig.ValidityPeriod(time.Now())).To(BeTrue())
		}).WithTimeout(30*time.Second).Should(Succeed(), "%s to serve a signed answer that validates", n.Name)
	}
}
