package agent_test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
	"git.unkin.net/unkin/bind-operator/agent/validate"
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
		return sendUpdate(t, e.named.DNSAddr, zone, k, rrs...)
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

// sendUpdate sends an UPDATE of zone adding rrs, signed with k (nil:
// unsigned), and returns named's rcode.
func sendUpdate(t *testing.T, addr, zone string, k *bindtest.Key, rrs ...string) int {
	t.Helper()
	g := NewWithT(t)
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
	r, _, err := c.Exchange(m, addr)
	g.Expect(err).NotTo(HaveOccurred())
	return r.Rcode
}

// What the agent stores for each zone and view comes back: listed in
// order (zone, then view), each read back canonical with its values in
// order, unchanged, across a restart of the agent. A zone with nothing
// stored is a 404 that IsNotFound recognises; the requests are checked
// like any other.
func TestStoredOwners(t *testing.T) {
	g := NewWithT(t)
	named, statsURL := startNamed(t, bindtest.Options{})
	e := startAgent(t, named, statsURL, render.Paths{})
	// Pushed out of order, names spelled every way validate takes.
	for _, req := range []agent.OwnersRequest{
		{View: "outside", Zone: "b.test", UpdateKeys: []string{"outside-updates"}, Sets: []agent.OwnedSet{{Name: "www.b.test.", Type: "A", Values: []string{"198.51.100.1"}}}},
		{Zone: "B.Test.", UpdateKeys: []string{}, Sets: []agent.OwnedSet{{Name: "TXT.b.test.", Type: "txt", Values: []string{`"some text" "more"`, `"<b> & \\"`}}}},
		{View: "inside", Zone: "a.test", UpdateKeys: []string{"inside-updates"}, Sets: []agent.OwnedSet{{Name: "a.test", Type: "SOA"}}},
		{Zone: "a.test", UpdateKeys: []string{"Updates."}, Sets: []agent.OwnedSet{{Name: "WWW.a.test.", Type: "a", Values: []string{"192.0.2.2", "192.0.2.1"}}, {Name: "a.test", Type: "SOA"}}},
	} {
		_, err := e.client.SetOwners(ctxT(t), req)
		g.Expect(err).NotTo(HaveOccurred(), "%+v", req)
	}
	want := map[agent.ZoneRef]agent.OwnersRequest{
		{Zone: "a.test"}:                  {Zone: "a.test", UpdateKeys: []string{"updates"}, Sets: []agent.OwnedSet{{Name: "www.a.test", Type: "A", Values: []string{"192.0.2.2", "192.0.2.1"}}, {Name: "a.test", Type: "SOA"}}},
		{View: "inside", Zone: "a.test"}:  {View: "inside", Zone: "a.test", UpdateKeys: []string{"inside-updates"}, Sets: []agent.OwnedSet{{Name: "a.test", Type: "SOA"}}},
		{Zone: "b.test"}:                  {Zone: "b.test", UpdateKeys: []string{}, Sets: []agent.OwnedSet{{Name: "txt.b.test", Type: "TXT", Values: []string{`"some text" "more"`, `"<b> & \\"`}}}},
		{View: "outside", Zone: "b.test"}: {View: "outside", Zone: "b.test", UpdateKeys: []string{"outside-updates"}, Sets: []agent.OwnedSet{{Name: "www.b.test", Type: "A", Values: []string{"198.51.100.1"}}}},
	}
	check := func(e *env) {
		t.Helper()
		refs, err := e.client.StoredOwnersList(ctxT(t), validate.Replies)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(refs).To(Equal([]agent.ZoneRef{{Zone: "a.test"}, {View: "inside", Zone: "a.test"}, {Zone: "b.test"}, {View: "outside", Zone: "b.test"}}))
		for ref, w := range want {
			got, err := e.client.StoredOwners(ctxT(t), ref, validate.Replies)
			g.Expect(err).NotTo(HaveOccurred(), "%+v", ref)
			g.Expect(got).To(Equal(w), "%+v", ref)
		}
		got, err := e.client.StoredOwners(ctxT(t), agent.ZoneRef{Zone: "A.TEST."}, validate.Replies)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(want[agent.ZoneRef{Zone: "a.test"}]), "the zone asked for, spelled otherwise")

		for _, ref := range []agent.ZoneRef{{Zone: "c.test"}, {View: "inside", Zone: "b.test"}, {Zone: "test"}} {
			_, err = e.client.StoredOwners(ctxT(t), ref, validate.Replies)
			g.Expect(agent.IsNotFound(err)).To(BeTrue(), "%+v: %v", ref, err)
		}
		g.Expect(err).To(MatchError("agent: 404: no owners stored for zone test"))
		_, err = e.client.StoredOwners(ctxT(t), agent.ZoneRef{View: "inside", Zone: "c.test"}, validate.Replies)
		g.Expect(err).To(MatchError("agent: 404: no owners stored for zone c.test IN inside"))
	}
	check(e)

	// A later push replaces the earlier one whole, values included.
	_, err := e.client.SetOwners(ctxT(t), agent.OwnersRequest{Zone: "a.test", UpdateKeys: []string{"updates"}, Sets: []agent.OwnedSet{{Name: "www.a.test", Type: "A", Values: []string{"192.0.2.3"}}}})
	g.Expect(err).NotTo(HaveOccurred())
	want[agent.ZoneRef{Zone: "a.test"}] = agent.OwnersRequest{Zone: "a.test", UpdateKeys: []string{"updates"}, Sets: []agent.OwnedSet{{Name: "www.a.test", Type: "A", Values: []string{"192.0.2.3"}}}}
	check(e)

	// Kept on the volume: a new agent gives back the same.
	e.stop()
	e = startAgent(t, named, statsURL, e.paths)
	check(e)

	// The requests are checked, by the client and by the agent.
	_, err = e.client.StoredOwners(ctxT(t), agent.ZoneRef{Zone: "../a.test"}, validate.Replies)
	g.Expect(err).To(MatchError(ContainSubstring("zone: name")))
	raw := e.rawClient(t)
	for _, c := range []struct {
		path, body string
		status     int
	}{
		{agent.PathOwnersGet, `{"zone":"../a.test"}`, http.StatusUnprocessableEntity},
		{agent.PathOwnersGet, `{"zone":"a.test","view":"In side"}`, http.StatusUnprocessableEntity},
		{agent.PathOwnersGet, `{"zone":"a.test","sets":[]}`, http.StatusBadRequest},
		{agent.PathOwnersGet, ``, http.StatusBadRequest},
		{agent.PathOwnersList, `{"zone":"a.test"}`, http.StatusBadRequest},
		{agent.PathOwnersList, `{}` + strings.Repeat(" ", 100), http.StatusRequestEntityTooLarge},
		{agent.PathOwnersList, ``, http.StatusBadRequest},
	} {
		resp, err := raw.Post("https://"+e.apiAddr+c.path, "application/json", bytes.NewReader([]byte(c.body)))
		g.Expect(err).NotTo(HaveOccurred())
		resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(c.status), "%s %q", c.path, c.body)
	}
}

// A zone stored with no update keys is only a record for the operator: an
// UPDATE signed with any key is judged exactly as if nothing were stored
// for it. Under a guarded parent, the parent decides; alone, the agent
// knows no zone for the signer and named refuses, as before any push.
func TestKeylessOwnersJudgeNothing(t *testing.T) {
	op, upd := bindtest.NewKey("operator", "hmac-sha256"), bindtest.NewKey("updates", "hmac-sha256")
	e := startEnv(t, bindtest.Options{Keys: []bindtest.Key{op, upd}})
	g := NewWithT(t)
	for _, zone := range []string{"parent.test", "lonely.test"} {
		_, err := e.client.EnsureZone(ctxT(t), e.primary("", zone, fmt.Sprintf(`update-policy { grant "operator" zonesub "ANY"; grant "local:%s" external "%s." "ANY"; }; `, render.OwnersSocketName, zone)))
		g.Expect(err).NotTo(HaveOccurred())
	}
	update := func(zone string, rrs ...string) int {
		t.Helper()
		return sendUpdate(t, e.named.DNSAddr, zone, &upd, rrs...)
	}
	set := func(zone string, keys []string, sets ...agent.OwnedSet) {
		t.Helper()
		_, err := e.client.SetOwners(ctxT(t), agent.OwnersRequest{Zone: zone, UpdateKeys: keys, Sets: sets})
		g.Expect(err).NotTo(HaveOccurred())
	}
	x1 := agent.OwnedSet{Name: "x1.sub.parent.test", Type: "A", Values: []string{"198.18.0.1"}}
	x2 := agent.OwnedSet{Name: "x2.sub.parent.test", Type: "A"}

	set("parent.test", []string{"updates"}, agent.OwnedSet{Name: "www.parent.test", Type: "A"})
	g.Expect(update("parent.test", "x1.sub.parent.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeSuccess), "no entry for sub.parent.test: the parent grants")
	set("sub.parent.test", nil, x1, x2)
	g.Expect(update("parent.test", "x1.sub.parent.test. 60 IN A 198.18.0.2")).To(Equal(dns.RcodeSuccess), "a keyless entry: the parent still grants")
	g.Expect(update("parent.test", "x2.sub.parent.test. 60 IN A 198.18.0.2")).To(Equal(dns.RcodeSuccess))
	g.Expect(update("parent.test", "www.parent.test. 60 IN A 198.18.0.2")).To(Equal(dns.RcodeRefused), "and still refuses what it owns")
	// Had the entry the signer's key, it would decide: it is the entry's
	// keys, not its presence, that make a zone judge.
	set("sub.parent.test", []string{"updates"}, x1, x2)
	g.Expect(update("parent.test", "x1.sub.parent.test. 60 IN A 198.18.0.3")).To(Equal(dns.RcodeRefused))
	set("sub.parent.test", []string{}, x1, x2)
	g.Expect(update("parent.test", "x1.sub.parent.test. 60 IN A 198.18.0.3")).To(Equal(dns.RcodeSuccess))

	g.Expect(update("lonely.test", "a.lonely.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeRefused), "no entry: the agent fails closed")
	set("lonely.test", nil, agent.OwnedSet{Name: "a.lonely.test", Type: "A", Values: []string{"198.18.0.1"}})
	g.Expect(update("lonely.test", "a.lonely.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeRefused), "a keyless entry: as if none")
	g.Expect(update("lonely.test", "b.lonely.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeRefused), "a keyless entry: as if none")
	g.Expect(sendUpdate(t, e.named.DNSAddr, "lonely.test", &op, "a.lonely.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeSuccess), "the operator's key is named's to grant")

	// Stored and listed all the same: the operator reads it back.
	refs, err := e.client.StoredOwnersList(ctxT(t), validate.Replies)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refs).To(Equal([]agent.ZoneRef{{Zone: "lonely.test"}, {Zone: "parent.test"}, {Zone: "sub.parent.test"}}))
	got, err := e.client.StoredOwners(ctxT(t), agent.ZoneRef{Zone: "lonely.test"}, validate.Replies)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.UpdateKeys).To(BeEmpty())
	g.Expect(got.Sets).To(Equal([]agent.OwnedSet{{Name: "a.lonely.test", Type: "A", Values: []string{"198.18.0.1"}}}))
}

// The client checks a zone's stored owners with the agent's own
// validation (agent/validate, linked here through the agent server): a
// reply for another zone or view, or one the agent would not have
// stored, is refused.
func TestStoredOwnersHostileReply(t *testing.T) {
	g := NewWithT(t)
	var body string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(body)) }))
	t.Cleanup(srv.Close)
	c, err := agent.NewClient(agent.ClientConfig{Address: strings.TrimPrefix(srv.URL, "https://"), TLS: srv.Client().Transport.(*http.Transport).TLSClientConfig})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Close)
	for _, c2 := range []struct{ body, msg string }{
		{`{"zone":"b.test","updateKeys":[],"sets":[]}`, "asked for the owners of zone a.test, got those of zone b.test"},
		{`{"view":"inside","zone":"a.test","updateKeys":[],"sets":[]}`, "got those of zone a.test in view inside"},
		{`{"zone":"a.test","updateKeys":[],"sets":[{"name":"www.b.test","type":"A"}]}`, "is outside the zone"},
		{`{"zone":"a.test","updateKeys":[],"sets":[{"name":"www.a.test","type":"TXT","values":["\u001b[31m"]}]}`, "control character 0x1b"},
		{`{"zone":"../a.test","updateKeys":[],"sets":[]}`, "zone: name"},
	} {
		body = c2.body
		_, err := c.StoredOwners(ctxT(t), agent.ZoneRef{Zone: "a.test"}, validate.Replies)
		g.Expect(errors.Is(err, agent.ErrBadReply)).To(BeTrue(), "%s: %v", c2.body, err)
		g.Expect(err).To(MatchError(ContainSubstring(c2.msg)), c2.body)
	}
	body = `{"zones":[{"zone":"a.test"},{"zone":"../b.test"}]}`
	_, err = c.StoredOwnersList(ctxT(t), validate.Replies)
	g.Expect(errors.Is(err, agent.ErrBadReply)).To(BeTrue(), "%v", err)
	body = `{"zone":"a.test","updateKeys":[],"sets":[{"name":"www.a.test","type":"TXT","values":["\"ok\""]}]}`
	got, err := c.StoredOwners(ctxT(t), agent.ZoneRef{Zone: "a.test"}, validate.Replies)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Sets[0].Values).To(Equal([]string{`"ok"`}))
}
