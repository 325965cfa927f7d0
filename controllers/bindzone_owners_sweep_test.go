package controllers

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"git.unkin.net/unkin/bind-operator/agent"
)

// agentAt is an agent client for an HTTPS server answering with h.
func agentAt(t *testing.T, h http.HandlerFunc) *agent.Client {
	t.Helper()
	g := NewWithT(t)
	ca, err := agent.NewCA("test", 0)
	g.Expect(err).NotTo(HaveOccurred())
	srv, err := agent.IssueServer(ca, 0)
	g.Expect(err).NotTo(HaveOccurred())
	op, err := agent.IssueClient(ca, "bind-operator", 0)
	g.Expect(err).NotTo(HaveOccurred())
	cert, err := tls.X509KeyPair(srv.CertPEM, srv.KeyPEM)
	g.Expect(err).NotTo(HaveOccurred())
	s := httptest.NewUnstartedServer(h)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}
	s.StartTLS()
	t.Cleanup(s.Close)
	c, err := agent.NewClient(agent.ClientConfig{Address: strings.TrimPrefix(s.URL, "https://"), CAPEM: ca.CertPEM, CertPEM: op.CertPEM, KeyPEM: op.KeyPEM, Timeout: 5 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

// TestStoredOwnersAskEachAgentOnce: which zones an agent stores owners
// for is asked once per agent, and an agent of an earlier release (404:
// it does not know the path) is marked legacy, so it gets no sweep and no
// owners without keys, instead of failing every push.
func TestStoredOwnersAskEachAgentOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var asked atomic.Int32
	current := agentAt(t, func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		g.Expect(r.URL.Path).To(Equal(agent.PathOwnersList))
		_, _ = w.Write([]byte(`{"zones":[{"zone":"a.test"},{"view":"inside","zone":"a.test"}]}`))
	})
	earlier := agentAt(t, func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.NotFound(w, r)
	})
	var s storedOwners
	for range 2 {
		z, err := s.zones(ctx, current, "ns/dns|198.18.0.10:8443")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(z.legacy).To(BeFalse())
		g.Expect(z.has(agent.ZoneRef{Zone: "a.test"})).To(BeTrue())
		g.Expect(z.has(agent.ZoneRef{View: "inside", Zone: "a.test"})).To(BeTrue())
		g.Expect(z.has(agent.ZoneRef{Zone: "b.test"})).To(BeFalse())

		z, err = s.zones(ctx, earlier, "ns/old|198.18.0.11:8443")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(z.legacy).To(BeTrue())
		g.Expect(z.has(agent.ZoneRef{Zone: "a.test"})).To(BeFalse())
	}
	g.Expect(asked.Load()).To(Equal(int32(2)), "one question per agent")

	// An agent that cannot answer is asked again next time.
	failing := agentAt(t, func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) })
	_, err := s.zones(ctx, failing, "ns/busy|198.18.0.12:8443")
	g.Expect(err).To(HaveOccurred())
	g.Expect(s.byAgent).NotTo(HaveKey("ns/busy|198.18.0.12:8443"))
}

// TestOwnersForAnEarlierAgentCarryNoValues: an agent of an earlier release
// refuses fields it does not know, so what it is sent has no values, and
// the request the operator keeps is not changed by that.
func TestOwnersForAnEarlierAgentCarryNoValues(t *testing.T) {
	g := NewWithT(t)
	req := agent.OwnersRequest{Zone: "a.test", UpdateKeys: []string{"upd"}, Sets: []agent.OwnedSet{
		{Name: "a.test", Type: "SOA"}, {Name: "www.a.test", Type: "A", Values: []string{"192.0.2.1"}},
	}}
	g.Expect(withoutValues(req).Sets).To(Equal([]agent.OwnedSet{{Name: "a.test", Type: "SOA"}, {Name: "www.a.test", Type: "A"}}))
	g.Expect(req.Sets[1].Values).To(Equal([]string{"192.0.2.1"}))
	g.Expect(hasRecordValues(req)).To(BeTrue())
	g.Expect(hasRecordValues(withoutValues(req))).To(BeFalse())
}
