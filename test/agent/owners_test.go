package agent_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/internal/bindtest"
	"git.unkin.net/unkin/bind-operator/render"
)

// A zone whose update-policy defers to the agent (render's clause for a
// zone with an update key): UPDATEs signed with the operator's key change
// anything; the update key's are refused by named with REFUSED on the
// record sets the operator owns, whole, and applied elsewhere; a key the
// agent was not told about, and an unsigned UPDATE, are refused.
func TestOwnedRecordSetsRefuseUpdates(t *testing.T) {
	op, upd, stranger := bindtest.NewKey("operator", "hmac-sha256"), bindtest.NewKey("updates", "hmac-sha256"), bindtest.NewKey("stranger", "hmac-sha256")
	e := startEnv(t, bindtest.Options{Keys: []bindtest.Key{op, upd, stranger}})
	g := NewWithT(t)
	const zone = "owned.test"
	req := e.primary("", zone, fmt.Sprintf(`update-policy { grant "operator" zonesub "ANY"; grant "local:%s" external "%s." "ANY"; }; `, render.OwnersSocketName, zone))
	res, err := e.client.EnsureZone(ctxT(t), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(agent.ActionAdded))
	res, err = e.client.EnsureZone(ctxT(t), req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Action).To(Equal(agent.ActionUnchanged), "named's showzone spells the update-policy the way the clause does")

	update := func(k *bindtest.Key, rrs ...string) int {
		t.Helper()
		m := new(dns.Msg)
		m.SetUpdate(dns.Fqdn(zone))
		for _, s := range rrs {
			rr, err := dns.NewRR(s)
			g.Expect(err).NotTo(HaveOccurred())
			m.Insert([]dns.RR{rr})
		}
		c := &dns.Client{Timeout: 5 * time.Second}
		if k != nil {
			m.SetTsig(dns.Fqdn(k.Name), dns.HmacSHA256, 300, time.Now().Unix())
			c.TsigSecret = map[string]string{dns.Fqdn(k.Name): k.Secret}
		}
		r, _, err := c.Exchange(m, e.named.DNSAddr)
		g.Expect(err).NotTo(HaveOccurred())
		return r.Rcode
	}
	answer := func(name string, typ uint16) []string {
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(name), typ)
		r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, e.named.DNSAddr)
		g.Expect(err).NotTo(HaveOccurred())
		var out []string
		for _, rr := range r.Answer {
			out = append(out, rr.String())
		}
		return out
	}

	// Before the agent knows the zone's owners, the update key is refused:
	// the agent fails closed.
	g.Expect(update(&upd, "new.owned.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeRefused))

	g.Expect(update(&op, "www.owned.test. 60 IN A 198.18.0.10")).To(Equal(dns.RcodeSuccess))
	out, err := e.client.SetOwners(ctxT(t), agent.OwnersRequest{Zone: zone, UpdateKeys: []string{"updates"}, Sets: []agent.OwnedSet{
		{Name: "www.owned.test.", Type: "A"}, {Name: "owned.test.", Type: "SOA"}, {Name: "owned.test.", Type: "NS"},
	}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(agent.OwnersResult{Zone: zone, Sets: 3}))

	g.Expect(update(&upd, "www.owned.test. 60 IN A 198.18.0.66")).To(Equal(dns.RcodeRefused), "an owned set")
	g.Expect(update(&upd, "new.owned.test. 60 IN A 198.18.0.1", "www.owned.test. 60 IN A 198.18.0.66")).To(Equal(dns.RcodeRefused), "one owned record refuses the UPDATE whole")
	g.Expect(answer("new.owned.test", dns.TypeA)).To(BeEmpty())
	g.Expect(update(&upd, "owned.test. 60 IN NS ns.evil.example.")).To(Equal(dns.RcodeRefused), "the apex NS")
	g.Expect(update(&upd, "new.owned.test. 60 IN A 198.18.0.1", "www.owned.test. 60 IN AAAA 2001:db8::1")).To(Equal(dns.RcodeSuccess), "another type at an owned name is not owned")
	g.Expect(update(&stranger, "other.owned.test. 60 IN A 198.18.0.2")).To(Equal(dns.RcodeRefused), "a key the zone does not name")
	g.Expect(update(nil, "other.owned.test. 60 IN A 198.18.0.2")).To(Equal(dns.RcodeRefused), "unsigned")
	g.Expect(update(&op, "www.owned.test. 60 IN A 198.18.0.11")).To(Equal(dns.RcodeSuccess), "the operator's key changes owned sets")

	// Deleting every set at the name is judged per set that exists.
	m := new(dns.Msg)
	m.SetUpdate("owned.test.")
	m.RemoveName([]dns.RR{&dns.ANY{Hdr: dns.RR_Header{Name: "www.owned.test.", Rrtype: dns.TypeANY, Class: dns.ClassANY}}})
	m.SetTsig("updates.", dns.HmacSHA256, 300, time.Now().Unix())
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 5 * time.Second, TsigSecret: map[string]string{"updates.": upd.Secret}}).Exchange(m, e.named.DNSAddr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Rcode).To(Equal(dns.RcodeRefused), "deleting the name would delete the owned A")
	g.Expect(answer("www.owned.test", dns.TypeA)).To(ConsistOf(ContainSubstring("198.18.0.10"), ContainSubstring("198.18.0.11")))
	g.Expect(answer("www.owned.test", dns.TypeAAAA)).To(HaveLen(1))
	g.Expect(answer("new.owned.test", dns.TypeA)).To(HaveLen(1))

	// A deleted zone's owners go with it.
	_, err = e.client.DeleteZone(ctxT(t), agent.ZoneRef{Zone: zone})
	g.Expect(err).NotTo(HaveOccurred())
	// named removes a deleted zone's file (delzone -clean) after the
	// command returns, and may take the new seed with it: add the zone
	// again until it loads.
	g.Eventually(func() error {
		_, err := e.client.EnsureZone(ctxT(t), req)
		return err
	}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(update(&upd, "fresh.owned.test. 60 IN A 198.18.0.3")).To(Equal(dns.RcodeRefused), "no owners known for the new zone yet")
}
