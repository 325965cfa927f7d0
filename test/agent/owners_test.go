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
	"git.unkin.net/unkin/bind-operator/render"
	"git.unkin.net/unkin/bind-operator/test/bindtest"
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

// A zone stored with no update keys is a record for the operator: it
// grants no key anything, and it still holds its names, so a parent
// zone's key does not write into it either. Alone, the agent refuses
// every key, as before any push; the operator's key is named's to grant.
func TestKeylessOwnersGrantNothing(t *testing.T) {
	op, upd := bindtest.NewKey("operator", "hmac-sha256"), bindtest.NewKey("updates", "hmac-sha256")
	e := startEnv(t, bindtest.Options{Keys: []bindtest.Key{op, upd}})
	g := NewWithT(t)
	for _, zone := range []string{"parent.test", "lonely.test"} {
		_, err := e.client.EnsureZone(ctxT(t), e.primary("", zone, guardedPolicy(zone)))
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
	g.Expect(update("parent.test", "x1.sub.parent.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeSuccess), "no entry for sub.parent.test: the parent holds the name")
	set("sub.parent.test", nil, x1, x2)
	g.Expect(update("parent.test", "x1.sub.parent.test. 60 IN A 198.18.0.2")).To(Equal(dns.RcodeRefused), "a keyless entry holds its names: the parent's key is refused")
	g.Expect(update("parent.test", "new.sub.parent.test. 60 IN A 198.18.0.2")).To(Equal(dns.RcodeRefused), "on names it does not own too")
	g.Expect(update("parent.test", "www2.parent.test. 60 IN A 198.18.0.2")).To(Equal(dns.RcodeSuccess), "the parent's own names stay its key's")
	g.Expect(update("parent.test", "www.parent.test. 60 IN A 198.18.0.2")).To(Equal(dns.RcodeRefused), "but for what it owns")
	// With the signer among its keys, the child grants it, but for its
	// owned sets.
	set("sub.parent.test", []string{"updates"}, x1, x2)
	g.Expect(update("parent.test", "x1.sub.parent.test. 60 IN A 198.18.0.3")).To(Equal(dns.RcodeRefused))
	g.Expect(update("parent.test", "x3.sub.parent.test. 60 IN A 198.18.0.3")).To(Equal(dns.RcodeSuccess))
	set("sub.parent.test", []string{}, x1, x2)
	g.Expect(update("parent.test", "x3.sub.parent.test. 60 IN A 198.18.0.4")).To(Equal(dns.RcodeRefused))

	g.Expect(update("lonely.test", "a.lonely.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeRefused), "no entry: the agent fails closed")
	set("lonely.test", nil, agent.OwnedSet{Name: "a.lonely.test", Type: "A", Values: []string{"198.18.0.1"}})
	g.Expect(update("lonely.test", "a.lonely.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeRefused), "a keyless entry grants nothing")
	g.Expect(update("lonely.test", "b.lonely.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeRefused), "a keyless entry grants nothing")
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

// guardedPolicy is render's update-policy for a zone whose update key the
// agent judges, with "operator" as the operator's key.
func guardedPolicy(zone string) string {
	return fmt.Sprintf(`update-policy { grant "operator" zonesub "ANY"; grant "local:%s" external "%s." "ANY"; }; `, render.OwnersSocketName, zone)
}

// exchange sends an UPDATE of zone built by build, signed with k (nil:
// unsigned), over TCP, and returns named's rcode.
func exchange(t *testing.T, addr, zone string, k *bindtest.Key, build func(m *dns.Msg)) int {
	t.Helper()
	m := new(dns.Msg)
	m.SetUpdate(dns.Fqdn(zone))
	build(m)
	c := &dns.Client{Net: "tcp", Timeout: 5 * time.Second}
	if k != nil {
		m.SetTsig(dns.Fqdn(k.Name), dns.HmacSHA256, 300, time.Now().Unix())
		c.TsigSecret = map[string]string{dns.Fqdn(k.Name): k.Secret}
	}
	r, _, err := c.Exchange(m, addr)
	if err != nil {
		t.Fatalf("UPDATE %s: %v", zone, err)
	}
	return r.Rcode
}

// rr parses one record.
func rr(t *testing.T, s string) dns.RR {
	t.Helper()
	r, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// lookup is named's answer to name and type from addr, one string per
// record.
func lookup(t *testing.T, addr, name string, typ uint16) []string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), typ)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatalf("%s %s: %v", name, dns.TypeToString[typ], err)
	}
	var out []string
	for _, a := range r.Answer {
		out = append(out, a.String())
	}
	return out
}

// A zone's update key writes that zone only: zone parent.test (key
// "updates") and its child zone team.parent.test (key "team", a
// DNSRecord's api CNAME owned) on one named. The parent's key, in an
// UPDATE of the child zone (the case nsupdate "zone team.parent.test"
// sends) or of its own zone naming the child's names, cannot add a name,
// delete the owned CNAME nor delete a set nobody owns; the child's key
// writes its zone (but for the owned CNAME) and not the parent's; a child
// that also names the parent's key takes it.
func TestParentKeyStaysOutOfChildZones(t *testing.T) {
	op, upd, team, shared := bindtest.NewKey("operator", "hmac-sha256"), bindtest.NewKey("updates", "hmac-sha256"), bindtest.NewKey("team", "hmac-sha256"), bindtest.NewKey("shared", "hmac-sha256")
	e := startEnv(t, bindtest.Options{Keys: []bindtest.Key{op, upd, team, shared}})
	g := NewWithT(t)
	for _, zone := range []string{"parent.test", "team.parent.test", "shared.parent.test"} {
		_, err := e.client.EnsureZone(ctxT(t), e.primary("", zone, guardedPolicy(zone)))
		g.Expect(err).NotTo(HaveOccurred())
	}
	addr := e.named.DNSAddr
	// The operator writes the child's DNSRecord; the child's key a TXT
	// nobody owns.
	g.Expect(sendUpdate(t, addr, "team.parent.test", &op, "api.team.parent.test. 60 IN CNAME www.parent.test.")).To(Equal(dns.RcodeSuccess))
	for zone, keys := range map[string][]string{"parent.test": {"updates"}, "team.parent.test": {"team"}, "shared.parent.test": {"shared", "updates"}} {
		_, err := e.client.SetOwners(ctxT(t), agent.OwnersRequest{Zone: zone, UpdateKeys: keys, Sets: []agent.OwnedSet{
			{Name: zone, Type: "SOA"}, {Name: zone, Type: "NS"}, {Name: "api." + zone, Type: "CNAME"},
		}})
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(sendUpdate(t, addr, "team.parent.test", &team, `notes.team.parent.test. 60 IN TXT "the team's"`)).To(Equal(dns.RcodeSuccess))

	// The parent's key, in an UPDATE of the child zone.
	g.Expect(sendUpdate(t, addr, "team.parent.test", &upd, "evil.team.parent.test. 60 IN A 198.18.0.66")).To(Equal(dns.RcodeRefused), "adding a name to the child zone")
	g.Expect(exchange(t, addr, "team.parent.test", &upd, func(m *dns.Msg) {
		m.RemoveRRset([]dns.RR{rr(t, "api.team.parent.test. 0 IN CNAME .")})
	})).To(Equal(dns.RcodeRefused), "deleting the child's owned CNAME")
	g.Expect(exchange(t, addr, "team.parent.test", &upd, func(m *dns.Msg) {
		m.RemoveRRset([]dns.RR{rr(t, "notes.team.parent.test. 0 IN TXT \"\"")})
	})).To(Equal(dns.RcodeRefused), "deleting a set of the child nobody owns")
	g.Expect(exchange(t, addr, "team.parent.test", &upd, func(m *dns.Msg) {
		m.RemoveName([]dns.RR{&dns.ANY{Hdr: dns.RR_Header{Name: "notes.team.parent.test.", Rrtype: dns.TypeANY, Class: dns.ClassANY}}})
	})).To(Equal(dns.RcodeRefused), "deleting a name of the child")
	// And in an UPDATE of its own zone naming the child's names (which
	// the child's zone would hide anyway).
	g.Expect(sendUpdate(t, addr, "parent.test", &upd, "evil.team.parent.test. 60 IN A 198.18.0.66")).To(Equal(dns.RcodeRefused), "a child's name in the parent's zone")
	g.Expect(sendUpdate(t, addr, "parent.test", &upd, "www.parent.test. 60 IN A 198.18.0.1", "evil.team.parent.test. 60 IN A 198.18.0.66")).To(Equal(dns.RcodeRefused), "one such record refuses the UPDATE whole")
	g.Expect(lookup(t, addr, "www.parent.test", dns.TypeA)).To(BeEmpty())
	g.Expect(lookup(t, addr, "evil.team.parent.test", dns.TypeA)).To(BeEmpty())
	g.Expect(lookup(t, addr, "api.team.parent.test", dns.TypeCNAME)).To(ConsistOf(ContainSubstring("www.parent.test.")))
	g.Expect(lookup(t, addr, "notes.team.parent.test", dns.TypeTXT)).To(ConsistOf(ContainSubstring("the team's")))
	// Its own zone stays its own.
	g.Expect(sendUpdate(t, addr, "parent.test", &upd, "www.parent.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeSuccess))

	// The child's key: its zone, but for the owned CNAME; not the parent's.
	g.Expect(sendUpdate(t, addr, "team.parent.test", &team, "new.team.parent.test. 60 IN A 198.18.0.2")).To(Equal(dns.RcodeSuccess))
	g.Expect(exchange(t, addr, "team.parent.test", &team, func(m *dns.Msg) {
		m.RemoveRRset([]dns.RR{rr(t, "notes.team.parent.test. 0 IN TXT \"\"")})
	})).To(Equal(dns.RcodeSuccess))
	g.Expect(lookup(t, addr, "notes.team.parent.test", dns.TypeTXT)).To(BeEmpty())
	g.Expect(exchange(t, addr, "team.parent.test", &team, func(m *dns.Msg) {
		m.RemoveRRset([]dns.RR{rr(t, "api.team.parent.test. 0 IN CNAME .")})
	})).To(Equal(dns.RcodeRefused), "the owned CNAME")
	g.Expect(sendUpdate(t, addr, "parent.test", &team, "team2.parent.test. 60 IN A 198.18.0.2")).To(Equal(dns.RcodeRefused), "the parent's zone")

	// A child zone that names the parent's key among its own.
	g.Expect(sendUpdate(t, addr, "shared.parent.test", &upd, "new.shared.parent.test. 60 IN A 198.18.0.3")).To(Equal(dns.RcodeSuccess))
	g.Expect(sendUpdate(t, addr, "shared.parent.test", &shared, "other.shared.parent.test. 60 IN A 198.18.0.3")).To(Equal(dns.RcodeSuccess))
	g.Expect(sendUpdate(t, addr, "shared.parent.test", &upd, "api.shared.parent.test. 60 IN CNAME www.parent.test.")).To(Equal(dns.RcodeRefused), "its owned set")
	g.Expect(lookup(t, addr, "new.shared.parent.test", dns.TypeA)).To(HaveLen(1))

	// The child zone gone (its owners forgotten), the parent holds the
	// names again.
	_, err := e.client.DeleteZone(ctxT(t), agent.ZoneRef{Zone: "team.parent.test"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sendUpdate(t, addr, "parent.test", &upd, "later.team.parent.test. 60 IN A 198.18.0.4")).To(Equal(dns.RcodeSuccess))
}

// Update keys serve one view each, and a zone decides only in its view: a
// child zone in another view does not shield the parent's names. Zone
// parent.test in view inside (key "inside-updates") and in view outside
// (key "updates"), its child team.parent.test in view outside only.
func TestChildZoneInAnotherViewDoesNotShield(t *testing.T) {
	opIn, updIn := bindtest.NewKey("operator-inside", "hmac-sha256"), bindtest.NewKey("inside-updates", "hmac-sha256")
	op, upd, team := bindtest.NewKey("operator", "hmac-sha256"), bindtest.NewKey("updates", "hmac-sha256"), bindtest.NewKey("team", "hmac-sha256")
	e := startEnv(t, bindtest.Options{
		Keys: []bindtest.Key{opIn, updIn, op, upd, team},
		Config: `view "inside" { match-clients { key "operator-inside"; key "inside-updates"; }; };
view "outside" { match-clients { !key "operator-inside"; !key "inside-updates"; any; }; };
`,
	})
	g := NewWithT(t)
	inside := e.primary("inside", "parent.test", fmt.Sprintf(`update-policy { grant "operator-inside" zonesub "ANY"; grant "local:%s" external "parent.test." "ANY"; }; `, render.OwnersSocketName))
	for _, req := range []agent.EnsureZoneRequest{inside, e.primary("outside", "parent.test", guardedPolicy("parent.test")), e.primary("outside", "team.parent.test", guardedPolicy("team.parent.test"))} {
		_, err := e.client.EnsureZone(ctxT(t), req)
		g.Expect(err).NotTo(HaveOccurred(), "%s in %s", req.Zone, req.View)
	}
	for _, req := range []agent.OwnersRequest{
		{View: "inside", Zone: "parent.test", UpdateKeys: []string{"inside-updates"}, Sets: []agent.OwnedSet{{Name: "www.parent.test", Type: "A"}}},
		{View: "outside", Zone: "parent.test", UpdateKeys: []string{"updates"}},
		{View: "outside", Zone: "team.parent.test", UpdateKeys: []string{"team"}},
	} {
		_, err := e.client.SetOwners(ctxT(t), req)
		g.Expect(err).NotTo(HaveOccurred())
	}
	addr := e.named.DNSAddr
	g.Expect(sendUpdate(t, addr, "parent.test", &updIn, "api.team.parent.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeSuccess), "inside, the parent holds the name")
	g.Expect(sendUpdate(t, addr, "parent.test", &updIn, "www.parent.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeRefused), "but for its owned set")
	g.Expect(sendUpdate(t, addr, "parent.test", &upd, "api.team.parent.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeRefused), "outside, the child zone does")
	g.Expect(sendUpdate(t, addr, "team.parent.test", &upd, "api.team.parent.test. 60 IN A 198.18.0.1")).To(Equal(dns.RcodeRefused))
	g.Expect(sendUpdate(t, addr, "team.parent.test", &team, "api.team.parent.test. 60 IN A 198.18.0.2")).To(Equal(dns.RcodeSuccess))
	g.Expect(sendUpdate(t, addr, "parent.test", &upd, "www.parent.test. 60 IN A 198.18.0.3")).To(Equal(dns.RcodeSuccess), "not owned outside")
	// Each landed in its view: unsigned queries are the outside view's,
	// those signed with the inside key the inside view's.
	g.Expect(lookup(t, addr, "api.team.parent.test", dns.TypeA)).To(ConsistOf(ContainSubstring("198.18.0.2")))
	m := new(dns.Msg)
	m.SetQuestion("api.team.parent.test.", dns.TypeA)
	m.SetTsig(dns.Fqdn(updIn.Name), dns.HmacSHA256, 300, time.Now().Unix())
	r, _, err := (&dns.Client{Timeout: 2 * time.Second, TsigSecret: map[string]string{dns.Fqdn(updIn.Name): updIn.Secret}}).Exchange(m, addr)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Answer).To(ConsistOf(WithTransform(func(a dns.RR) string { return a.String() }, ContainSubstring("198.18.0.1"))))
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
