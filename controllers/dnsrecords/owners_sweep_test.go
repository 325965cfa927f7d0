package dnsrecords

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
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

// listingAgent is an agent that answers the owners list with zones (the
// reply's JSON) and counts the questions in asked; a non-nil hold keeps
// each answer back until it is closed.
func listingAgent(t *testing.T, asked *atomic.Int32, zones string, hold <-chan struct{}) *agent.Client {
	return agentAt(t, func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		if r.URL.Path != agent.PathOwnersList {
			t.Errorf("asked %s, want %s", r.URL.Path, agent.PathOwnersList)
		}
		if hold != nil {
			<-hold
		}
		_, _ = w.Write([]byte(`{"zones":` + zones + `}`))
	})
}

// TestStoredOwnersAskEachAgentOnce: which zones an agent stores owners
// for is asked once per agent, and an agent of an earlier release (404:
// it does not know the path) is marked legacy, so it gets no sweep and no
// owners without keys, instead of failing every push.
func TestStoredOwnersAskEachAgentOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var asked atomic.Int32
	current := listingAgent(t, &asked, `[{"zone":"a.test"},{"view":"inside","zone":"a.test"}]`, nil)
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
	var busy atomic.Int32
	failing := agentAt(t, func(w http.ResponseWriter, _ *http.Request) {
		busy.Add(1)
		http.Error(w, "busy", http.StatusServiceUnavailable)
	})
	for range 2 {
		_, err := s.zones(ctx, failing, "ns/busy|198.18.0.12:8443")
		g.Expect(err).To(HaveOccurred())
	}
	g.Expect(busy.Load()).To(Equal(int32(2)), "a failed question is not an answer")
}

// TestStoredOwnersAskOnceUnderConcurrentPushes: the zones of one cluster
// push at once after an operator starts; they ask the agent one question
// between them, the others waiting for its answer.
func TestStoredOwnersAskOnceUnderConcurrentPushes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const pushes = 16
	var asked atomic.Int32
	release := make(chan struct{})
	// Every push has started before the first answer.
	ac := listingAgent(t, &asked, `[{"zone":"a.test"}]`, release)
	var s storedOwners
	var started, done sync.WaitGroup
	errs := make(chan error, pushes)
	for range pushes {
		started.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			started.Done()
			z, err := s.zones(ctx, ac, "ns/dns|198.18.0.10:8443")
			if err == nil && !z.has(agent.ZoneRef{Zone: "a.test"}) {
				err = fmt.Errorf("answer without a.test: %v", z.refs)
			}
			errs <- err
		}()
	}
	started.Wait()
	close(release)
	done.Wait()
	close(errs)
	for err := range errs {
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(asked.Load()).To(Equal(int32(1)))
}

// TestStoredOwnersForgetPastPrimaries: every roll gives the primary a new
// address, and the answers of addresses nobody asked for in
// AgentClientIdle go, so the cache holds the live primaries only; a live
// one is not asked again.
func TestStoredOwnersForgetPastPrimaries(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var asked atomic.Int32
	ac := listingAgent(t, &asked, `[{"zone":"a.test"}]`, nil)
	now := time.Unix(1000, 0)
	s := storedOwners{now: func() time.Time { return now }}
	for roll := range 100 {
		now = now.Add(time.Hour) // one roll an hour: each address is idle by the next
		_, err := s.zones(ctx, ac, fmt.Sprintf("ns/dns|198.18.1.%d:8443", roll))
		g.Expect(err).NotTo(HaveOccurred())
		_, err = s.zones(ctx, ac, "ns/live|198.18.0.10:8443")
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(s.byAgent.Len()).To(Equal(2), "the last primary and the live one")
	g.Expect(asked.Load()).To(Equal(int32(100+100)), "the live agent idles an hour between questions here, so it is asked each time")

	asked.Store(0)
	for range 60 {
		now = now.Add(time.Minute)
		_, err := s.zones(ctx, ac, "ns/live|198.18.0.11:8443")
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(asked.Load()).To(Equal(int32(1)), "an agent asked every minute for an hour is asked once")
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
